"""--max-restarts: a job that checkpoints survives a rank's failure, or a
hang, without leaving the launcher: every rank of the job is ended and all
are started again with TORCHELASTIC_RESTART_COUNT + 1 and a new MASTER_PORT,
and the job ends with the weights of an undisturbed run. Real PyTorch DDP
over Gloo on one node and under mpirun (two shims); failures a restart
cannot fix are not restarted; a spent budget fails with the last failure and
lists every attempt. (Two network-namespace nodes: test_netns.py; srun -N2:
test_slurm_netns.py.)"""
import json
import os
import re
import tempfile
import unittest

from harness import CKPT, PYTHON, SHIM, clean_env, free_port, main, mpirun, run, slurp

RESTART_LINE = re.compile(r"aml-shim: restart 1 of 1 after rank 3 failed \(exit status 7\) "
                          r"\(attempt 1 ran \d+\.\d s\)")


def final_weights(text):
    found = re.findall(r"final weights ([0-9a-f]{64})", text)
    return found[0] if len(found) == 1 else None


class Restart(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The weights of an undisturbed run: 4 ranks, nobody fails.
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "4", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=tmp, FAIL_RANK="-1", MASTER_PORT=free_port()), timeout=180)
        if r.returncode != 0 or not final_weights(r.stdout):
            raise AssertionError("the undisturbed run failed:\n" + r.stdout + r.stderr)
        cls.weights = final_weights(r.stdout)

    def test_one_node_resumes_and_ends_with_the_undisturbed_weights(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "4", "--max-restarts", "1", "--log-dir",
                     f"{tmp}/logs", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=tmp, MASTER_PORT=free_port()),
                    timeout=180)
            text = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, text)
            self.assertRegex(r.stderr, RESTART_LINE)
            # The failure of the first attempt is shown, once.
            self.assertEqual(text.count("==== job failed ===="), 1, text)
            self.assertIn("[rank 3] rank 3 resumed at epoch 2", r.stdout)
            self.assertEqual(final_weights(r.stdout), self.weights, text)
            self.assertNotIn("LEFTOVER", text)
            # The log keeps both attempts, the marker between them.
            log = slurp(f"{tmp}/logs/rank-3.stdout")
            self.assertRegex(log, r"rank 3 attempt 0 importing torch\n(.|\n)*"
                                  r"aml-shim: restart 1 of 1 after(.|\n)*"
                                  r"rank 3 attempt 1 importing torch")
            # Every rank was started anew (pid-A-R for both attempts).
            self.assertEqual(len({p for p in os.listdir(tmp) if p.startswith("pid-")}), 8)

    def test_without_restarts_the_job_fails_with_its_status(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "4", "--max-restarts", "0", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=tmp, MASTER_PORT=free_port()), timeout=180)
        self.assertEqual(r.returncode, 7, r.stdout + r.stderr)
        self.assertNotIn("restart", r.stderr)
        self.assertIn("aml-shim: first failure: rank 3", r.stderr)

    def test_a_spent_budget_fails_with_the_last_failure_and_lists_the_attempts(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "4", "--max-restarts", "1", "--log-dir",
                     f"{tmp}/logs", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=tmp, FAIL_ALWAYS="1", MASTER_PORT=free_port()), timeout=180)
            self.assertEqual(r.returncode, 7, r.stdout + r.stderr)
            self.assertRegex(r.stderr, RESTART_LINE)
            self.assertRegex(r.stderr,
                             r"aml-shim: 2 attempts \(--max-restarts 1\); --max-restarts 1 spent:\n"
                             r"aml-shim:   attempt 1: rank 3 failed \(exit status 7\) after "
                             r"\d+\.\d s\n"
                             r"aml-shim:   attempt 2: rank 3 failed \(exit status 7\) after ")
            with open(f"{tmp}/logs/failure.json") as f:
                doc = json.load(f)
            self.assertEqual([a["attempt"] for a in doc["attempts"]], [1, 2])
            self.assertEqual({a["exit_code"] for a in doc["attempts"]}, {7})
            self.assertEqual(doc["restart_refused"], "--max-restarts 1 spent")
            self.assertEqual(doc["rank"], 3)

    def test_a_hang_is_restarted_after_its_roll_call(self):
        with tempfile.TemporaryDirectory() as tmp:
            # 30 s: the new attempt's four ranks import torch with no output,
            # which took over 15 s on 2 loaded cores (a release build beside).
            r = run([SHIM, "--nproc-per-node", "4", "--max-restarts", "1", "--hang-timeout", "30s",
                     "--", PYTHON, CKPT], env=clean_env(CKPT_DIR=tmp, HANG="1", MASTER_PORT=free_port()),
                    timeout=240)
            text = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, text)
            self.assertIn("aml-shim: hung: no rank of the job wrote any output for", r.stderr)
            self.assertRegex(r.stderr, r"aml-shim:   rank 3 \[node 0, host [^\]]+\] in main "
                                       r"\(ckpt_ddp\.py:\d+\)")
            self.assertRegex(r.stderr, r"aml-shim: restart 1 of 1 after the job was hung \(no "
                                       r"output for \d+ s\)")
            self.assertEqual(final_weights(r.stdout), self.weights, text)
            self.assertNotIn("LEFTOVER", text)

    def test_a_failure_at_start_is_not_restarted(self):
        r = run([SHIM, "--nproc-per-node", "2", "--max-restarts", "3", "--", "sh", "-c",
                 "exit 3"], env=clean_env(), timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertNotIn("aml-shim: restart", r.stderr)
        self.assertIn("aml-shim: 1 attempt (--max-restarts 3); not restarted: the first attempt "
                      "failed at start, before any rank wrote output", r.stderr)

    def test_a_command_not_found_is_not_restarted(self):
        r = run([SHIM, "--nproc-per-node", "2", "--max-restarts", "3", "--",
                 "aml-shim-no-such-command"], env=clean_env(), timeout=60)
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertNotIn("restart", r.stderr)

    def test_two_shims_of_two_under_mpirun_resume_without_mpirun_seeing_a_failure(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(mpirun(2, "-x", "CKPT_DIR", SHIM, "--nproc-per-node", "2",
                           "--max-restarts", "1", "--", PYTHON, CKPT),
                    env=clean_env(CKPT_DIR=tmp), timeout=240)
            text = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, text)
            # Both shims mark the restart; rank 0's prints the failure once.
            self.assertEqual(len(RESTART_LINE.findall(r.stderr)), 2, text)
            self.assertEqual(text.count("==== job failed ===="), 1, text)
            self.assertEqual(final_weights(r.stdout), self.weights, text)
            self.assertNotIn("LEFTOVER", text)

    def test_one_rank_per_shim_under_mpirun_is_restarted_too(self):
        # Per-process launch: each shim has one child, whose output aml-shim
        # must see (it passes through untagged) for the restart rule.
        with tempfile.TemporaryDirectory() as tmp:
            r = run(mpirun(2, "-x", "CKPT_DIR", "-x", "FAIL_RANK", SHIM, "--max-restarts", "1",
                           "--", PYTHON, CKPT),
                    env=clean_env(CKPT_DIR=tmp, FAIL_RANK="1"), timeout=240)
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, text)
        self.assertIn("aml-shim: restart 1 of 1 after rank 1 failed (exit status 7)", r.stderr)
        self.assertIn("rank 1 resumed at epoch 2", r.stdout)
        self.assertNotIn("[rank ", r.stdout)  # one child: untagged, as before
        self.assertRegex(r.stdout, r"final weights [0-9a-f]{64}")


if __name__ == "__main__":
    main()
