"""--spares: a node that keeps failing, or that is lost, is retired, and at
the next attempt a spare takes its NODE_RANK and its ranks' RANK block; the
job ends with the weights of an undisturbed run (docs/control-plane.md,
"Spares and retirement"). Three shims started side by side, as srun without
--kill-on-bad-exit or a container per node leaves them (only the control
plane ends the job), each a node of 2 ranks: 2 hold NODE_RANK 0 and 1, the
third is the spare. Real PyTorch DDP over Gloo that checkpoints each epoch
(tests/e2e/scripts/ckpt_ddp.py). Under mpirun on network-namespace nodes:
test_netns.py."""
import glob
import json
import os
import re
import shutil
import signal
import tempfile
import time
import unittest

from harness import (CKPT, PYTHON, SHIM, SRC, clean_env, descendants, free_port, kill_group, main,
                     run, slurp,
                     spawn, wait_for)


def final_weights(text):
    found = re.findall(r"final weights ([0-9a-f]{64})", text)
    return found[0] if len(found) == 1 else None


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


class Spares(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The weights of an undisturbed run of the same 4 ranks (of 8 epochs
        # too, for the tests that kill a shim mid-job).
        cls.weights = cls.undisturbed()
        cls.weights8 = cls.undisturbed(EPOCHS="8")

    @staticmethod
    def undisturbed(**env):
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "4", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=tmp, FAIL_RANK="-1", MASTER_PORT=free_port(), **env),
                    timeout=180)
        if r.returncode != 0 or not final_weights(r.stdout):
            raise AssertionError("the undisturbed run failed:\n" + r.stdout + r.stderr)
        return final_weights(r.stdout)

    def start(self, tmp, *args, shims=3, bad=(), extra_env=None):
        """The shims, side by side; `bad`: the shims whose node is bad."""
        port = free_port()
        procs = []
        for rank in range(shims):
            env = clean_env(RANK=rank, WORLD_SIZE=shims, MASTER_ADDR="127.0.0.1",
                            MASTER_PORT=port, CKPT_DIR=tmp, FAIL_RANK="-1", FAIL_EPOCH="1")
            env.update({k: str(v).replace("{shim}", str(rank))
                        for k, v in (extra_env or {}).items()})
            if rank in bad:
                env["BAD_NODE"] = "1"
            out = open(f"{tmp}/shim-{rank}.out", "w")
            err = open(f"{tmp}/shim-{rank}.err", "w")
            own = [a.replace("{sys}", f"{tmp}/sys-{rank}") for a in args]
            procs.append(spawn([SHIM, "--nproc-per-node", "2", "--spares", "1", *own, "--",
                                PYTHON, CKPT], env=env, stdout=out, stderr=err))
            self.addCleanup(kill_group, procs[-1])
            self.addCleanup(out.close)
            self.addCleanup(err.close)
        return procs

    def outputs(self, tmp, shims=3):
        return ([slurp(f"{tmp}/shim-{i}.out") for i in range(shims)],
                [slurp(f"{tmp}/shim-{i}.err") for i in range(shims)])

    def assert_node_one_replaced(self, tmp, procs, reason):
        """Every shim ends well: NODE_RANK 1's holder was retired before
        attempt 2 (`reason`, a pattern, is why), the spare took its place and
        its ranks resumed, the undisturbed run's weights, nothing left."""
        codes = [p.wait(timeout=300) for p in procs]
        outs, errs = self.outputs(tmp)
        text = "\n".join(outs + errs)
        self.assertEqual(codes, [0, 0, 0], text)
        self.assertRegex(errs[0], r"aml-shim: NODE_RANK 1 moves to rank 2's shim on \S+ \(a "
                                  r"spare\); its last holder was retired: its check before "
                                  r"attempt 2 failed: " + reason)
        self.assertRegex(outs[2], r"\[rank 2\] rank 2 resumed at epoch [1-9]")
        self.assertEqual(final_weights(outs[0]), self.weights8, text)
        self.assertNotIn("LEFTOVER", text)

    def test_a_node_that_fails_every_attempt_is_retired_and_the_spare_takes_its_place(self):
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, "--max-restarts", "3", "--log-dir", f"{tmp}/logs", bad={1})
            codes = [p.wait(timeout=300) for p in procs]
            outs, errs = self.outputs(tmp)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [0, 0, 0], text)
            # Retired after 2 attempts in a row; the spare took NODE_RANK 1
            # and its ranks 2 and 3; ranks 0 and 1 kept theirs.
            self.assertIn("aml-shim: NODE_RANK 1 moves to rank 2's shim on", errs[0])
            self.assertRegex(errs[0], r"its last holder was retired: its ranks failed first in 2 "
                                      r"attempts in a row \(1 to 2; last: rank [23] \(exit "
                                      r"status 7\)\)")
            self.assertIn("aml-shim: restart 2 of 3", errs[2])
            self.assertIn("spare (--spares 1)", errs[2])
            self.assertRegex(outs[2], r"\[rank 2\] rank 2 resumed at epoch 1")
            self.assertRegex(outs[2], r"\[rank 3\] rank 3 epoch 3 saved")
            self.assertNotIn("epoch 3 saved", outs[1])
            self.assertEqual(final_weights(outs[0]), self.weights, text)
            self.assertNotIn("LEFTOVER", text)
            # The spare's log of rank 2 follows what node 1 wrote there.
            log = slurp(f"{tmp}/logs/rank-2.stdout")
            self.assertRegex(log, r"rank 2 on a bad node fails(.|\n)*NODE_RANK 1 moves to(.|\n)*"
                                  r"rank 2 epoch 3 saved")

    def test_no_spare_left_ends_the_job_and_names_the_retired_nodes(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Node 1 and the spare are bad (not nodes 0 and 1: two nodes
            # that fail in the same moment are every node of the job, the
            # script's own failure, which retires nothing): node 1 is
            # retired after attempts 1-2, the spare after 3-4.
            procs = self.start(tmp, "--max-restarts", "5", "--log-dir", f"{tmp}/logs",
                               bad={1, 2}, extra_env={"FAIL_EPOCH": "0"})
            codes = [p.wait(timeout=300) for p in procs]
            outs, errs = self.outputs(tmp)
            self.assertEqual(codes, [125, 125, 125], "\n".join(outs + errs))
            self.assertIn("aml-shim: no spare left", errs[0])
            self.assertIn("aml-shim: retired nodes (--spares 1):", errs[0])
            record = json.loads(slurp(f"{tmp}/logs/failure.json"))
            self.assertEqual(record["exit_code"], 125)
            retired = record["retired"]
            self.assertEqual([(r["shim"], r["attempt"]) for r in retired], [(1, 2), (2, 4)],
                             record)
            for r in retired:
                self.assertIn("its ranks failed first in 2 attempts in a row", r["reason"])
                self.assertIn("host", r)
            self.assertEqual(len(record["attempts"]), 4, record)
            self.assertEqual([a["rank"] // 2 for a in record["attempts"]], [1, 1, 1, 1], record)

    def test_a_killed_node_is_replaced_by_the_spare(self):
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, "--max-restarts", "2",
                               extra_env={"EPOCHS": "8", "FAIL_EPOCH": "99"})
            # Node 1's ranks are training: kill its shim (its keeper ends them).
            _, errs, _ = self.kill_node_one(
                tmp, procs, lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"))
            self.assertIn("lost: the control plane lost rank 1's shim on", errs[0])

    def kill_node_one(self, tmp, procs, when):
        """Once `when` holds, node 1's shim is killed: the others end well,
        the spare in its place to the undisturbed weights. Their output."""
        self.assertTrue(wait_for(when, 180), "\n".join(sum(self.outputs(tmp), [])))
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait(timeout=30)
        codes = [procs[i].wait(timeout=300) for i in (0, 2)]
        outs, errs = self.outputs(tmp)
        text = "\n".join(outs + errs)
        self.assertEqual(codes, [0, 0], text)
        self.assertIn("aml-shim: NODE_RANK 1 moves to rank 2's shim on", errs[0])
        self.assertRegex(outs[2], r"\[rank 3\] rank 3 epoch 7 saved")
        self.assertEqual(final_weights(outs[0]), self.weights8, text)
        return outs, errs, text

    def test_the_spares_standbys_start_the_place_it_takes_warm(self):
        # --warm-restart: the spare keeps a standby per rank too (--preload's
        # torch), and the ranks it starts in node 1's place are those.
        def standbys(pid):
            found = []
            for p in descendants(pid):
                try:
                    with open(f"/proc/{p}/cmdline", "rb") as f:
                        if b"warm_standby.py" in f.read():
                            found.append(p)
                except OSError:
                    pass
            return found

        with tempfile.TemporaryDirectory() as tmp:
            # Epochs of 3 s: the standbys are made as the ranks start (the
            # spare's as it starts) and have imported torch by epoch 0's end.
            procs = self.start(tmp, "--max-restarts", "2", "--warm-restart",
                               extra_env={"EPOCHS": "8", "FAIL_EPOCH": "99", "EPOCH_S": "3"})
            _, errs, text = self.kill_node_one(
                tmp, procs, lambda: "epoch 0 saved" in slurp(f"{tmp}/shim-1.out") and
                len(standbys(procs[0].pid)) == 2 and len(standbys(procs[2].pid)) == 2)
            for shim in (0, 2):
                self.assertIn("aml-shim: --warm-restart: 2 of 2 ranks started from their "
                              "standbys", errs[shim], text)
            self.assertNotIn("starts cold", text)

    def test_a_frozen_node_is_replaced_by_the_spare(self):
        # Node 1 freezes (SIGSTOP to its shim, its keeper and its ranks, as a
        # node stalled by its kernel or a hypervisor): its link goes silent,
        # rank 0 finds it lost within the allowance, retires it, and the
        # spare takes NODE_RANK 1. The frozen node never wakes in this test.
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, "--max-restarts", "2",
                               extra_env={"EPOCHS": "12", "FAIL_EPOCH": "99"})
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"), 180),
                            "\n".join(sum(self.outputs(tmp), [])))
            frozen = [procs[1].pid] + descendants(procs[1].pid)
            self.addCleanup(procs[1].wait, 30)  # after kill_all (cleanups run last first)
            self.addCleanup(kill_all, frozen)
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)
            codes = [procs[i].wait(timeout=300) for i in (0, 2)]
            outs, errs = self.outputs(tmp)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [0, 0], text)
            self.assertIn("the control plane lost rank 1's shim on", errs[0])
            self.assertIn("aml-shim: NODE_RANK 1 moves to rank 2's shim on", errs[0])
            self.assertRegex(outs[2], r"\[rank 2\] rank 2 resumed at epoch [1-9]")
            self.assertRegex(outs[2], r"\[rank 3\] rank 3 epoch 11 saved")
            self.assertRegex(outs[0], r"final weights [0-9a-f]{64}")
            self.assertIsNone(procs[1].poll())  # still frozen: nothing waited for it

    def test_rank_zeros_node_is_replaced_and_node_rank_zero_moves(self):
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, "--max-restarts", "3", bad={0})
            codes = [p.wait(timeout=300) for p in procs]
            outs, errs = self.outputs(tmp)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [0, 0, 0], text)
            self.assertIn("aml-shim: NODE_RANK 0 moves to rank 2's shim on", errs[0])
            self.assertIn("MASTER_ADDR moves with it", errs[0])
            # Rank 0's shim still decides; the spare now runs ranks 0 and 1.
            self.assertEqual(final_weights(outs[2]), self.weights, text)
            self.assertIsNone(final_weights(outs[0]))

    def test_a_node_whose_port_went_down_is_retired_before_the_next_attempt(self):
        # Each shim sees its own fixture of an ND H100 v5 node's 8 InfiniBand
        # ports (--sysfs-root). Mid-job node 1's first port goes DOWN, then a
        # rank of node 0 dies: at the restart round node 1's check fails
        # (a port usable as the job started is not), it is retired, and the
        # spare takes NODE_RANK 1 (docs/control-plane.md, "Spares and
        # retirement"); the job ends with the undisturbed weights.
        with tempfile.TemporaryDirectory() as tmp:
            for rank in range(3):
                shutil.copytree(os.path.join(SRC, "tests", "fixtures", "sysfs", "nd_h100_v5"),
                                f"{tmp}/sys-{rank}", symlinks=True)
            procs = self.start(tmp, "--max-restarts", "2", "--sysfs-root", "{sys}",
                               extra_env={"EPOCHS": "8", "FAIL_EPOCH": "99"})
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"), 180),
                            "\n".join(sum(self.outputs(tmp), [])))
            port = glob.glob(f"{tmp}/sys-1/devices/*/*/infiniband/mlx5_ib0/ports/1/state")
            self.assertEqual(len(port), 1)
            with open(port[0], "w") as f:
                f.write("1: DOWN\n")
            os.kill(int(slurp(f"{tmp}/pid-0-0")), signal.SIGKILL)
            self.assert_node_one_replaced(tmp, procs, r"mlx5_ib0 port 1 is DOWN \(usable as the "
                                                      r"job started\)")

    def test_a_node_under_the_nccl_floor_is_retired_before_the_next_attempt(self):
        # --preflight nccl --min-busbw: each shim's 2 GPUs are stand-ins
        # (tests/fakes: CUDA in host memory, NCCL over TCP). Mid-job node
        # 1's NCCL slows 40-fold; a rank of node 0 dies; at the restart
        # round every node all-reduces across its GPUs again: node 1 is
        # under the floor, retired, and the spare takes NODE_RANK 1.
        fakes = {"AML_SHIM_LIBCUDART": os.environ.get("AML_FAKE_CUDART", ""),
                 "AML_SHIM_LIBNCCL": os.environ.get("AML_FAKE_NCCL", ""),
                 "FAKE_CUDA_DEVICES": "2", "FAKE_NCCL_SLOW_MS": "300", "EPOCHS": "8",
                 "FAIL_EPOCH": "99"}
        if not fakes["AML_SHIM_LIBNCCL"]:
            self.skipTest("the stand-in libraries (AML_FAKE_NCCL) are built by ctest")
        with tempfile.TemporaryDirectory() as tmp:
            fakes["FAKE_NCCL_SLOW_FILE"] = f"{tmp}/slow-{{shim}}"
            procs = self.start(tmp, "--max-restarts", "2", "--preflight", "nccl",
                               "--preflight-bytes", "4M", "--min-busbw", "0.05", extra_env=fakes)
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"), 180),
                            "\n".join(sum(self.outputs(tmp), [])))
            open(f"{tmp}/slow-1", "w").close()
            os.kill(int(slurp(f"{tmp}/pid-0-0")), signal.SIGKILL)
            self.assert_node_one_replaced(tmp, procs, r"NCCL node 1 \(\S+\): 2 GPUs, all-reduce "
                                                      r"of 4 MiB in [0-9.]+ ms: busbw [0-9.]+ "
                                                      r"GB/s, algbw [0-9.]+ GB/s -- under "
                                                      r"--min-busbw 0.05 GB/s")

    def test_rank_zeros_shim_killed_its_heir_takes_the_job_and_the_spare_node_rank_zero(self):
        # Rank 0's shim (the control plane's root) is SIGKILLed mid-job: its
        # heir (its first child) takes the job with 2 of the 3 shims, more
        # than half (docs/control-plane.md, "A new root"); the spare takes
        # NODE_RANK 0 and ranks 0-1; the job ends with the undisturbed weights.
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, "--max-restarts", "2", "--log-dir", f"{tmp}/logs",
                               extra_env={"EPOCHS": "8", "FAIL_EPOCH": "99"})
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"), 180),
                            "\n".join(sum(self.outputs(tmp), [])))
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(timeout=30)
            codes = [procs[i].wait(timeout=300) for i in (1, 2)]
            outs, errs = self.outputs(tmp)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [0, 0], text)
            heirs = [i for i in (1, 2) if "takes the job as its root" in errs[i]]
            self.assertEqual(len(heirs), 1, text)
            self.assertRegex(errs[heirs[0]], r"aml-shim: rank 0's shim on \S+ was lost \(the "
                                             r"control plane lost rank 0's shim \((closed|Connection reset by peer)\)\); "
                                             r"rank [12]'s shim on \S+ takes the job as its root: "
                                             r"2 of 3 shims reached it")
            self.assertIn("aml-shim: NODE_RANK 0 moves to rank 2's shim on", errs[heirs[0]])
            self.assertRegex(outs[2], r"\[rank 0\] rank 0 resumed at epoch [1-9]")
            self.assertEqual(final_weights(outs[2]), self.weights8, text)
            self.assertNotIn("LEFTOVER", text)

    def test_rank_zeros_shim_lost_with_too_few_shims_left_ends_the_job(self):
        # The spare is lost first (rank 0's shim retires it and names shim 1
        # its heir), then rank 0's shim: 1 of 3 shims is not more than half,
        # so shim 1 ends the job (125) and its record names both losses.
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, "--max-restarts", "2", "--log-dir", f"{tmp}/logs",
                               extra_env={"EPOCHS": "8", "FAIL_EPOCH": "99"})
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/shim-1.out"), 180))
            procs[2].send_signal(signal.SIGKILL)
            procs[2].wait(timeout=30)
            time.sleep(2)  # rank 0's shim sees the spare's link close at once
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(timeout=30)
            code = procs[1].wait(timeout=300)
            outs, errs = self.outputs(tmp)
            self.assertEqual(code, 125, "\n".join(outs + errs))
            self.assertRegex(errs[1], r"no majority: rank 0's shim on \S+ was lost and 1 of the "
                                      r"job's 3 shims reach rank 1's shim")
            # Without a majority it writes no record of the job (the old
            # root may hold it beyond a cut): its word is its own node's.
            self.assertFalse(os.path.exists(f"{tmp}/logs/failure.json"))
            record = json.loads(slurp(f"{tmp}/logs/failure.shim-1.json"))
            self.assertEqual((record["exit_code"], record["term"], record["holder"]),
                             (125, 1, False), record)
            self.assertIn("no majority", record["error"])

    def test_spares_need_one_shim_per_node_and_restarts(self):
        env = clean_env(RANK=0, WORLD_SIZE=3, LOCAL_RANK=0, LOCAL_WORLD_SIZE=3,
                        MASTER_ADDR="127.0.0.1")
        r = run([SHIM, "--spares", "1", "--max-restarts", "1", "--", "true"], env=env)
        self.assertEqual(r.returncode, 125)
        self.assertIn("aml-shim: --spares 1 needs one shim per node", r.stderr)
        r = run([SHIM, "--spares", "1", "--", "true"], env=env)
        self.assertEqual(r.returncode, 125)
        self.assertIn("--spares=1 needs --max-restarts", r.stderr)
        r = run([SHIM, "--spares", "3", "--max-restarts", "1", "--", "true"],
                env=clean_env(RANK=0, WORLD_SIZE=3, MASTER_ADDR="127.0.0.1"))
        self.assertEqual(r.returncode, 125)
        self.assertIn("--spares 3 leaves no node to run ranks", r.stderr)


if __name__ == "__main__":
    main()
