"""A frozen root on a busy machine (docs/control-plane.md, "A new root",
"The tree repairs itself", "An old root that wakes"): shims side by side
beside two busy loops per core, rank 0's node stalled during the loaded
start-up, when its children's allowances differ; every live shim stays in
the job, the heir takes it, and the old root, woken, steps down."""
import os
import signal
import tempfile
import unittest

from harness import CKPT, PYTHON, CpuHogs, main, signal_all, slurp, wait_for
from test_new_root import SideBySide, undisturbed
from test_spares import descendants, final_weights, kill_all


class BusyRoot(SideBySide, unittest.TestCase):
    def test_a_frozen_root_on_a_busy_machine_loses_no_shim_and_wakes_as_no_root(self):
        # The report's run: 4 shims (3 NODE_RANKs and a spare) beside two
        # busy loops per core, started before them; rank 0's shim is
        # SIGSTOPped at epoch 2, while the links' allowances still differ
        # from the loaded start-up (one child may find the root silent 20 s
        # before the heir), with its keeper and its rank (a node that stalls). Before, such a child was stopped at once ("lost
        # rank 1's shim's link to rank 0's shim, which holds the job still")
        # and the heir had no majority: the job was lost. Now every live
        # shim stays in the job: the heir takes it, the spare takes
        # NODE_RANK 0, and the job ends with the undisturbed weights. The old
        # root, woken (SIGCONT) while the new attempt trains, steps down:
        # 125, no verdict, and the shared --log-dir holds no failure.json.
        epochs = "60"
        weights = undisturbed(3, EPOCHS=epochs)
        with tempfile.TemporaryDirectory() as tmp, CpuHogs(per_core=2):
            procs = self.start(tmp, ["--grace", "5", "--spares", "1", "--max-restarts", "3",
                                     "--log-dir", f"{tmp}/logs"], [PYTHON, CKPT], shims=4,
                               env={"EPOCHS": epochs})
            self.assertTrue(wait_for(lambda: "epoch 2 saved" in slurp(f"{tmp}/shim-1.out"), 300),
                            "\n".join(sum(self.outputs(tmp, 4), [])))
            frozen = [procs[0].pid] + descendants(procs[0].pid)
            self.addCleanup(kill_all, frozen)
            signal_all(frozen, signal.SIGSTOP)
            resumed = lambda: any("resumed at epoch" in o for o in self.outputs(tmp, 4)[0])
            self.assertTrue(wait_for(resumed, 300), "\n".join(sum(self.outputs(tmp, 4), [])))
            signal_all(frozen, signal.SIGCONT)
            code0 = procs[0].wait(timeout=120)
            codes = [procs[i].wait(timeout=400) for i in range(1, 4)]
            outs, errs = self.outputs(tmp, 4)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [0, 0, 0], text)
            self.assertNotIn("which holds the job still", text)
            self.assertRegex(text, r"takes the job as its root: 3 of 4 shims reached it")
            self.assertEqual([final_weights(o) for o in outs if final_weights(o)], [weights], text)
            self.assertEqual(code0, 125, text)
            self.assertIn("no majority", errs[0])
            self.assertIn("steps down and writes no record of the job", errs[0])
            self.assertNotIn("no spare left", errs[0])
            self.assertNotIn("retired nodes", errs[0])
            self.assertFalse(os.path.exists(f"{tmp}/logs/failure.json"),
                             slurp(f"{tmp}/logs/failure.json")
                             if os.path.exists(f"{tmp}/logs/failure.json") else "")

if __name__ == "__main__":
    main()
