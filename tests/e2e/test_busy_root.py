"""A frozen root on a busy machine (docs/control-plane.md, "A new root",
"The tree repairs itself", "An old root that wakes"): shims side by side
beside two busy loops per core, rank 0's node stalled during the loaded
start-up, when its children's allowances differ; every live shim stays in
the job, the heir takes it, and the old root, woken, steps down."""
import signal
import tempfile
import unittest

from harness import CKPT, PYTHON, CpuHogs, main, signal_all, slurp, wait_for
from test_new_root import SideBySide, assert_no_record, assert_resumed_weights, weights_of
from test_spares import descendants, kill_all


class BusyRoot(SideBySide, unittest.TestCase):
    def frozen_root(self, tmp, epochs, log_dir, woken):
        """4 shims (3 NODE_RANKs and a spare) beside two busy loops per
        core, started before them; rank 0's shim, its keeper and its rank
        SIGSTOPped at epoch 2 (a node that stalls), while the links'
        allowances still differ from the loaded start-up (one child may
        find the root silent 20 s before the heir); SIGCONTed when
        `woken(outputs of shims 1-3)` holds. Every live shim stays in the
        job: the heir takes it, the spare takes NODE_RANK 0, and the job
        ends with the undisturbed weights; the old root ends 125 and says
        nothing of the job. Returns the old root's stderr."""
        weights_of(3, epochs)  # before the busy loops
        with CpuHogs(per_core=2):
            procs = self.start(tmp, ["--grace", "5", "--spares", "1", "--max-restarts", "3",
                                     "--log-dir", log_dir], [PYTHON, CKPT], shims=4,
                               env={"EPOCHS": epochs})
            self.assertTrue(wait_for(lambda: "epoch 2 saved" in slurp(f"{tmp}/shim-1.out"), 300),
                            "\n".join(sum(self.outputs(tmp, 4), [])))
            frozen = [procs[0].pid] + descendants(procs[0].pid)
            self.addCleanup(kill_all, frozen)
            signal_all(frozen, signal.SIGSTOP)
            self.assertTrue(wait_for(lambda: woken(self.outputs(tmp, 4)[0][1:]), 400),
                            "\n".join(sum(self.outputs(tmp, 4), [])))
            signal_all(frozen, signal.SIGCONT)
            codes = [procs[i].wait(timeout=400) for i in range(1, 4)]
            code0 = procs[0].wait(timeout=120)
        outs, errs = self.outputs(tmp, 4)
        text = "\n".join(outs + errs)
        self.assertEqual(codes, [0, 0, 0], text)
        self.assertNotIn("which holds the job still", text)
        self.assertRegex(text, r"takes the job as its root: 3 of 4 shims reached it")
        assert_resumed_weights(self, outs, 3, epochs, text)
        self.assertEqual(code0, 125, text)
        for said in ("no spare left", "retired nodes", "ending the job"):
            self.assertNotIn(said, errs[0])
        return errs[0]

    def test_a_frozen_root_on_a_busy_machine_loses_no_shim_and_wakes_as_no_root(self):
        # The report's run: woken while the new attempt trains, one
        # --log-dir shared by every shim. Before, a child that found the
        # root silent first was stopped at once ("lost rank 1's shim's link
        # to rank 0's shim, which holds the job still") and the heir had no
        # majority: the job was lost. The old root reads its heir's 'left'
        # and steps down; the shared folder holds no failure.json.
        with tempfile.TemporaryDirectory() as tmp:
            err0 = self.frozen_root(tmp, "60", f"{tmp}/logs",
                                    lambda outs: any("resumed at epoch" in o for o in outs))
            self.assertIn("no majority", err0)
            self.assertIn("steps down and writes no record of the job", err0)
            assert_no_record(self, f"{tmp}/logs")

    def test_a_frozen_root_woken_as_the_job_ends_writes_nothing_in_its_own_log_dir(self):
        # Every shim keeps its own --log-dir (no shared folder to find the
        # new root's files in), and the old root is woken as the new
        # attempt saves its last epoch: its links close one by one as the
        # shims finish. Before: "no spare left: ... ending the job", and a
        # record saying "not restarted" for a job that finished.
        epochs = "40"
        with tempfile.TemporaryDirectory() as tmp:
            self.frozen_root(tmp, epochs, f"{tmp}/logs-{{shim}}",
                             lambda outs: any(f"epoch {int(epochs) - 1} saved" in o for o in outs))
            assert_no_record(self, f"{tmp}/logs-0")


if __name__ == "__main__":
    main()
