"""--spares and a new root under the faults an attacker would pick
(docs/control-plane.md, "A new root"): a hang with a spare standing by, a
second takeover, an old root that comes back after the job moved on, a
frozen old root that still holds its log files, the root and its heir
lost together. Shims started side by side, as srun without
--kill-on-bad-exit or a container per node leaves them (only the control
plane ends the job), one rank each unless a test says otherwise."""
import functools
import json
import os
import re
import signal
import tempfile
import unittest

from harness import (CKPT, PYTHON, SHIM, clean_env, free_port, kill_group, main, run,
                     signal_all, slurp, spawn, wait_for)
from test_spares import descendants, final_weights, kill_all

# A rank that prints once, then hangs.
QUIET_HANG = "import time; print('hello', flush=True); time.sleep(600)"


def undisturbed(ranks, stops=(), **env):
    """The final weights of an undisturbed run of `ranks` ranks; with
    `stops`, one stopped after each of those epochs and resumed from its
    checkpoint (a job taken over resumes where its last checkpoint was: its
    weights are those of a run resumed there, which are not always an
    unbroken run's: with Debian's torch 1.13 a run resumed at epoch 51 of
    100 ends with other weights than one resumed at 52, or one never
    stopped, on one node and without any fault)."""
    env.setdefault("EPOCH_S", "0")  # (the weights do not depend on it)
    with tempfile.TemporaryDirectory() as tmp:
        for stop in list(stops) + [None]:
            leg = dict(env, EPOCHS=str(stop)) if stop is not None else env
            r = run([SHIM, "--nproc-per-node", str(ranks), "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=tmp, FAIL_RANK="-1", MASTER_PORT=free_port(), **leg),
                    timeout=300)
            if r.returncode != 0 or not final_weights(r.stdout):
                raise AssertionError("the undisturbed run failed:\n" + r.stdout + r.stderr)
    return final_weights(r.stdout)


RESUMED = re.compile(r"^(?:\[rank 0\] )?rank 0 resumed at epoch (\d+)$", re.M)


@functools.lru_cache(maxsize=None)
def weights_of(ranks, epochs, stops=()):
    """undisturbed(), once per file and arguments."""
    return undisturbed(ranks, stops=stops, EPOCHS=epochs)


def assert_resumed_weights(test, outs, ranks, epochs, text):
    """The last attempt's rank 0 printed the weights of an undisturbed run
    of `ranks` ranks and `epochs` epochs resumed where the job's attempts
    resumed (as each rank 0 said; none: never stopped)."""
    stops = tuple(sorted(int(e) for o in outs for e in RESUMED.findall(o)))
    test.assertEqual([final_weights(o) for o in outs if final_weights(o)],
                     [weights_of(ranks, str(epochs), stops)], text)


def assert_no_record(test, log_dir):
    """`log_dir` holds no record of a failed job: no failure.json, or the
    word of the root that ended the job well (after a takeover the new root
    writes it, in its newer term, so that an old root's cannot stand)."""
    path = os.path.join(log_dir, "failure.json")
    if os.path.exists(path):
        record = json.loads(slurp(path))
        test.assertEqual(record.get("exit_code"), 0, record)
        test.assertEqual(record.get("outcome"), "the job ended well", record)
        test.assertTrue(record.get("holder"), record)


def assert_ended_well_in_term(test, log_dir, term):
    """A shared `log_dir`'s failure.json is the word of the root of `term`
    that the job ended well."""
    record = json.loads(slurp(os.path.join(log_dir, "failure.json")))
    test.assertEqual((record["exit_code"], record["term"], record["holder"]), (0, term, True),
                     record)


def assert_own_word(test, log_dir, shim, said):
    """The shim that lost the job wrote its word into its own node's file
    (failure.shim-K.json), not the job's: 125, `said` in it, no holder."""
    record = json.loads(slurp(os.path.join(log_dir, f"failure.shim-{shim}.json")))
    test.assertEqual((record["exit_code"], record["holder"]), (125, False), record)
    test.assertIn(said, record["error"])


def heir_of(errs):
    """The shim whose stderr says it took the job, or None."""
    for i, e in enumerate(errs):
        if "takes the job as its root" in e:
            return i
    return None


class SideBySide:
    """Shims started side by side (RANK, WORLD_SIZE, MASTER_ADDR as a pod
    gets them), each with its output in files (a mixin of unittest cases)."""

    def start(self, tmp, args, command, shims=3, per_node=1, env=None):
        port = free_port()
        procs = []
        for rank in range(shims):
            e = clean_env(RANK=rank, WORLD_SIZE=shims, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                          CKPT_DIR=tmp, FAIL_RANK="-1", **(env or {}))
            out = open(f"{tmp}/shim-{rank}.out", "w")
            err = open(f"{tmp}/shim-{rank}.err", "w")
            own = [a.replace("{shim}", str(rank)) for a in args]  # a shim's own folder
            procs.append(spawn([SHIM, "--nproc-per-node", str(per_node), *own, "--", *command],
                               env=e, stdout=out, stderr=err))
            self.addCleanup(kill_group, procs[-1])
            self.addCleanup(out.close)
            self.addCleanup(err.close)
        return procs

    def outputs(self, tmp, shims):
        return ([slurp(f"{tmp}/shim-{i}.out") for i in range(shims)],
                [slurp(f"{tmp}/shim-{i}.err") for i in range(shims)])


class NewRoot(SideBySide, unittest.TestCase):
    def test_a_hang_keeps_the_spare(self):
        # At the roll-call the spare, which runs no ranks, reports none (it
        # crashed reading a rank it never started, was counted lost and
        # retired: a hang cost the job its spare).
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, ["--spares", "1", "--max-restarts", "1", "--hang-timeout",
                                     "5", "--log-dir", f"{tmp}/logs"],
                               [PYTHON, "-c", QUIET_HANG])
            codes = [p.wait(timeout=120) for p in procs]
            outs, errs = self.outputs(tmp, 3)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [124, 124, 124], text)
            self.assertNotIn("lost rank 2's shim", text)
            self.assertIn("aml-shim: restart 1 of 1 after the job was hung", errs[2])
            record = json.loads(slurp(f"{tmp}/logs/failure.json"))
            self.assertEqual([a["exit_code"] for a in record["attempts"]], [124, 124], record)
            self.assertNotIn("retired", record)
            self.assertEqual(sorted(g for grp in record["hang"]["groups"] for g in grp["ranks"]),
                             [0, 1], record)

    def test_a_second_takeover(self):
        # Five nodes, two spares: rank 0's shim is killed and its heir takes
        # the job; then that new root is killed: its own heir (it names one
        # as rank 0's shim did, from where its children listen) takes the
        # job again, and the job ends with the undisturbed weights (every
        # survivor exited 125, "lost the control plane", when a new root
        # named no heir).
        epochs = "40"
        weights_of(3, epochs)  # before the job
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, ["--spares", "2", "--max-restarts", "3", "--log-dir",
                                     f"{tmp}/logs"], [PYTHON, CKPT], shims=5,
                               env={"EPOCHS": epochs})
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"), 180),
                            "\n".join(sum(self.outputs(tmp, 5), [])))
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(timeout=30)
            self.assertTrue(wait_for(lambda: heir_of(self.outputs(tmp, 5)[1]) is not None, 120),
                            "\n".join(sum(self.outputs(tmp, 5), [])))
            first = heir_of(self.outputs(tmp, 5)[1])
            # The next attempt trains: then its root is lost too.
            self.assertTrue(wait_for(lambda: "resumed at epoch" in "".join(
                self.outputs(tmp, 5)[0]), 180), "\n".join(sum(self.outputs(tmp, 5), [])))
            procs[first].send_signal(signal.SIGKILL)
            procs[first].wait(timeout=30)
            rest = [i for i in range(1, 5) if i != first]
            codes = [procs[i].wait(timeout=300) for i in rest]
            outs, errs = self.outputs(tmp, 5)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [0, 0, 0], text)
            second = [i for i in rest if "takes the job as its root" in errs[i]]
            self.assertEqual(len(second), 1, text)
            # (A SIGKILLed shim's socket closes, or resets when what was
            # sent to it was still unread: both are its loss.)
            self.assertRegex(errs[second[0]], rf"aml-shim: rank {first}'s shim on \S+ was lost "
                                              rf"\(the control plane lost rank {first}'s shim "
                                              rf"\((closed|Connection reset by peer)\)\); rank "
                                              rf"\d's shim on \S+ takes the job as its root: 3 of 5 "
                                              rf"shims reached it")
            assert_resumed_weights(self, outs, 3, epochs, text)
            self.assertNotIn("LEFTOVER", text)

    def test_a_frozen_root_comes_back_after_the_job_moved_on(self):
        # Rank 0's shim, its keeper and its ranks stop (SIGSTOP: a node
        # stalled by its kernel or a hypervisor). Its children find it
        # silent, link to its heir, and the heir takes the job with 4 of 5
        # shims; the spare takes NODE_RANK 0 and rank 0's log file, which
        # the frozen shim still locks. The job ends well. Then the old root
        # wakes: it reads that every child left it, has no majority, and
        # ends its part (125) without writing what would read as the job's
        # verdict (it wrote "no spare left" and retired healthy nodes into
        # failure.json, and rank 0's new output was not logged).
        # Frozen once the job is steady (epoch 40): every link's allowance is
        # back to its 5 s by then, so every child finds the root silent
        # within the same beat as the heir. Frozen during the start-up's load
        # (a link that once waited 6 s for a beat is given 24 s), a child can
        # find it silent long before the heir, which stops it at once (the
        # limit docs/control-plane.md states), and one spare is too few.
        epochs = "100"
        weights_of(4, epochs)  # before the job
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, ["--spares", "1", "--max-restarts", "2", "--log-dir",
                                     f"{tmp}/logs"], [PYTHON, CKPT], shims=5,
                               env={"EPOCHS": epochs})
            self.assertTrue(wait_for(lambda: "epoch 40 saved" in slurp(f"{tmp}/shim-1.out"), 240),
                            "\n".join(sum(self.outputs(tmp, 5), [])))
            frozen = [procs[0].pid] + descendants(procs[0].pid)
            self.addCleanup(kill_all, frozen)
            signal_all(frozen, signal.SIGSTOP)
            codes = [procs[i].wait(timeout=400) for i in range(1, 5)]
            outs, errs = self.outputs(tmp, 5)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [0, 0, 0, 0], text)
            assert_resumed_weights(self, outs, 4, epochs, text)
            # The new root's word: the job ended well, in its term (2).
            assert_ended_well_in_term(self, f"{tmp}/logs", 2)
            # The spare's rank 0 is logged after what the frozen node wrote.
            self.assertRegex(slurp(f"{tmp}/logs/rank-0.stdout"),
                             r"rank 0 epoch 1 saved(.|\n)*rank 0 resumed at epoch")
            signal_all(frozen, signal.SIGCONT)
            self.assertEqual(procs[0].wait(timeout=120), 125)
            err0 = slurp(f"{tmp}/shim-0.err")
            self.assertIn("no majority", err0)
            self.assertIn("writes no record", err0)
            self.assertNotIn("no spare left", err0)
            self.assertNotIn("retired nodes", err0)
            assert_ended_well_in_term(self, f"{tmp}/logs", 2)
            assert_own_word(self, f"{tmp}/logs", 0, "no majority")

    def test_the_root_and_its_heir_lost_together_leave_one_record(self):
        # Rank 0's shim and its heir are killed at once: the other two reach
        # no heir and end (125), and one of them writes why into the shared
        # --log-dir's failure.json (before, no shim wrote anything).
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, ["-v", "--spares", "1", "--max-restarts", "2", "--log-dir",
                                     f"{tmp}/logs"], [PYTHON, CKPT], shims=4,
                               env={"EPOCHS": "60"})
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"), 180),
                            "\n".join(sum(self.outputs(tmp, 4), [])))
            named = set()
            for e in self.outputs(tmp, 4)[1]:
                named.update(int(h) for h in re.findall(r"the root's heir is rank (\d+)'s shim", e))
            self.assertEqual(len(named), 1, named)
            heir = named.pop()
            for i in (0, heir):
                procs[i].send_signal(signal.SIGKILL)
            rest = [i for i in range(1, 4) if i != heir]
            codes = [procs[i].wait(timeout=120) for i in rest]
            outs, errs = self.outputs(tmp, 4)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [125, 125], text)
            # (The heir may have welcomed one of them in the moment before
            # its own end: that one says so, as lost with the root.)
            self.assertTrue(os.path.exists(f"{tmp}/logs/failure.json"), text)
            record = json.loads(slurp(f"{tmp}/logs/failure.json"))
            self.assertEqual(record["exit_code"], 125, record)
            # (A root killed with bytes unread resets its links: "closed" or
            # "Connection reset by peer", as the kernel has it.)
            self.assertRegex(record["error"], rf"lost the control plane: the link to its parent, "
                                              rf"rank 0's shim at \S+, "
                                              rf"(closed|Connection reset by peer) \(and its heir, "
                                              rf"rank {heir}'s shim at \S+, did not take this "
                                              rf"shim(: it was lost too, [^)]+)?\)", record)


if __name__ == "__main__":
    main()
