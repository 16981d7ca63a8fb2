"""--warm-restart (docs/control-plane.md, "Warm restarts"): a standby
interpreter per rank, made as each attempt's ranks start and waiting in the
idle scheduling class, imports --preload's modules (torch) and becomes the
next attempt's rank (back in the normal class): the script
runs as `python script.py` would have (its __name__, sys.argv, working
directory, sys.path[0] and the attempt's environment, a new MASTER_PORT
among it), torch already imported. Real PyTorch (Debian's 1.13) over Gloo
on one node: a failed attempt restarts warm, a standby killed before the
restart starts its rank cold (said), a warm rank's exception is the
script's own traceback and status, multiprocessing's spawn and forkserver
work in it, its open descriptors are a cold start's, a
command that is not Python restarts cold (said once), and no standby
outlives the shim."""
import json
import os
import re
import subprocess
import tempfile
import unittest

from harness import (IN_ROOT, PYTHON, SHIM, SRC, clean_env, forky_root, free_port, left_behind,
                     main, require, run, spawn, take_orphans)
from test_metrics import promtool_accepts, scrape_when_up, value

JOB = os.path.join(SRC, "tests", "e2e", "scripts", "warm_job.py")


def starts(stdout):
    """Each rank's first line, by (attempt, rank) (a multiprocessing child
    that re-runs the script as __mp_main__ prints one later)."""
    out = {}
    for line in stdout.splitlines():
        at = line.find("{")
        if at >= 0 and '"attempt"' in line:
            d = json.loads(line[at:])
            out.setdefault((d["attempt"], d["rank"]), d)
    return out


# Every job this file starts carries it: a standby has its rank's
# environment, so the standbys of this file's jobs are told apart from
# those of a test running beside it (ctest -j2).
TAG = f"AML_WARM_TEST={os.getpid()}".encode()


def setUpModule():
    take_orphans()


def standbys_left():
    """Processes running aml-shim's standby or store host program for this
    file's jobs, and those a shim of this file left behind (reparented to
    this test: a standby SIGKILLed but not yet gone when its shim exited,
    found in CI)."""
    found = left_behind()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
                if b"warm_standby.py" not in cmd and b"store_host.py" not in cmd:
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if TAG in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def tagged_env(**env):
    return clean_env(AML_WARM_TEST=str(os.getpid()), **env)


