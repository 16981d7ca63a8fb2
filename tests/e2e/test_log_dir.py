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

    def test_a_link_planted_at_the_error_file_is_never_written_through(self):
        # A --log-dir that others can write (no sticky bit): a link at
        # rank-0.error.json. The rank writes its error file as torch's
        # @record does (open(path, "w")): it goes to aml-shim's private
        # directory; --log-dir gets a copy, the link replaced, not followed.
        os.mkdir(self.logs)
        os.chmod(self.logs, 0o777)
        precious = os.path.join(self.tmp, "precious.cfg")
        with open(precious, "w") as f:
            f.write("keep me\n")
        go = os.path.join(self.tmp, "go")
        record = ("import json, os, time\n"
                  f"while not os.path.exists({go!r}): time.sleep(0.01)\n"
                  "with open(os.environ['TORCHELASTIC_ERROR_FILE'], 'w') as f:\n"
                  "    json.dump({'message': 'ValueError: bad shard 7'}, f)\n"
                  "raise SystemExit(1)\n")
        p = spawn([SHIM, "--nproc-per-node", "1", "--log-dir", self.logs, "--", PYTHON, "-c",
                   record], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The link is planted while the job runs, as another user would.
            self.assertTrue(wait_for(lambda: os.path.exists(
                os.path.join(self.logs, "rank-0.stdout")), 30))
            os.symlink(precious, os.path.join(self.logs, "rank-0.error.json"))
            open(go, "w").close()
            out, err = p.communicate(timeout=60)
        finally:
            kill_group(p)
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(slurp(precious), "keep me\n")
        self.assertIn("aml-shim:   exception: ValueError: bad shard 7", r.stderr)
        copy = os.path.join(self.logs, "rank-0.error.json")
        self.assertFalse(os.path.islink(copy))
        self.assertEqual(json.loads(slurp(copy)), {"message": "ValueError: bad shard 7"})
        self.assertEqual(json.loads(slurp(os.path.join(self.logs, "failure.json")))
                         ["exception"]["message"], "ValueError: bad shard 7")

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
