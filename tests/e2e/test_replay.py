"""A stranger who sees the job's traffic cannot join it: a shim's hello,
captured on the network (scripts/replay_attack.py sniffs loopback in a
network namespace of its own, as tcpdump would on the job's network) and
sent again on a connection of the stranger's, answers another connection's
challenge and is refused, and the forged "lost" message after it stops
nothing. On the code before, the replayed proof was welcomed as a second
rank 1 and its forged message ended the job on every node (exit 125)."""
import json
import os
import subprocess
import unittest

from harness import PYTHON, SHIM, SRC, clean_env, main, require, require_namespaces, run

ATTACK = os.path.join(SRC, "tests", "e2e", "scripts", "replay_attack.py")


class Replay(unittest.TestCase):
    def attack(self, kind):
        require_namespaces("-n", why="a network namespace (its own loopback to sniff)")
        r = subprocess.run(["unshare", "-n", PYTHON, ATTACK, SHIM, kind], env=clean_env(),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def assert_refused(self, report):
        self.assertTrue(report["seen"], "the sniffer saw no hello")
        self.assertEqual(report["running_after"], [True, True], report["stderr"])
        for err in report["stderr"]:
            self.assertNotIn("FORGED", err)
        # Both ended by the test's SIGTERM, as from their launcher.
        self.assertEqual(report["codes"], [143, 143], report["stderr"])

    def test_without_a_job_secret_munge_credentials_are_the_proof(self):
        # No AML_SHIM_JOB_SECRET, none from the launcher (Slurm without
        # PMIx, Hydra, a plain environment): where munged runs, as on every
        # Slurm cluster, a MUNGE credential made for the connection is the
        # proof, and munged refuses it a second time.
        require("munged")
        r = run([os.path.join(SRC, "scripts", "slurm-local.sh"), "munge"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        report = self.attack("none")
        self.assertIn("control plane: no job secret (no AML_SHIM_JOB_SECRET, none from the "
                      "launcher, no PMIx): MUNGE credentials instead", report["stderr"][0])
        self.assert_refused(report)

    def test_a_replayed_hello_is_refused_and_its_forged_message_stops_nothing(self):
        report = self.attack("secret")
        self.assert_refused(report)


if __name__ == "__main__":
    main()
