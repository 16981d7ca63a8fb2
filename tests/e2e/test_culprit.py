"""Naming a hang's culprit (issue 44; docs/control-plane.md, "Naming the
culprit"): at the hang verdict each shim asks its ranks for PyTorch's flight
record, and rank 0's shim names the collective, the ranks that never
entered it, their node and host; with --spares that node is retired.

- The agent (aml-shim's sitecustomize) on this machine's Python with a
  stand-in torch package: it chains to the user's sitecustomize, serves the
  pipe, mends Gloo's pg_config, stays out of the way of torch's own reader,
  says why when torch has no recorder, and never prints.
- torch 1.13 (this machine's): the roll-call as before, and why no culprit.
- torch 2.14 in a Debian forky root (scripts/forky-root.sh) on 4 network-
  namespace nodes (5 with a spare) under Open MPI 4.1's mpirun: plain
  all-reduces where one rank skips one, ranks that never answer or answer
  with a broken dump, DDP whose bad node hangs it.
"""
import json
import os
import pickle
import re
import shutil
import socket
import subprocess
import tempfile
import textwrap
import threading
import time
import unittest

from harness import (CKPT, IN_ROOT, PYTHON, SHIM, SRC, CpuHogs, clean_env, forky_mpirun,
                     forky_nodes, forky_root, free_port, main, require, require_namespaces, run,
                     slurp, spawn)

CLUSTER = "amlf"
SUBNET = 44
NET = f"198.18.{SUBNET}"
SKIP = os.path.join(SRC, "tests", "e2e", "scripts", "skip_collective.py")
QUIET_START = os.path.join(SRC, "tests", "e2e", "scripts", "quiet_start.py")


def culprit_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("aml-shim: culprit:") or
            l.startswith("aml-shim: no culprit:")]


# ---- The agent, with a stand-in torch on this machine's Python

FAKE_TORCH = {
    "torch/__init__.py": "__version__ = '2.14.0'\n",
    "torch/version.py": "__version__ = '2.14.0'\n",
    "torch/_C/__init__.py": "",
    # The recorder's dump as Gloo writes it: pg_config keyed ''.
    "torch/_C/_distributed_c10d.py": textwrap.dedent("""\
        import os, pickle
        if os.environ.get("FAKE_NO_FR") != "1":
            def _dump_fr_trace(collectives, stacks, only_active):
                rank = int(os.environ["RANK"])
                if os.environ.get("FAKE_ASKS"):  # each ask: with stack traces or without
                    with open(os.environ["FAKE_ASKS"] + str(rank), "a") as f:
                        f.write("stacks\\n" if stacks else "light\\n")
                if stacks and os.environ.get("FAKE_DIE_IN_STACKS"):  # killed in the dump
                    import signal
                    os.kill(os.getpid(), signal.SIGKILL)
                if stacks and os.environ.get("FAKE_SLOW_STACKS"):  # torch's first symbolizing
                    import time
                    time.sleep(float(os.environ["FAKE_SLOW_STACKS"]))
                if not stacks and os.environ.get("FAKE_SLOW_LOOKS"):  # a look's, on a busy node
                    import time
                    time.sleep(float(os.environ["FAKE_SLOW_LOOKS"]))
                import threading
                if (stacks and os.environ.get("FAKE_SLOW_AGENT_STACKS") and
                        threading.current_thread() is not threading.main_thread()):
                    import time  # the agent's thread's (not the exception's)
                    time.sleep(float(os.environ["FAKE_SLOW_AGENT_STACKS"]))
                entry = {"collective_seq_id": 3 + (rank == 1), "profiling_name": "gloo:all_reduce",
                         "state": "scheduled", "input_sizes": [[4]], "input_dtypes": ["Float"],
                         "process_group": ("0", "default_pg"), "pg_id": 0, "is_p2p": False,
                         "frames": [{"filename": "/x/torch/distributed/c.py", "line": 1,
                                     "name": "all_reduce"},
                                    {"filename": "/job/train.py", "line": 7, "name": "<module>"}]
                                   if stacks else []}
                return pickle.dumps({"version": "2.10",
                                     "pg_config": {"": {"name": "", "desc": "", "ranks": "[0, 1]"}},
                                     "pg_status": {"0": {"last_enqueued_collective": 3 + (rank == 1),
                                                         "last_started_collective": -1,
                                                         "last_completed_collective": 3}},
                                     "entries": [entry]}, protocol=2)
        """),
    # A slow import (the agent's thread looks before it is done), a process
    # group that is up once init_process_group returns; with BACKEND=nccl,
    # torch's own reader: it makes the pipe and answers each ask with its own
    # dump.
    "torch/distributed/__init__.py": textwrap.dedent("""\
        import os, threading, time
        time.sleep(0.5)
        _up = False
        def is_available(): return True
        def is_initialized(): return _up
        def get_rank(): return int(os.environ["RANK"])
        def get_backend(group=None): return os.environ.get("BACKEND", "gloo")
        def _own_reader():
            pipe = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + os.environ["RANK"] + ".pipe"
            os.mkfifo(pipe)
            fd = os.open(pipe, os.O_RDWR)
            def serve():  # every ask, as torch's: training goes on after a dump
                import pickle
                out = os.environ["TORCH_FR_DUMP_TEMP_FILE"] + os.environ["RANK"]
                while os.read(fd, 1):
                    with open(out + ".tmp", "wb") as f:
                        f.write(pickle.dumps({"version": "torch-own", "pg_status": {},
                                              "entries": []}))
                    os.rename(out + ".tmp", out)
            threading.Thread(target=serve, daemon=True).start()
        def init_process_group(*a, **k):
            global _up
            if get_backend() == "nccl": _own_reader()
            _up = True
        """),
}

