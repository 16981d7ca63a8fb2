"""--max-restarts: a job that checkpoints survives a rank's failure, or a
hang, without leaving the launcher: every rank of the job is ended and all
are started again with TORCHELASTIC_RESTART_COUNT + 1 and a new MASTER_PORT,
and the job ends with the weights of an undisturbed run. Real PyTorch DDP
over Gloo on one node and under mpirun (two shims); failures a restart
cannot fix are not restarted; a spent budget fails with the last failure and
lists every attempt; a quiet job is restarted, a script that cannot start
makes two attempts, short attempts back off, and a signal ends the job in
every phase of a restart. (Two network-namespace nodes: test_netns.py; srun -N2:
test_slurm_netns.py.)"""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from harness import (CKPT, PYTHON, SHIM, clean_env, free_port, kill_group, main, mpirun, run,
                     slurp, spawn)

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
            # The failure of the first attempt is shown, once, as an
            # attempt's end: the job did not fail.
            self.assertEqual(text.count("==== attempt 1 failed: restarting ===="), 1, text)
            self.assertNotIn("job failed", text)
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

    def test_a_shared_log_dir_keeps_rank_zeros_record_with_every_attempt(self):
        # Two shims of two write one --log-dir (a shared file system): rank 3,
        # on the second shim, fails every attempt; rank 0's shim's
        # failure.json is the job's, with the attempts and why it stopped.
        with tempfile.TemporaryDirectory() as tmp:
            r = run(mpirun(2, SHIM, "--nproc-per-node", "2", "--max-restarts", "2", "--log-dir",
                           f"{tmp}/logs", "--", "sh", "-c",
                           "echo up; sleep 1.2; [ $RANK = 3 ] && exit 7; sleep 60"),
                    env=clean_env(), timeout=120)
            self.assertEqual(r.returncode, 7, r.stdout + r.stderr)
            with open(f"{tmp}/logs/failure.json") as f:
                doc = json.load(f)
            self.assertEqual([a["attempt"] for a in doc["attempts"]], [1, 2, 3], doc)
            self.assertEqual(doc["restart_refused"], "--max-restarts 2 spent")
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

    def test_a_failure_and_a_hang_restart_warm_to_the_undisturbed_weights(self):
        # --warm-restart: the next attempt's ranks are the standbys (made as
        # the first attempt's ranks start, in the idle class), and the job
        # ends as an undisturbed run.
        for name, env, args in (("failure", {"EPOCH_S": "8"}, ()),
                                ("hang", {"HANG": "1"}, ("--hang-timeout", "30s"))):
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                r = run([SHIM, "--nproc-per-node", "4", "--max-restarts", "1", "--warm-restart",
                         *args, "--", PYTHON, CKPT],
                        env=clean_env(CKPT_DIR=tmp, MASTER_PORT=free_port(), **env), timeout=300)
                text = r.stdout + r.stderr
                self.assertEqual(r.returncode, 0, text)
                self.assertIn("aml-shim: --warm-restart: 4 of 4 ranks started from their standbys",
                              r.stderr)
                self.assertRegex(r.stdout, r"\[rank 3\] rank 3 resumed at epoch [1-9]")
                self.assertEqual(final_weights(r.stdout), self.weights, text)
                self.assertNotIn("LEFTOVER", text)

    def quiet_weights(self, tmp):
        log = slurp(f"{tmp}/log-0")
        return final_weights(log), log

    def test_a_quiet_job_is_restarted_and_ends_with_the_undisturbed_weights(self):
        # It prints nothing (it logs to files), and rank 3 fails at epoch 2
        # of the first attempt: restarted all the same.
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "4", "--max-restarts", "3", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=tmp, QUIET="1", MASTER_PORT=free_port()), timeout=240)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertRegex(r.stderr, r"aml-shim: restart 1 of 3 after rank 3 failed \(exit "
                                       r"status 7\) \(attempt 1 ran \d+\.\d s\)")
            weights, log = self.quiet_weights(tmp)
            self.assertEqual(weights, self.weights, log)
            self.assertIn("rank 3 resumed at epoch 2", slurp(f"{tmp}/log-3"))
            for rank in range(4):
                self.assertNotIn("LEFTOVER", slurp(f"{tmp}/log-{rank}"))

    def test_a_quiet_job_under_mpirun_with_two_shims_of_two_is_restarted(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(mpirun(2, "-x", "CKPT_DIR", "-x", "QUIET", SHIM, "--nproc-per-node", "2",
                           "--max-restarts", "3", "--", PYTHON, CKPT),
                    env=clean_env(CKPT_DIR=tmp, QUIET="1"), timeout=240)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(len(re.findall(r"aml-shim: restart 1 of 3 after rank 3 failed",
                                            r.stderr)), 2, r.stderr)
            weights, log = self.quiet_weights(tmp)
            self.assertEqual(weights, self.weights, log)

    def test_a_script_that_cannot_start_makes_two_attempts_not_the_budget(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "broken.py")
            with open(script, "w") as f:
                f.write("import os\nopen(os.environ['MARKS'] + '/' + str(os.getpid()), 'w')\n"
                        "def main(:\n")
            os.mkdir(f"{tmp}/marks")
            r = run([SHIM, "--nproc-per-node", "2", "--max-restarts", "5", "--", PYTHON, script],
                    env=clean_env(MARKS=f"{tmp}/marks"), timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("SyntaxError", r.stderr)
            self.assertEqual(len(re.findall(r"aml-shim: restart \d+ of 5", r.stderr)), 1, r.stderr)
            self.assertIn("aml-shim: 2 attempts (--max-restarts 5); not restarted: attempts 1 and 2 "
                          "both failed with exit status 1 without progress", r.stderr)
            # A SyntaxError is found before the script runs: no rank wrote a mark.
            self.assertEqual(os.listdir(f"{tmp}/marks"), [])

    def test_a_shell_that_exits_at_once_makes_two_attempts(self):
        r = run([SHIM, "--nproc-per-node", "2", "--max-restarts", "3", "--", "sh", "-c",
                 "exit 3"], env=clean_env(), timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(len(re.findall(r"aml-shim: restart \d+ of 3", r.stderr)), 1, r.stderr)
        self.assertIn("aml-shim: 2 attempts (--max-restarts 3); not restarted: attempts 1 and 2 "
                      "both failed with exit status 3 without progress", r.stderr)

    def test_short_attempts_in_a_row_back_off(self):
        # Each attempt prints, then fails 1.1 s later: progress, so each is
        # restarted, but after a growing pause.
        r = run([SHIM, "--nproc-per-node", "2", "--max-restarts", "3", "--", "sh", "-c",
                 "echo start; sleep 1.1; exit 3"], env=clean_env(), timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        restarts = re.findall(r"aml-shim: restart (\d) of 3 after rank \d failed \(exit status "
                              r"3\) \(attempt \d ran \d+\.\d s(; after a back-off of (\d+) s)?\)",
                              r.stderr)
        self.assertEqual([(n, wait) for n, _, wait in restarts],
                         [("1", ""), ("2", "1"), ("3", "2")], r.stderr)
        self.assertIn("aml-shim: 4 attempts (--max-restarts 3); --max-restarts 3 spent:", r.stderr)

    def test_a_signal_during_restarts_ends_the_job_and_starts_no_attempt(self):
        # The first attempt prints and fails 1.5 s in; each later one fails
        # at once, with another status than the one before (so the rule on
        # repeated failures does not stop it): attempts, teardowns and
        # back-offs follow each other fast. SIGTERM at moments spread over
        # them: each shim ends within --grace + 1 s, and no attempt starts
        # after the signal.
        command = ("[ $TORCHELASTIC_RESTART_COUNT = 0 ] && { echo start; sleep 1.5; }; "
                   "exit $((3 + TORCHELASTIC_RESTART_COUNT % 2))")
        offsets = [0.3, 1.5, 1.55, 1.7, 2.0, 2.6, 3.1, 3.6, 4.0, 4.6, 5.7, 6.5]
        procs = []
        for offset in offsets:
            p = spawn([SHIM, "-v", "--nproc-per-node", "2", "--grace", "2", "--max-restarts",
                       "10000", "--", "sh", "-c", command],
                      env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            procs.append((offset, p))
        started = time.monotonic()
        for offset, p in procs:
            time.sleep(max(0.0, started + offset - time.monotonic()))
            p.send_signal(signal.SIGTERM)
            p.signalled_at = time.monotonic()
        for offset, p in procs:
            try:
                p.wait(timeout=max(0.1, p.signalled_at + 3 - time.monotonic()))
            except subprocess.TimeoutExpired:
                kill_group(p)
                self.fail(f"SIGTERM {offset} s in: aml-shim still ran --grace + 1 s later")
            err = p.stderr.read().decode()
            self.assertNotEqual(p.returncode, 0, err)
            after = err.split("aml-shim: received SIGTERM", 1)
            self.assertEqual(len(after), 2, err)
            self.assertNotIn("aml-shim: restart", after[1], f"SIGTERM {offset} s in:\n{err}")

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
            self.assertEqual(text.count("==== attempt 1 failed: restarting ===="), 1, text)
            self.assertNotIn("job failed", text)
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
