"""The supervisor's output never wedges the job: a reader that leaves ends
it as it ends a pipeline, a reader that stalls stalls only the output (never
signals, fail-fast or the grace timer), and tagged output says when a stream
ended without a newline. Untagged, lines go out whole as well."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import PYTHON, SHIM, kill_group, main, mpirun, run, spawn, wait_for


class Output(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="aml-output-")
        self.err = open(os.path.join(self.tmp, "stderr"), "w+")

    def tearDown(self):
        self.err.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def test_a_reader_that_exits_ends_the_job_with_141(self):
        logs = os.path.join(self.tmp, "logs")
        p = spawn([SHIM, "--nproc-per-node", "2", "--log-dir", logs, "--", "yes"],
                  stdout=subprocess.PIPE, stderr=self.err)
        try:
            p.stdout.read(100)
            p.stdout.close()  # as `| head -c 100` does
            self.assertEqual(p.wait(timeout=60), 141, self.stderr())
        finally:
            kill_group(p)
        self.assertIn("the reader of stdout has gone (EPIPE): ending the job", self.stderr())

    def test_a_stalled_reader_does_not_delay_fail_fast(self):
        # Rank 0 floods stdout, nobody reads it; rank 1 fails after a moment.
        script = 'if [ "$RANK" = 0 ]; then exec yes; fi; sleep 0.5; exit 3'
        p = spawn([SHIM, "--nproc-per-node", "2", "--grace", "2", "--", "sh", "-c", script],
                  stdout=subprocess.PIPE, stderr=self.err)
        try:
            self.assertEqual(p.wait(timeout=60), 3, self.stderr())
        finally:
            kill_group(p)
        err = self.stderr()
        self.assertIn("first failure: rank 1", err)
        self.assertIn("of output could not be written: its reader did not take it", err)

    def test_a_full_disk_under_stdout_is_named_not_its_reader(self):
        with open("/dev/full", "w") as full:
            p = spawn([SHIM, "--nproc-per-node", "2", "--", "sh", "-c", "echo hello"],
                      stdout=full, stderr=self.err)
            try:
                self.assertEqual(p.wait(timeout=60), 0, self.stderr())
            finally:
                kill_group(p)
        err = self.stderr()
        self.assertIn("of output could not be written: stdout: No space left on device", err)
        self.assertNotIn("its reader", err)

    def test_signals_are_heard_while_the_reader_stalls(self):
        p = spawn([SHIM, "-v", "--nproc-per-node", "2", "--grace", "30", "--", "sh", "-c",
                   'trap "" TERM; yes'],
                  stdout=subprocess.PIPE, stderr=self.err)
        try:
            # Until the shim has queued all it will and the ranks block.
            time.sleep(1)
            p.send_signal(signal.SIGTERM)
            # Two SIGTERMs sent at once may arrive as one: wait for the first.
            self.assertTrue(wait_for(lambda: "received SIGTERM" in self.stderr(), 30),
                            "the shim did not hear SIGTERM")
            # A second request (not the first repeated within 100 ms by the
            # same sender, which counts as one): no grace period.
            time.sleep(0.3)
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=30), 137, self.stderr())
        finally:
            kill_group(p)
        self.assertIn("second SIGTERM: killing every child now", self.stderr())

    def test_a_final_partial_line_is_marked(self):
        r = run([SHIM, "--tag-output", "--", "printf", "a\\nb"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "[rank 0] a\n[rank 0] b\n[rank 0]\\ no newline at end of output\n")

    def test_untagged_ranks_lines_do_not_run_into_each_other(self):
        # Python whose output aml-shim reads (PYTHONUNBUFFERED=1) writes
        # print()'s text and its newline apart: forwarded as read, the lines
        # of ranks printing at once ran into each other ("rank 0 line
        # 5rank 1 line 5" then an empty line): in one shim untagged (as
        # fast as they can), and under mpirun, one rank per shim
        # (--hang-timeout reads the output), each rank printing a line at
        # the same moments, as ranks do after a step. (mpirun forwards what
        # it reads of each shim's pipe, up to its own buffer: output faster
        # than it reads may be cut there whatever the shim writes.)
        lines_of = ("import os, time\nr = os.environ['RANK']\n"
                    "for i in range({n}):\n"
                    "    time.sleep({tick} - time.time() % {tick} if {tick} else 0)\n"
                    "    print(f'rank {{r}} line {{i}}', flush=True)\n")
        for name, n, cmd in (
                ("one shim", 300, [SHIM, "--nproc-per-node", "4", "--no-tag-output", "--", PYTHON,
                                   "-c", lines_of.format(n=300, tick=0)]),
                ("mpirun", 100, mpirun(4, SHIM, "--hang-timeout", "1m", "--", PYTHON, "-c",
                                       lines_of.format(n=100, tick=0.02)))):
            with self.subTest(name):
                r = run(cmd, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = r.stdout.splitlines()
                self.assertEqual([l for l in lines if not re.fullmatch(r"rank \d line \d+", l)],
                                 [], r.stdout)
                self.assertEqual(sorted(lines),
                                 sorted(f"rank {r} line {i}" for r in range(4) for i in range(n)))

if __name__ == "__main__":
    main()
