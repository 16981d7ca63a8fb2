"""Real PyTorch DDP over Gloo, started by real mpirun through aml-shim."""
import re
import unittest

from harness import PYTHON, SHIM, TRAIN, main, mpirun, require, run

FINAL = re.compile(r"rank (\d+)/(\d+) local_rank (\d+) node (\d+) loss ([\d.]+) -> ([\d.]+) "
                   r"weights ([0-9a-f]+)")


def finals(stdout):
    return sorted((tuple(m.groups()) for m in FINAL.finditer(stdout)), key=lambda g: int(g[0]))


class Ddp(unittest.TestCase):
    def setUp(self):
        require("mpirun", PYTHON)

    def check_converged(self, stdout, world):
        rows = finals(stdout)
        self.assertEqual([int(r[0]) for r in rows], list(range(world)), stdout)
        for rank, size, local, node, first, last, _ in rows:
            self.assertEqual(int(size), world)
            self.assertLess(float(last), float(first) / 10)
        # DDP keeps replicas identical: every rank ends with the same weights.
        self.assertEqual(len({r[6] for r in rows}), 1, stdout)

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
        plain = "\n".join(re.sub(r"^\[rank \d+\] ", "", line) for line in r.stdout.splitlines())
        self.check_converged(plain, 4)


if __name__ == "__main__":
    main()
