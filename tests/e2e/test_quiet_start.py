"""The hang watchdog at start-up (docs/control-plane.md, "Hang watchdog",
"Start-up"): ranks that import torch and prepare their data in silence for
longer than --hang-timeout before their process group is up, beside a busy
loop per core, are starting, not hung; the same ranks waiting on nothing
are hung, and the verdict says they were still starting. Real torch (1.13)
over Gloo, one node."""
import os
import unittest

from harness import PYTHON, SHIM, SRC, CpuHogs, clean_env, free_port, main, require, run

QUIET_START = os.path.join(SRC, "tests", "e2e", "scripts", "quiet_start.py")


class QuietStart(unittest.TestCase):
    def setUp(self):
        require(PYTHON)

    def test_a_quiet_start_up_longer_than_the_hang_timeout_is_not_killed(self):
        # Two ranks import torch and prepare data for 25 s in silence before
        # their process group is up, beside a CPU hog per core: their CPU
        # time is progress (before, every shim exited 124 after ~16 s with
        # "no culprit: no rank's flight record came").
        with CpuHogs():
            r = run([SHIM, "--nproc-per-node", "2", "--hang-timeout", "9s", "--", PYTHON,
                     QUIET_START], env=clean_env(MASTER_PORT=free_port(), PREP_S="25"),
                    timeout=240)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(r.stdout.splitlines()),
                         ["[rank 0] rank 0 sum 1", "[rank 1] rank 1 sum 1"])
        self.assertNotIn("hung", r.stderr)

    def test_a_start_up_that_waits_on_nothing_is_hung_and_said_to_be_starting(self):
        # The same ranks sleeping before their group is up spend no CPU: a
        # hang, whose verdict says they were still starting.
        r = run([SHIM, "--nproc-per-node", "2", "--hang-timeout", "9s", "--", PYTHON,
                 QUIET_START], env=clean_env(MASTER_PORT=free_port(), PREP="sleep"), timeout=240)
        self.assertEqual(r.returncode, 124, r.stdout + r.stderr)
        self.assertIn("no flight record from ranks 0-1: still starting: no process group yet",
                      r.stderr)


if __name__ == "__main__":
    main()
