"""Real PyTorch DDP over Gloo, started by real mpirun through aml-shim."""
import unittest

from harness import PYTHON, SHIM, TRAIN, assert_converged, main, mpirun, require, run

class Ddp(unittest.TestCase):
    def setUp(self):
        require("mpirun", PYTHON)

    def check_converged(self, stdout, world):
        return assert_converged(self, stdout, world)

    def test_mpirun_np2_converges_on_every_rank(self):
        r = run(mpirun(2, SHIM, "--", PYTHON, TRAIN), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_converged(r.stdout, 2)

    def test_legacy_local_rank_argument(self):
        r = run(mpirun(2, SHIM, "--local-rank-arg", "--", PYTHON, TRAIN, "--epochs", "10"),
                timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_converged(r.stdout, 2)

    def test_per_node_launch_two_shims_of_two(self):
        # mpirun starts one shim per "node"; each fans out 2 ranks of PyTorch.
        r = run(mpirun(2, SHIM, "--nproc-per-node", "2", "--", PYTHON, TRAIN, "--epochs", "10"),
                timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_converged(r.stdout, 4)  # finals() drops the '[rank R] ' tags


if __name__ == "__main__":
    main()