RANK_SCRIPT = textwrap.dedent("""\
    import os, sys, time
    import torch.distributed as dist
    dist.init_process_group("gloo")
    print("rank", dist.get_rank(), "up", "SITE=" + os.environ.get("USER_SITE_MARK", "-"), flush=True)
    time.sleep(1000)
    """)


class Agent(unittest.TestCase):
    """aml-shim's sitecustomize, on /usr/bin/python3 with a stand-in torch."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = self.tmp.name
        for rel, text in FAKE_TORCH.items():
            path = os.path.join(self.dir, "lib", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        # The user's own sitecustomize, on the user's PYTHONPATH.
        os.makedirs(os.path.join(self.dir, "site"))
        with open(os.path.join(self.dir, "site", "sitecustomize.py"), "w") as f:
            f.write("import os\nos.environ['USER_SITE_MARK'] = 'theirs'\n")
        with open(os.path.join(self.dir, "rank.py"), "w") as f:
            f.write(RANK_SCRIPT)

    def hang(self, *extra, **env):
        logs = os.path.join(self.dir, "logs")
        e = clean_env(PYTHONPATH=os.path.join(self.dir, "site") + ":" + os.path.join(self.dir, "lib"),
                      **env)
        r = run([SHIM, "--nproc-per-node", "2", "--hang-timeout", "4s", "--dump-timeout", "5s",
                 "--log-dir", logs, *extra, PYTHON, os.path.join(self.dir, "rank.py")], env=e,
                timeout=90)
        return r, logs

    def test_it_serves_the_record_mends_it_and_runs_the_users_sitecustomize(self):
        asks = os.path.join(self.dir, "asks-")
        r, logs = self.hang(FAKE_ASKS=asks)
        self.assertEqual(r.returncode, 124, r.stderr)
        # The looks while the job was silent asked for records without stack
        # traces (cheaper); the verdict with them.
        for rank in (0, 1):
            self.assertTrue(os.path.exists(asks + str(rank)), r.stdout + r.stderr)
            said = slurp(asks + str(rank)).split()
            self.assertIn("light", said)
            self.assertEqual(said[-1], "stacks", said)
        # The user's sitecustomize ran; the agent printed nothing of its own.
        self.assertIn("[rank 0] rank 0 up SITE=theirs", r.stdout)
        self.assertIn("[rank 1] rank 1 up SITE=theirs", r.stdout)
        for rank in (0, 1):
            # (Past "Fatal Python error", faulthandler's dump of every thread
            # lists the agent's too: that is the roll-call, not the agent.)
            err = slurp(os.path.join(logs, f"rank-{rank}.stderr"))
            self.assertEqual(err.split("Fatal Python error")[0].strip(), "", err)
        # Rank 1 entered #4 of the default group, rank 0 never did.
        self.assertEqual(culprit_lines(r.stderr), [
            "aml-shim: culprit: rank 0 [node 0, host " + os.uname().nodename + "] never entered "
            "all_reduce #4 [[4]] Float of group 0 (default_pg), which rank 1 entered and waits "
            "in; its last: all_reduce #3 [[4]] Float at <module> (train.py:7)"])
        # Kept as torchfrtrace reads it: pg_config mended to the group's name.
        with open(os.path.join(logs, "fr-attempt1-rank-1"), "rb") as f:
            dump = pickle.load(f)
        self.assertEqual(dump["pg_config"], {"0": {"name": "0", "desc": "default_pg",
                                                   "ranks": "[0, 1]"}})
        self.assertIn(f"read them together with: torchfrtrace {logs} -p fr-attempt1-rank-",
                      r.stderr)
        record = json.loads(slurp(os.path.join(logs, "failure.json")))
        self.assertEqual(record["culprit"]["missing"][0]["rank"], 0)
        self.assertEqual(record["culprit"]["seq"], 4)

    def test_records_whose_stack_traces_come_late_still_name_the_culprit(self):
        # The dumps with stack traces take longer than --dump-timeout (as
        # torch 2.14's first does on a busy node): the records the agent
        # wrote first, without them, name the culprit, and the line says so.
        r, logs = self.hang(FAKE_SLOW_STACKS="30")
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertEqual(culprit_lines(r.stderr), [
            "aml-shim: culprit: rank 0 [node 0, host " + os.uname().nodename + "] never entered "
            "all_reduce #4 [[4]] Float of group 0 (default_pg), which rank 1 entered and waits "
            "in; its last: all_reduce #3 [[4]] Float; no stack traces from ranks 0-1: the dump "
            "with them did not come within --dump-timeout 5 s"])
        record = json.loads(slurp(os.path.join(logs, "failure.json")))
        self.assertEqual([n["rank"] for n in record["culprit"]["no_stacks"]], [0, 1])
        with open(os.path.join(logs, "fr-attempt1-rank-1"), "rb") as f:
            self.assertEqual(pickle.load(f)["entries"][0]["frames"], [])

    def test_ranks_killed_in_the_dump_with_stack_traces_are_judged_on_their_first_records(self):
        # Each rank dies (SIGKILL) inside the dump with stack traces the
        # verdict asked for, after the agent wrote its first record without
        # them: once every rank asked has ended, the first records answer at
        # once and the line says why (before: "no record" from either, the
        # agent's mark standing, after --dump-timeout).
        r, logs = self.hang(FAKE_DIE_IN_STACKS="1")
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertEqual(culprit_lines(r.stderr), [
            "aml-shim: culprit: rank 0 [node 0, host " + os.uname().nodename + "] never entered "
            "all_reduce #4 [[4]] Float of group 0 (default_pg), which rank 1 entered and waits "
            "in; its last: all_reduce #3 [[4]] Float; no stack traces from ranks 0-1: the rank "
            "ended before the dump with them was written"])

    def test_a_looks_record_written_late_is_not_the_verdicts(self):
        # Each look's record takes the agent 3 s (as on a busy node), so the
        # verdict's ask comes while one is being written: the look's goes
        # where looks' go (<dump>.light), and the verdict's records are the
        # ones asked for, with stack traces. (In a CI run the look's, landing
        # on the dump after the verdict's ask, was taken for rank 0's answer:
        # the line did not say its stack traces were missing. Here the agent
        # answers the verdict within milliseconds of the look's record, which
        # the old harvest rarely caught; flight/fr_harvest_test.cc holds the
        # rule.)
        r, logs = self.hang(FAKE_SLOW_LOOKS="3")
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertEqual(culprit_lines(r.stderr), [
            "aml-shim: culprit: rank 0 [node 0, host " + os.uname().nodename + "] never entered "
            "all_reduce #4 [[4]] Float of group 0 (default_pg), which rank 1 entered and waits "
            "in; its last: all_reduce #3 [[4]] Float at <module> (train.py:7)"])

    def raising_rank(self, tag, **env):
        """Rank 1 with aml-shim's agent (a copy, as its sitecustomize) that
        raises 3 s after its process group is up, as a Gloo rank whose peer
        died does; its files' names begin with `tag`. Its command, its
        environment (with `env`) and its dump's prefix."""
        agent = os.path.join(self.dir, "agent")
        script = os.path.join(self.dir, "raises.py")
        if not os.path.isdir(agent):
            os.makedirs(agent)
            shutil.copy(os.path.join(SRC, "launch", "flight", "fr_agent.py"),
                        os.path.join(agent, "sitecustomize.py"))
            with open(script, "w") as f:
                f.write("import time\nimport torch.distributed as dist\n"
                        "dist.init_process_group('gloo')\ntime.sleep(3)\n"
                        "raise RuntimeError('Connection closed by peer')\n")
        dump = os.path.join(self.dir, tag + "dump-rank-")
        return [PYTHON, script], clean_env(
            RANK="1", TORCH_NCCL_DEBUG_INFO_PIPE_FILE=os.path.join(self.dir, tag + "pipe-rank-"),
            TORCH_FR_DUMP_TEMP_FILE=dump,
            PYTHONPATH=":".join([agent, os.path.join(self.dir, "site"),
                                 os.path.join(self.dir, "lib")]), **env), dump

    def test_a_rank_that_an_exception_ends_leaves_its_record(self):
        # A Gloo rank whose peer died raises from its collective and ends
        # before anyone asks: the agent writes its record as the exception
        # ends it; the hook that was there still prints the traceback.
        cmd, env, dump = self.raising_rank("")
        r = run(cmd, env=env, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("RuntimeError: Connection closed by peer", r.stderr)
        with open(dump + "1.exit", "rb") as f:  # the record written as it ended
            record = pickle.load(f)
        self.assertEqual(record["pg_config"]["0"]["desc"], "default_pg")
        self.assertEqual(record["pg_status"]["0"]["last_enqueued_collective"], 4)

        # Asked for its record with stack traces just before (its node's
        # other rank failed first), the agent's thread is in its first dump,
        # its mark standing, as the exception comes: the rank's end waits
        # for that dump, and no mark is left behind (before: the rank ended
        # with the thread cut off, its mark stood, and aml-shim took the
        # record for one still to come: "no flight record from rank 4: no
        # record", test_culprit.py's OnNodes test in a CI run).
        cmd, env, dump = self.raising_rank("asked-", FAKE_SLOW_AGENT_STACKS="3")
        p = spawn(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            pipe = env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + "1.pipe"
            for _ in range(300):
                if os.path.exists(pipe) or p.poll() is not None:
                    break
                time.sleep(0.01)
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, b"1")
            os.close(fd)
            _, err = p.communicate(timeout=60)
        finally:
            p.kill()
            p.wait()
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("RuntimeError: Connection closed by peer", err)
        self.assertFalse(os.path.exists(dump + "1.more"), "the agent's mark was left standing")
        with open(dump + "1.exit", "rb") as f:  # the record written as it ended
            record = pickle.load(f)
        self.assertEqual(record["entries"][0]["frames"][-1]["name"], "<module>")

    def test_an_exceptions_record_waits_for_no_symbolizing(self):
        # With no dump with stack traces written before, the exception's
        # record is written without them: symbolizing them (torch 2.14
        # imports torch._inductor, seconds on a busy node) held the rank's
        # end and, under the agent's lock, its thread's quick record for
        # the ask that came meanwhile (8 ranks of a failed job on 2 busy
        # cores in a CI run: one rank's record came after --dump-timeout
        # and the verdict said it had none). Here symbolizing never ends:
        # the rank still ends at once, its record saying where it waited.
        cmd, env, dump = self.raising_rank("", FAKE_SLOW_STACKS="600")
        r = run(cmd, env=env, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("RuntimeError: Connection closed by peer", r.stderr)
        with open(dump + "1.exit", "rb") as f:  # the record written as it ended
            record = pickle.load(f)
        self.assertEqual(record["pg_status"]["0"]["last_enqueued_collective"], 4)
        self.assertEqual(record["entries"][0]["frames"], [])

    def test_torchs_own_reader_is_left_to_serve(self):
        r, logs = self.hang(BACKEND="nccl")
        self.assertEqual(r.returncode, 124, r.stderr)
        with open(os.path.join(logs, "fr-attempt1-rank-0"), "rb") as f:
            self.assertEqual(pickle.load(f)["version"], "torch-own")

    def test_a_torch_with_no_recorder_is_said_once(self):
        r, logs = self.hang(FAKE_NO_FR="1")
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertEqual(culprit_lines(r.stderr), [
            "aml-shim: no culprit: no rank's flight record came; no flight record from ranks "
            "0-1: torch 2.14.0 has no flight recorder"])

    def test_off_sets_nothing(self):
        r, logs = self.hang("--flight-recorder", "off")
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertEqual(culprit_lines(r.stderr), [])
        e = clean_env(PYTHONPATH="/mine")
        shown = run([SHIM, "env", "--hang-timeout", "1m", "--flight-recorder", "off"], env=e)
        for name in ("TORCH_FR_", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "PYTHONPATH"):
            self.assertNotIn(name, shown.stdout)
        self.assertIn("PYTHONPATH", run([SHIM, "env", "--explain", "--hang-timeout", "1m"],
                                        env=e).stdout)

    def test_env_explain_says_a_users_variable_stands(self):
        e = clean_env(TORCH_FR_BUFFER_SIZE="0")
        r = run([SHIM, "env", "--explain", "--hang-timeout", "1m"], env=e)
        self.assertEqual(r.returncode, 0, r.stderr)
        line = [l for l in r.stdout.splitlines() if "TORCH_FR_BUFFER_SIZE" in l]
        self.assertTrue(line and "set by the user" in line[0], r.stdout)
        self.assertRegex(r.stdout, r"TORCH_NCCL_DEBUG_INFO_PIPE_FILE.*fr-0/pipe-rank-")


class StandInRas:
    """A stand-in for NCCL's RAS socket (localhost:28028 on a node with
    NCCL 2.24 on): it answers the exchange ncclras speaks
    (tests/fixtures/flight/README.md) with `report`, for each client."""

    def __init__(self, report):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.heard = []
        self.report = report
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c, c.makefile("rwb") as f:
                for line in f:
                    line = line.decode().strip()
                    self.heard.append(line)
                    if line == "STATUS":
                        f.write(self.report.encode())
                        break
                    f.write(b"SERVER PROTOCOL 2\n" if line.startswith("CLIENT") else b"OK\n")
                    f.flush()

    def close(self):
        self.sock.close()


class Ras(Agent):
    """NCCL's RAS socket asked at the verdict, beside the flight records."""

    def test_what_rass_socket_says_is_in_the_roll_call(self):
        report = json.dumps({"nccl_version": "2.28.9", "communicators": [{
            "hash": "0x1", "size": 2, "missing_ranks": [{"rank": 1, "host": "10.0.0.2"}],
            "ranks": [{"rank": 0, "host": "10.0.0.1", "status": {"async_error": 0},
                       "collective_counts": {"AllReduce": 4}}]}]})
        ras = StandInRas(report)
        self.addCleanup(ras.close)
        r, logs = self.hang(NCCL_RAS_ADDR=ras.addr)
        self.assertEqual(r.returncode, 124, r.stderr)
        line = ("aml-shim: NCCL RAS (NCCL 2.28.9): communicator 0x1 of 2 ranks: rank 1 missing "
                "(NCCL cannot reach them: 10.0.0.2)")
        self.assertIn(line + "\n", r.stderr)
        self.assertEqual(r.stderr.count("NCCL RAS"), 1, r.stderr)
        self.assertEqual(ras.heard[:4], ["CLIENT PROTOCOL 2", "TIMEOUT 5", "SET FORMAT json",
                                         "STATUS"])
        record = json.loads(slurp(os.path.join(logs, "failure.json")))
        self.assertEqual(record["nccl_ras"], [line])

    # (The Agent tests are not run again here.)
    test_it_serves_the_record_mends_it_and_runs_the_users_sitecustomize = None
    test_a_looks_record_written_late_is_not_the_verdicts = None
    test_torchs_own_reader_is_left_to_serve = None
    test_a_torch_with_no_recorder_is_said_once = None
    test_off_sets_nothing = None
    test_env_explain_says_a_users_variable_stands = None


class OldTorch(unittest.TestCase):
    """torch 1.13 (this machine's): no recorder; the roll-call, and why."""

    def test_the_roll_call_and_why_there_is_no_culprit(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "2", "--hang-timeout", "6s", PYTHON, SKIP],
                    env=clean_env(SKIP_RANK="1", SKIP_AT="3", MASTER_PORT=free_port()),
                    timeout=120)
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertRegex(r.stderr, r"aml-shim:   rank 1 \[node 0, host [^]]+\] in <module> "
                                   r"\(skip_collective.py:\d+\)")
        self.assertEqual(culprit_lines(r.stderr), [
            "aml-shim: no culprit: no rank's flight record came; no flight record from ranks "
            "0-1: torch 1.13.0a0 has no flight recorder"])


class Progress(unittest.TestCase):
    """Progress beyond output: torch 2.14 in the forky root, on this machine."""

    @classmethod
    def setUpClass(cls):
        require("unshare", "chroot", "debootstrap")
        require_namespaces("--mount", why="a mount namespace")
        cls.root = forky_root()

    def test_a_silent_job_whose_collectives_advance_outlives_the_hang_timeout(self):
        # 45 s of all-reduces with no output under --hang-timeout 12s: the
        # records are looked at every 4 s, each look finds collectives done.
        # Without the recorder the same job is judged hung.
        for recorder, code in (("auto", 0), ("off", 124)):
            with self.subTest(flight_recorder=recorder):
                env = clean_env(USE_LIBUV="0", SILENT_S="45", MASTER_PORT=free_port(),
                                AML_ROOT_BINDS=":".join(sorted({SRC, os.path.dirname(
                                    os.path.abspath(SHIM))})))
                r = run([IN_ROOT, self.root, os.path.abspath(SHIM), "--nproc-per-node", "2",
                         "--hang-timeout", "12s", "--flight-recorder", recorder, "python3", SKIP],
                        env=env, timeout=240)
                self.assertEqual(r.returncode, code, r.stdout + r.stderr)
                if code == 0:
                    self.assertIn("[rank 1] rank 1 done", r.stdout)
                    self.assertNotIn("hung", r.stderr)


    def test_a_silent_preparation_after_the_group_is_up_is_a_start_not_a_hang(self):
        # Two ranks join their group, then prepare data in silence for 25 s
        # before their first all-reduce (as DDP's constructor importing
        # torch._dynamo on a busy node), beside a CPU hog per core, under
        # --hang-timeout 9s: their CPU time is progress until a record shows
        # them in a collective (before: 124 at 9 s, "no culprit"). The first
        # 20 s of it in C code that holds the GIL (a tokenizer, pandas), so
        # that the agent's thread cannot answer a look for its record: the
        # CPU time is read all the same (before: only once the look's dumps
        # were done or given up on, 10 s later: 124 at 9 s; in CI the same
        # came of an agent that got no core in time).
        env = clean_env(USE_LIBUV="0", MASTER_PORT=free_port(), PREP_S="25",
                        PREP_AFTER_GROUP="1", PREP="gil", GIL_S="20", AML_ROOT_BINDS=":".join(sorted({SRC, os.path.dirname(
                            os.path.abspath(SHIM))})))
        with CpuHogs():
            r = run([IN_ROOT, self.root, os.path.abspath(SHIM), "--nproc-per-node", "2",
                     "--hang-timeout", "9s", "python3", QUIET_START], env=env, timeout=240)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(r.stdout.splitlines()),
                         ["[rank 0] rank 0 sum 1", "[rank 1] rank 1 sum 1"])
        self.assertNotIn("hung", r.stderr)

    def test_a_failure_says_where_the_other_ranks_waited(self):
        # Rank 3 exits 1 while the others wait in all_reduce #6: their
        # records, taken before they are ended, say so (a Gloo rank whose
        # peer died may mark the collective completed: "were last in").
        with tempfile.TemporaryDirectory(dir="/tmp") as logs:
            env = clean_env(USE_LIBUV="0", MASTER_PORT=free_port(), SKIP_RANK="3",
                            SKIP_EXITS="1", AML_ROOT_BINDS=":".join(sorted({SRC, "/tmp", os.path.dirname(
                                os.path.abspath(SHIM))})))
            r = run([IN_ROOT, self.root, os.path.abspath(SHIM), "--nproc-per-node", "4",
                     "--hang-timeout", "60s", "--log-dir", logs, "python3", SKIP],
                    env=env, timeout=240)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stderr, r"\naml-shim: rank 3 failed \(exit status 1\) while ranks "
                                       r"0-2 (waited|were last) in all_reduce #6 \[\[4\]\] Float "
                                       r"of group 0 \(default_pg\)\n")
            waited = json.loads(slurp(os.path.join(logs, "failure.json")))["waited"]
            self.assertEqual(waited["failed_rank"], 3)
            self.assertEqual([(i["ranks"], i["seq"], i["op"]) for i in waited["in"]],
                             [("0-2", 6, "all_reduce")])


