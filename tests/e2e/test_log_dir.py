"""--log-dir: nothing written through a planted link, a directory that
cannot be used stops the job before it runs, a full disk is reported,
failure.json belongs to its run, and two live jobs never share the files."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import PYTHON, SHIM, clean_env, kill_group, main, require, run, slurp, spawn, wait_for


class LogDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="aml-logdir-")
        self.logs = os.path.join(self.tmp, "logs")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def shim(self, *cmd, nproc=2):
        return run([SHIM, "--nproc-per-node", str(nproc), "--log-dir", self.logs, "--"] + list(cmd))

    def test_a_planted_link_is_refused_and_its_target_kept(self):
        os.mkdir(self.logs)
        secret = os.path.join(self.tmp, "secret")
        with open(secret, "w") as f:
            f.write("root only\n")
        os.chmod(secret, 0o600)
        os.symlink(secret, os.path.join(self.logs, "rank-0.stdout"))
        ran = os.path.join(self.tmp, "ran")
        r = self.shim("touch", ran)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn(f"--log-dir='{self.logs}': rank-0.stdout is a symbolic link", r.stderr)
        self.assertEqual(slurp(secret), "root only\n")
        self.assertFalse(os.path.exists(ran), "the command ran")

    def test_a_directory_that_cannot_be_used_stops_the_job(self):
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        self.logs = os.path.join(blocker, "logs")
        ran = os.path.join(self.tmp, "ran")
        r = self.shim("touch", ran)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn(f"--log-dir='{self.logs}': cannot create it: Not a directory", r.stderr)
        self.assertFalse(os.path.exists(ran), "the command ran")

    def test_failure_json_belongs_to_the_latest_run(self):
        for code in (7, 42):
            r = self.shim("sh", "-c", f'[ "$RANK" = 1 ] && exit {code}; exit 0')
            self.assertEqual(r.returncode, code, r.stderr)
            report = json.loads(slurp(os.path.join(self.logs, "failure.json")))
            self.assertEqual(report["exit_code"], code)
        r = self.shim("true")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.logs, "failure.json")),
                         "a successful run left an earlier run's failure.json")
        self.assertEqual([f for f in os.listdir(self.logs) if f.startswith(".")], [])

    def test_a_second_live_job_on_the_same_directory_is_refused(self):
        go = os.path.join(self.tmp, "go")
        first = spawn([SHIM, "--nproc-per-node", "2", "--log-dir", self.logs, "--", "sh", "-c",
                       f'echo first-$RANK; while [ ! -f {go} ]; do sleep 0.05; done'],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out = os.path.join(self.logs, "rank-1.stdout")
            self.assertTrue(wait_for(lambda: os.path.exists(out) and slurp(out), 30))
            r = self.shim("echo", "second")
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn("is being written by another running aml-shim job; give each job its "
                          "own --log-dir", r.stderr)
            open(go, "w").close()
            self.assertEqual(first.wait(timeout=60), 0)
        finally:
            kill_group(first)
        self.assertEqual(slurp(os.path.join(self.logs, "rank-0.stdout")), "first-0\n")

    def test_a_full_disk_is_reported(self):
        require("mount")
        os.mkdir(self.logs)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", self.logs], check=True)
        try:
            r = self.shim("sh", "-c", 'head -c 1500000 /dev/zero | tr "\\0" x; echo')
        finally:
            # Before tearDown removes the directory it is mounted on.
            subprocess.run(["umount", "-l", self.logs])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("x"), 2 * 1500000, "stdout lost bytes")
        self.assertIn("No space left on device; the rest of it is not logged", r.stderr)
        self.assertRegex(r.stderr, r"--log-dir \S+ is incomplete: rank-\d\.stdout "
                                   r"\(No space left on device\)")

    def test_failure_json_is_strict_utf8_whatever_the_rank_wrote(self):
        # An overlong NUL, a lone surrogate and a code point past U+10FFFF in
        # the failing rank's stderr: failure.json still decodes strictly.
        # (Its output passes through as it is: read as bytes.)
        r = subprocess.run([SHIM, "--log-dir", self.logs, "--", PYTHON, "-c",
                            "import os; os.write(2, b'bad \\xc0\\x80 \\xed\\xb3\\xbf "
                            "\\xf4\\x90\\x80\\x80 end\\n'); raise SystemExit(1)"],
                           capture_output=True, timeout=60, env=clean_env())
        self.assertEqual(r.returncode, 1, r.stderr)
        with open(f"{self.logs}/failure.json", "rb") as f:
            doc = json.loads(f.read().decode("utf-8", errors="strict"))
        self.assertIn("bad", "".join(doc["stderr_tail"]) if isinstance(doc.get("stderr_tail"), list)
                      else str(doc))

    def test_a_file_size_limit_is_a_failed_write_not_the_end(self):
        # ulimit -f (a site's quota): the log that reaches it is reported as
        # a full disk is; aml-shim does not die of SIGXFSZ (it was 153, no
        # summary, and the keeper killed every rank).
        r = run(["bash", "-c", 'ulimit -f 64; exec "$0" "$@"', SHIM, "--nproc-per-node", "2",
                 "--log-dir", self.logs, "--", "sh", "-c",
                 'head -c 200000 /dev/zero | tr "\\0" x; echo'])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("x"), 2 * 200000, "stdout lost bytes")
        self.assertRegex(r.stderr, r"--log-dir \S+ is incomplete: rank-\d\.stdout "
                                   r"\(File too large\)")


if __name__ == "__main__":
    main()
