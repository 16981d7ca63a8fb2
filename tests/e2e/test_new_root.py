"""--spares and a new root under the faults an attacker would pick
(docs/control-plane.md, "A new root"): a hang with a spare standing by, a
second takeover, an old root that comes back after the job moved on, a
frozen old root that still holds its log files, the root and its heir
lost together. Shims started side by side, as srun without
--kill-on-bad-exit or a container per node leaves them (only the control
plane ends the job), one rank each unless a test says otherwise."""
import json
import os
import signal
import tempfile
import time
import unittest

from harness import (CKPT, PYTHON, SHIM, clean_env, free_port, kill_group, main, run, slurp,
                     spawn, wait_for)
from test_spares import descendants, final_weights, kill_all

# A rank that prints once, then hangs.
QUIET_HANG = "import time; print('hello', flush=True); time.sleep(600)"


def undisturbed(ranks, **env):
    """The final weights of an undisturbed run of `ranks` ranks."""
    with tempfile.TemporaryDirectory() as tmp:
        r = run([SHIM, "--nproc-per-node", str(ranks), "--", PYTHON, CKPT],
                env=clean_env(CKPT_DIR=tmp, FAIL_RANK="-1", MASTER_PORT=free_port(), **env),
                timeout=300)
    if r.returncode != 0 or not final_weights(r.stdout):
        raise AssertionError("the undisturbed run failed:\n" + r.stdout + r.stderr)
    return final_weights(r.stdout)


def heir_of(errs):
    """The shim whose stderr says it took the job, or None."""
    for i, e in enumerate(errs):
        if "takes the job as its root" in e:
            return i
    return None


class NewRoot(unittest.TestCase):
    def start(self, tmp, args, command, shims=3, per_node=1, env=None):
        port = free_port()
        procs = []
        for rank in range(shims):
            e = clean_env(RANK=rank, WORLD_SIZE=shims, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                          CKPT_DIR=tmp, FAIL_RANK="-1", **(env or {}))
            out = open(f"{tmp}/shim-{rank}.out", "w")
            err = open(f"{tmp}/shim-{rank}.err", "w")
            procs.append(spawn([SHIM, "--nproc-per-node", str(per_node), *args, "--", *command],
                               env=e, stdout=out, stderr=err))
            self.addCleanup(kill_group, procs[-1])
            self.addCleanup(out.close)
            self.addCleanup(err.close)
        return procs

    def outputs(self, tmp, shims):
        return ([slurp(f"{tmp}/shim-{i}.out") for i in range(shims)],
                [slurp(f"{tmp}/shim-{i}.err") for i in range(shims)])

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
        weights = undisturbed(3, EPOCHS=epochs)
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
            self.assertRegex(errs[second[0]], rf"aml-shim: rank {first}'s shim on \S+ was lost "
                                              rf"\(the control plane lost rank {first}'s shim "
                                              rf"\(closed\)\); rank \d's shim on \S+ takes the job as its root: 3 of 5 shims reached it")
            digests = [final_weights(o) for o in outs if final_weights(o)]
            self.assertEqual(digests, [weights], text)
            self.assertNotIn("LEFTOVER", text)


if __name__ == "__main__":
    main()