class OnNodes(unittest.TestCase):
    """torch 2.14 (Gloo) in the forky root, on network-namespace nodes."""

    @classmethod
    def setUpClass(cls):
        forky_nodes(cls, CLUSTER, 5, SUBNET)

    def job(self, nodes, *shim_args, script=SKIP, script_args=(), timeout=300, **env):
        """One shim per node (nodes 1..`nodes`) under mpirun, each in the
        forky root under its node's name."""
        return forky_mpirun(self.root, self.agent, CLUSTER, NET, nodes, 2,
                            [*shim_args, "python3", script, *script_args], timeout=timeout,
                            **env)

    def test_the_verdict_names_the_collective_the_rank_its_node_and_host(self):
        with tempfile.TemporaryDirectory(dir="/tmp") as logs:
            # The verdict's stack traces: each of the 8 ranks' first dump with
            # them imports torch._inductor (about 1 s of a core), all at once
            # on the 2 cores the other tests share: past the default 10 s in
            # a CI run (the culprit then named without its place, as
            # test_records_whose_stack_traces_come_late_still_name_the_culprit
            # shows). This test is about the place: it waits for it.
            r = self.job(4, "--hang-timeout", "20s", "--dump-timeout", "40s", "--log-dir", logs,
                         SKIP_RANK="5")
            self.assertEqual(r.returncode, 124, r.stdout + r.stderr)
            # Rank 5 is NODE_RANK 2's second rank: the third node, amlf3.
            lines = culprit_lines(r.stderr)
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertRegex(lines[0],
                             r"^aml-shim: culprit: rank 5 \[node 2, host amlf3\] never entered "
                             r"all_reduce #6 \[\[4\]\] Float of group 0 \(default_pg\), which ranks "
                             r"0-4,6-7 entered and wait in; its last: all_reduce #5 \[\[4\]\] Float "
                             r"at <module> \(skip_collective.py:\d+\)$")
            record = json.loads(slurp(os.path.join(logs, "failure.json")))
            c = record["culprit"]
            self.assertEqual((c["group"], c["seq"], c["op"], c["node"], c["host"]),
                             ("0", 6, "all_reduce", 2, "amlf3"))
            self.assertEqual([m["rank"] for m in c["missing"]], [5])
            # Every rank's dump, kept as torchfrtrace reads them.
            kept = sorted(f for f in os.listdir(logs) if f.startswith("fr-attempt1-rank-"))
            self.assertEqual(kept, [f"fr-attempt1-rank-{i}" for i in range(8)])
            fr = run([IN_ROOT, self.root, "torchfrtrace", logs, "-p", "fr-attempt1-rank-"],
                     env=clean_env(AML_ROOT_BINDS="/tmp"), timeout=120)
            self.assertEqual(fr.returncode, 0, fr.stdout + fr.stderr)
            self.assertIn("Not all ranks joining collective, sequence number: 6", fr.stdout + fr.stderr)
            self.assertIn("missing ranks: {5}", fr.stdout + fr.stderr)

    def test_a_failure_on_one_node_says_where_the_ranks_of_every_node_waited(self):
        # Rank 5 (the third node's second) exits 1 while the others wait in
        # all_reduce #6: every shim takes its ranks' records before ending
        # them, and rank 0's verdict names where they were.
        with tempfile.TemporaryDirectory(dir="/tmp") as logs:
            r = self.job(4, "--hang-timeout", "60s", "--log-dir", logs, SKIP_RANK="5",
                         SKIP_EXITS="1")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stderr, r"aml-shim: rank 5 failed \(exit status 1\) while ranks "
                                       r"0-4,6-7 (waited|were last) in all_reduce #6 \[\[4\]\] "
                                       r"Float of group 0 \(default_pg\)\n")
            waited = json.loads(slurp(os.path.join(logs, "failure.json")))["waited"]
            self.assertEqual([(i["ranks"], i["seq"]) for i in waited["in"]], [("0-4,6-7", 6)])

    def test_ranks_that_never_answer_or_answer_badly_are_named_and_harm_nothing(self):
        # Rank 2 never answers its pipe, rank 6 answers with 80 MiB, rank 3
        # with garbage; rank 5 skips #6: still named, within the timeout.
        # (15 s: torch 2.14's first dump with stack traces imports
        # torch._inductor, about a second of a core per rank; on CI's 2
        # busy cores 4 s once left every rank unheard.)
        for bad in ("huge", "garbage"):
            with self.subTest(dump=bad):
                bad_rank = "6" if bad == "huge" else "3"
                r = self.job(4, "--hang-timeout", "20s", "--dump-timeout", "15s", SKIP_RANK="5",
                             SILENT_PIPE_RANK="2", BAD_DUMP_RANK=bad_rank, BAD_DUMP=bad)
                self.assertEqual(r.returncode, 124, r.stdout + r.stderr)
                lines = culprit_lines(r.stderr)
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn("aml-shim: culprit: rank 5 [node 2, host amlf3] never entered "
                              "all_reduce #6", lines[0])
                # Rank 2 is named as having no record: it never answered
                # within --dump-timeout, or it ended first (the other
                # nodes, their dumps taken, end their ranks for their
                # stacks, and its Gloo peers go with them): once every
                # rank of its node has ended, what is awaited is settled.
                self.assertRegex(lines[0], r"rank 2: (no dump within --dump-timeout 15 s|it "
                                           r"ended before its record came)")
                if bad == "huge":
                    self.assertIn("rank 6: its dump is 80 MiB, over the cap of 64 MiB: not read",
                                  lines[0])
                else:
                    self.assertIn("rank 3: its dump is broken: not a flight-recorder dump:",
                                  lines[0])

    def test_the_culprits_node_is_retired_and_the_spare_takes_its_place_warm(self):
        # DDP whose NODE_RANK 2 (the third node's address) hangs in every
        # attempt: the hang names it, --retire-after 1 retires it, the spare
        # (the fifth node) takes NODE_RANK 2, and the job ends as an
        # undisturbed one. With --warm-restart: every rank of the next
        # attempt, the spare's too, starts from its node's standbys.
        with tempfile.TemporaryDirectory(dir="/tmp") as ckpt, \
                tempfile.TemporaryDirectory(dir="/tmp") as clean:
            calm = self.job(4, script=CKPT, CKPT_DIR=clean, FAIL_RANK="-1")
            self.assertEqual(calm.returncode, 0, calm.stdout + calm.stderr)
            weights = re.findall(r"final weights ([0-9a-f]{64})", calm.stdout)
            self.assertEqual(len(weights), 1, calm.stdout)
            r = self.job(5, "--hang-timeout", "30s", "--max-restarts", "2", "--spares", "1",
                         "--retire-after", "1", "--warm-restart", script=CKPT, timeout=600,
                         CKPT_DIR=ckpt, FAIL_RANK="-1", BAD_NODE_ADDR=f"{NET}.3",
                         BAD_NODE_HANGS="1", BEAT="1")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stderr, r"aml-shim: culprit: rank 4 \[node 2, host amlf3\] never "
                                       r"entered ")
            self.assertIn("NODE_RANK 2 moves to rank 4's shim on amlf5", r.stderr)
            # Nodes 1, 2 and 4, and the spare in node 3's place.
            self.assertEqual(r.stderr.count("aml-shim: --warm-restart: 2 of 2 ranks started from "
                                            "their standbys"), 4, r.stderr)
            self.assertNotIn("starts cold", r.stderr)
            self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", r.stdout), weights)


if __name__ == "__main__":
    main()
