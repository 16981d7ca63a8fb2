"""--numa-bind: each child runs on the CPUs of its GPU's NUMA node, read from
the NVIDIA driver's /proc view and sysfs (here: fixture trees, see
tests/fixtures/make_gpu_topology.py; this machine has no GPU)."""
import os
import re
import unittest

from harness import SHIM, SRC, main, run

TWO = os.path.join(SRC, "tests", "fixtures", "gpu", "twocpu")
DGX = os.path.join(SRC, "tests", "fixtures", "gpu", "dgx8")
SHOW = ["sh", "-c", 'echo "$LOCAL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"']


def roots(tree):
    return ["--proc-root", os.path.join(tree, "proc"), "--sysfs-root", os.path.join(tree, "sys")]


class NumaBind(unittest.TestCase):
    def setUp(self):
        if os.cpu_count() < 2 or len(os.sched_getaffinity(0)) < 2:
            self.fail("these tests need CPUs 0 and 1")

    def lines(self, stdout):
        return sorted(re.sub(r"^\[rank \d+\] ", "", l) for l in stdout.splitlines() if l)

    def test_each_child_gets_its_gpus_cpus(self):
        r = run([SHIM, "--numa-bind", *roots(TWO), "--nproc-per-node", "gpu", "--", *SHOW])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.lines(r.stdout), ["0 0", "1 1"])
        self.assertNotIn("warning", r.stderr)

    def test_cuda_visible_devices_decides_which_gpu_is_whose(self):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="1,0")
        env = {k: v for k, v in env.items() if not k.startswith(("OMPI_", "PMIX_", "SLURM_"))}
        r = run([SHIM, "--numa-bind", *roots(TWO), "--nproc-per-node", "gpu", "--", *SHOW], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.lines(r.stdout), ["0 1", "1 0"])

    def test_exec_in_place_is_bound_too(self):
        r = run([SHIM, "--numa-bind", *roots(TWO), "--", *SHOW])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "0 0\n")

    def test_no_gpu_information_warns_and_runs_unbound(self):
        r = run([SHIM, "--numa-bind", "--proc-root", "/nonexistent", "--", *SHOW])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[0], "0")
        self.assertIn("aml-shim: warning: --numa-bind: no GPU information (no /nonexistent/driver/"
                      "nvidia/gpus (no NVIDIA driver)); children run unbound", r.stderr)

    def test_cpus_this_machine_lacks_are_not_bound(self):
        # The 8-GPU fixture's GPU 4 sits on CPUs 48-95,144-191.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "SLURM_"))}
        env.update(LOCAL_RANK="4", RANK="4", WORLD_SIZE="8", LOCAL_WORLD_SIZE="8")
        r = run([SHIM, "--numa-bind", *roots(DGX), "--", *SHOW], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--numa-bind: GPU 4 (0000:87:00.0) is on NUMA node 1: CPUs "
                      "48-95,144-191, none of which this process may use", r.stderr)


if __name__ == "__main__":
    main()