class WarmRestart(unittest.TestCase):
    def assert_all_warm(self, r):
        """The job ended 0, the restart's 2 ranks from their standbys."""
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("aml-shim: --warm-restart: 2 of 2 ranks started from their standbys",
                      r.stderr)
        self.assertNotIn("starts cold", r.stderr)

    def job(self, *shim_args, cwd=None, **env):
        return run([SHIM, "--nproc-per-node", "2", *shim_args, "--", PYTHON, JOB, "a1", "--flag"],
                   env=tagged_env(MASTER_PORT=free_port(), **env), timeout=360, cwd=cwd)

    def test_the_standby_imports_the_installed_modules_the_rank_before_it_imported(self):
        # No --hang-timeout: the agent is there for --warm-restart alone.
        r = self.job("--max-restarts", "1", "--warm-restart", FAIL_RANK="1", LEARN="1")
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, text)
        self.assertIn("aml-shim: --warm-restart: 2 of 2 ranks started from their standbys",
                      r.stderr)
        s = starts(r.stdout)
        for rank in (0, 1):
            cold, warm = s[(0, rank)], s[(1, rank)]
            self.assertFalse(cold["minidom_loaded"], text)
            # Not in --preload (torch): learned from the first attempt's rank.
            self.assertTrue(warm["minidom_loaded"], text)
            self.assertTrue(warm["torch_loaded"], text)
            # The script's own module, beside it: the script imports it.
            self.assertFalse(warm["local_loaded"], text)
            self.assertEqual(warm["standby_vars"], [], text)

    def test_a_failed_attempt_restarts_from_the_standbys_as_the_script_would_start(self):
        with tempfile.TemporaryDirectory() as tmp:
            # (--hang-timeout: the flight recorder's agent, armed in the
            # warm rank once its variables are the attempt's.)
            r = self.job("--max-restarts", "1", "--warm-restart", "--hang-timeout", "120s", cwd=tmp,
                         FAIL_RANK="1", MP="1")
            text = r.stdout + r.stderr
            self.assert_all_warm(r)
            s = starts(r.stdout)
            for rank in (0, 1):
                cold, warm = s[(0, rank)], s[(1, rank)]
                self.assertFalse(cold["torch_loaded"], text)
                self.assertTrue(warm["torch_loaded"], text)  # the standby had imported it
                for key in ("name", "argv", "cwd", "path0"):
                    self.assertEqual(warm[key], cold[key], key)
                self.assertEqual(warm["name"], "__main__")
                self.assertEqual(warm["argv"], [JOB, "a1", "--flag"])
                self.assertEqual(os.path.realpath(warm["cwd"]), os.path.realpath(tmp))
                self.assertEqual(warm["path0"], os.path.dirname(os.path.realpath(JOB)))
                self.assertNotEqual(warm["port"], cold["port"])  # the attempt's own
                self.assertEqual(warm["standby_vars"], [], text)
                # No descriptor of the standby's (its order's pipe) or the
                # shim's: the same as a cold start's.
                self.assertEqual(warm["fds"], cold["fds"], text)
                self.assertTrue(cold["agent"], text)
                self.assertTrue(warm["agent"], text)
                self.assertIn(f"[rank {rank}] rank {rank} attempt 1 sum 2", r.stdout)
                self.assertIn(f"[rank {rank}] rank {rank} squares [1, 4, 9]", r.stdout)
                self.assertIn(f"[rank {rank}] rank {rank} forkserver squares [1, 4, 9]",
                              r.stdout)
        self.assertEqual(standbys_left(), [])

    def test_a_failure_one_second_after_the_first_step_restarts_warm(self):
        # Before: the standbys were made 10 s after the attempt's start, and
        # a rank failing 1 s after its first step restarted cold.
        r = self.job("--max-restarts", "1", "--warm-restart", FAIL_RANK="1", WAIT_S="1",
                     SHOW_STANDBYS="1")
        text = r.stdout + r.stderr
        self.assert_all_warm(r)
        s = starts(r.stdout)
        for rank in (0, 1):
            # Waiting, every thread of each standby in the idle class (5);
            # the rank it became runs in the normal one (0), as a cold one.
            self.assertIn(f"rank {rank} standby policies [5]", r.stdout, text)
            self.assertEqual((s[(0, rank)]["policy"], s[(1, rank)]["policy"]), (0, 0), text)
            self.assertTrue(s[(1, rank)]["torch_loaded"], text)
            self.assertIn(f"rank {rank} attempt 1 sum 2", r.stdout)
        self.assertEqual(standbys_left(), [])

    def assert_no_client_refused(self, r):
        """The restart's store opened by the store host before its ranks
        started: none of its clients was refused (torch's trace says each
        refusal and its retry), every rank a client of it."""
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, text)
        self.assertIn("rank 1 store host ready True", r.stdout)
        self.assertIn("the store host opened the next attempt's store", r.stderr)
        restarted = r.stderr[r.stderr.index("restart 1 of 1"):]
        for refused in ("not yet listening", "Connection refused"):
            self.assertNotIn(refused, restarted, text)
        s = starts(r.stdout)
        for rank in (0, 1):
            # (False in the first attempt, as torchrun's own contract has it.)
            self.assertEqual((s[(0, rank)]["agent_store"], s[(1, rank)]["agent_store"]),
                             ("False", "True"), text)
            self.assertIn(f"rank {rank} attempt 1 sum 2", r.stdout)
        self.assertEqual(standbys_left(), [])

    def test_a_torch_2_without_libuv_has_rank_0_host_the_store_and_says_why(self):
        # torch 2.14 (the Debian forky root) built without libuv: its
        # agent-store client ignores USE_LIBUV and cannot be made (the ranks
        # of the first try raised DistStoreError). The store host tries one
        # as torch would before it says ok: it says why not, once, and rank
        # 0 hosts each attempt's store; the restart is warm and ends well.
        env = tagged_env(MASTER_PORT=free_port(), FAIL_RANK="1", WAIT_S="1", WAIT_STORE_HOST="1",
                         USE_LIBUV="0", AML_ROOT_BINDS=":".join(
                             sorted({SRC, os.path.dirname(SHIM), tempfile.gettempdir()})))
        r = run([IN_ROOT, forky_root(), SHIM, "--nproc-per-node", "2", "--max-restarts", "1",
                 "--warm-restart", "-v", "--", "python3", JOB], env=env, timeout=360)
        self.assert_all_warm(r)
        said = re.findall(r"aml-shim: warning: --warm-restart: the store host \(pid \d+\) said: "
                          r"error DistStoreError: use_libuv was requested but PyTorch was built "
                          r"without libuv support.*: rank 0 hosts each attempt's store from now on",
                          r.stderr)
        self.assertEqual(len(said), 1, r.stderr)
        s = starts(r.stdout)
        for rank in (0, 1):
            self.assertEqual(s[(1, rank)]["agent_store"], "False", r.stdout)
            self.assertIn(f"rank {rank} attempt 1 sum 2", r.stdout)
        self.assertEqual(standbys_left(), [])

    def test_no_ranks_store_client_is_refused_in_a_restart(self):
        # Before: every rank of a warm restart started at once, and one
        # whose store client came before rank 0's store listened was
        # refused and retried a second later (torch 1.13). The store host
        # opens the attempt's store before any rank starts; every rank is
        # its client, as under torchrun's agent store.
        r = self.job("--max-restarts", "1", "--warm-restart", "-v", FAIL_RANK="1", WAIT_S="1",
                     WAIT_STORE_HOST="1", TORCH_CPP_LOG_LEVEL="INFO",
                     TORCH_DISTRIBUTED_DEBUG="DETAIL")
        self.assert_no_client_refused(r)

    def test_a_standby_that_died_starts_its_rank_cold_and_says_so(self):
        r = self.job("--max-restarts", "1", "--warm-restart", FAIL_RANK="1", KILL_STANDBY="0")
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, text)
        killed = re.findall(r"rank 0 killed standby (\d+)", r.stdout)
        self.assertEqual(len(killed), 1, text)
        self.assertRegex(r.stderr, r"aml-shim: warning: --warm-restart: rank [01] starts cold: "
                         rf"its standby \(pid {killed[0]}\) ended: signal 9 \(SIGKILL\)")
        self.assertIn("--warm-restart: 1 of 2 ranks started from their standbys", r.stderr)
        s = starts(r.stdout)
        self.assertEqual(sorted(d["torch_loaded"] for (a, _), d in s.items() if a == 1),
                         [False, True], text)
        for rank in (0, 1):
            self.assertIn(f"rank {rank} attempt 1 sum 2", r.stdout)
        self.assertEqual(standbys_left(), [])

    def test_failure_json_says_which_ranks_of_the_last_restart_started_warm(self):
        # One standby killed, then attempt 2 fails: the record says which
        # rank started from its standby and which cold, and why.
        with tempfile.TemporaryDirectory() as logs:
            r = self.job("--max-restarts", "1", "--warm-restart", "--log-dir", logs,
                         FAIL_RANK="1", KILL_STANDBY="0", RAISE_RANK="1")
            text = r.stdout + r.stderr
            self.assertEqual(r.returncode, 1, text)
            killed = re.findall(r"rank 0 killed standby (\d+)", r.stdout)
            self.assertEqual(len(killed), 1, text)
            with open(os.path.join(logs, "failure.json")) as f:
                record = json.load(f)
        w = record["warm_restart"]
        self.assertEqual((w["host"], w["attempt"]), (os.uname().nodename, 2), record)
        self.assertEqual(len(w["warm"]), 1, record)
        self.assertEqual(len(w["cold"]), 1, record)
        self.assertEqual(sorted(w["warm"] + [w["cold"][0]["rank"]]), [0, 1], record)
        self.assertEqual(w["cold"][0]["why"],
                         f"its standby (pid {killed[0]}) ended: signal 9 (SIGKILL)", record)
        # The job's record: attempt 2's ranks, as every shim said (one here).
        attempts = record["attempts"]
        self.assertEqual([a["attempt"] for a in attempts], [1, 2], record)
        self.assertNotIn("warm_restart", attempts[0], record)
        self.assertEqual(attempts[1]["warm_restart"], {"shims": 1, "warm": 1, "cold": 1}, record)

    def test_a_warm_ranks_exception_is_the_scripts_traceback_and_status(self):
        r = self.job("--max-restarts", "1", "--warm-restart", FAIL_RANK="1", RAISE_RANK="1")
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 1, text)
        self.assertIn("2 of 2 ranks started from their standbys", r.stderr)
        tb = re.findall(r"\[rank 1\] (.*)", r.stderr)
        self.assertIn("Traceback (most recent call last):", tb, text)
        self.assertIn("ValueError: boom from rank 1", tb, text)
        self.assertTrue(any("warm_job.py" in line for line in tb), text)
        self.assertFalse(any("warm_standby" in line or "runpy" in line for line in tb), text)
        self.assertEqual(standbys_left(), [])

    def test_a_job_that_ends_leaves_no_standby_behind(self):
        r = self.job("--max-restarts", "1", "--warm-restart", "--verbose", WAIT_S="13")
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, text)
        made = re.findall(r"--warm-restart: rank \d+.s standby \(pid (\d+)\) imports torch", r.stderr)
        self.assertEqual(len(made), 2, text)
        self.assertEqual(standbys_left(), [])

    def test_each_standbys_memory_is_in_the_metrics_and_env_explain_says_its_cost(self):
        require("promtool")
        port = free_port()
        p = spawn([SHIM, "--nproc-per-node", "2", "--max-restarts", "1", "--warm-restart",
                   "--metrics-addr", f"127.0.0.1:{port}", "--", PYTHON, JOB],
                  env=tagged_env(MASTER_PORT=free_port(), WAIT_S="40"), stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        # Each rank's standby, once made (as the ranks start) and its
        # imports (torch) done: far more than a bare interpreter's 10 MB.
        big = lambda t: all((value(t, "aml_shim_warm_standby_resident_bytes",
                                   local_rank=str(r)) or 0) > 100e6 for r in (0, 1))
        text = scrape_when_up(port, big, timeout=120)
        promtool_accepts(self, text)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertEqual(standbys_left(), [])
        r = run([SHIM, "env", "--explain", "--max-restarts", "1", "--warm-restart"],
                env=clean_env(), timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        line = next(x for x in r.stdout.splitlines() if x.startswith("AML_SHIM_LEARN_MODULES="))
        self.assertIn("about 220 MB resident with Debian's torch 1.13", line)
        self.assertIn("aml_shim_warm_standby_resident_bytes", line)

    def test_a_command_that_is_not_python_restarts_cold_said_once(self):
        # Attempts longer than a standby's 10 s: still one line in all (no
        # standby tried in each attempt, no "starts cold" per rank).
        r = run([SHIM, "--nproc-per-node", "2", "--max-restarts", "1", "--warm-restart", "--",
                 "sh", "-c", "sleep 12; exit 7"], env=clean_env(MASTER_PORT=free_port()),
                timeout=90)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertEqual(r.stderr.count("--warm-restart: not a Python interpreter: sh: restarts "
                                        "start the ranks cold"), 1, r.stderr)
        self.assertEqual(r.stderr.count("--warm-restart"), 1, r.stderr)

    def test_bad_options_are_refused_and_nothing_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            mark = os.path.join(tmp, "ran")
            for args, says in (
                    (["--warm-restart"], "--warm-restart keeps interpreters for the next attempt: "
                                         "give --max-restarts N too"),
                    (["--max-restarts", "1", "--warm-restart", "--preload", "torch,,numpy"],
                     "--preload=torch,,numpy: '' is not a module's name"),
                    (["--max-restarts", "1", "--preload", "torch"],
                     "--preload names what --warm-restart's standbys import")):
                r = run([SHIM, *args, "--", "touch", mark], env=clean_env(), timeout=30)
                self.assertEqual(r.returncode, 125, r.stderr)
                self.assertIn(says, r.stderr)
                self.assertFalse(os.path.exists(mark))
            r = run([SHIM, "--", "touch", mark], env=clean_env(AML_SHIM_WARM_RESTART="1"),
                    timeout=30)
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn("AML_SHIM_WARM_RESTART keeps interpreters", r.stderr)
            # A module the rank's interpreter does not find: no standby
            # could import it; refused before any rank runs.
            script = os.path.join(tmp, "touch.py")
            with open(script, "w") as f:
                f.write(f"open({mark!r}, 'w').close()\n")
            private = os.path.join(tmp, "private")  # the shim's private directory's place
            os.mkdir(private)
            r = run([SHIM, "--nproc-per-node", "2", "--max-restarts", "1", "--warm-restart",
                     "--preload", "torch,aml_no_such_module", "--", PYTHON, script],
                    env=clean_env(TMPDIR=private), timeout=60)
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn(f"--preload=torch,aml_no_such_module: {PYTHON} finds no module "
                          "aml_no_such_module (in the rank's environment): a standby could not "
                          "import it", r.stderr)
            self.assertFalse(os.path.exists(mark))
            # Nothing of it is left: its keeper (once taking the refusal
            # for the shim's death) and its private directory.
            self.assertEqual(left_behind(), [])
            self.assertEqual(os.listdir(private), [])


if __name__ == "__main__":
    main()
