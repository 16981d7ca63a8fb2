"""The job-wide control plane (--fail-fast job, --hang-timeout): a hang is
judged for the whole job and its roll-call names the stuck rank; a failure on
one shim ends the others whatever the launcher does; a shim that dies ends the
job. Real PyTorch DDP over Gloo, real mpirun, and shims started side by side
as a launcher that lets the other tasks run on would start them."""
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from harness import (PYTHON, SHIM, SRC, clean_env, free_port, kill_group, main, mpirun,
                     recorded, require, run, slurp, spawn, wait_for)

SCRIPTS = os.path.join(SRC, "tests", "e2e", "scripts")
HANG = os.path.join(SCRIPTS, "hang_ddp.py")
TALK = os.path.join(SCRIPTS, "talk.py")


def line_of(path, mark):
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if f"# mark: {mark}" in line:
                return i
    raise AssertionError(f"no mark {mark} in {path}")


HANG_LINE = line_of(HANG, "hang")
REDUCE_LINE = line_of(HANG, "all_reduce")


def leftovers(token):
    """Processes whose command line holds `token` (this test's own)."""
    r = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def commands_with(token):
    """Pids of the commands (not the shims) whose arguments hold `token`."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0] == PYTHON.encode() and token.encode() in argv:
            pids.append(int(pid))
    return pids


class HangWatchdog(unittest.TestCase):
    def setUp(self):
        require("mpirun", PYTHON)

    def assert_roll_call(self, text, host_re=r"[^\]]+"):
        # Said once, by rank 0's shim.
        self.assertEqual(text.count("aml-shim: hung: no rank of the job wrote any output for"), 1,
                         text)
        crowd = re.search(r"aml-shim:   3 ranks \(0-1,3\) \[(.*?)\] in all_reduce "
                          r"\(distributed_c10d\.py:\d+\) < main \(hang_ddp\.py:(\d+)\)", text)
        self.assertIsNotNone(crowd, text)
        self.assertEqual(int(crowd.group(2)), REDUCE_LINE)
        stuck = re.search(r"aml-shim:   rank 2 \[node (\d+), host (" + host_re +
                          r")\] in main \(hang_ddp\.py:(\d+)\)", text)
        self.assertIsNotNone(stuck, text)
        self.assertEqual(int(stuck.group(3)), HANG_LINE)
        return stuck

    def assert_stacks_logged(self, log_dir):
        for r in range(4):
            stack = slurp(f"{log_dir}/rank-{r}.stack")
            self.assertIn("Fatal Python error: Aborted", stack)
            self.assertIn(f'hang_ddp.py", line {HANG_LINE if r == 2 else REDUCE_LINE} in main',
                          stack)
        import json
        hang = json.loads(slurp(f"{log_dir}/failure.json"))["hang"]
        self.assertEqual([g["ranks"] for g in hang["groups"]], [[0, 1, 3], [2]])

    def test_one_node_hang_names_the_stuck_rank(self):
        with tempfile.TemporaryDirectory() as tmp:
            token = f"{tmp}/hang_ddp.py"
            os.symlink(HANG, token)
            r = run([SHIM, "--nproc-per-node", "4", "--hang-timeout", "20s", "--log-dir",
                     f"{tmp}/logs", "--", PYTHON, token],
                    env=clean_env(MASTER_PORT=free_port()), timeout=240)
            self.assertEqual(r.returncode, 124, r.stdout + r.stderr)
            stuck = self.assert_roll_call(r.stderr.replace(token, HANG))
            self.assertEqual(stuck.group(1), "0")
            self.assertEqual(stuck.group(2), os.uname().nodename)
            self.assert_stacks_logged(f"{tmp}/logs")
            self.assertEqual(leftovers(token), [])

    def test_two_shims_of_two_under_mpirun_every_shim_exits_124(self):
        with tempfile.TemporaryDirectory() as tmp:
            token = f"{tmp}/hang_ddp.py"
            os.symlink(HANG, token)
            os.mkdir(f"{tmp}/marks")
            cmd = recorded(f"{tmp}/marks", "OMPI_COMM_WORLD_RANK",
                           f"{SHIM} --nproc-per-node 2 --hang-timeout 20s --log-dir {tmp}/logs "
                           f"-- {PYTHON} {token}")
            r = run(mpirun(2, "sh", "-c", cmd), timeout=240)
            shim0, shim1 = slurp(f"{tmp}/marks/rank-0"), slurp(f"{tmp}/marks/rank-1")
            self.assertTrue(shim0.endswith("exit 124\n"), shim0)
            self.assertTrue(shim1.endswith("exit 124\n"), shim1)
            self.assert_roll_call(shim0)
            # The other shim says where the roll-call is, in one line.
            self.assertIn("aml-shim: stopped: the job was hung (no output for", shim1)
            self.assertNotIn("hung: no rank", shim1)
            self.assert_stacks_logged(f"{tmp}/logs")
            self.assertEqual(leftovers(token), [])

    def test_a_native_rank_gets_its_native_stack(self):
        # Not Python: its frames come from gdb (or eu-stack), read while it
        # still stands where it hung.
        require("gdb")
        with tempfile.TemporaryDirectory() as tmp:
            r = run([SHIM, "--nproc-per-node", "2", "--hang-timeout", "3s", "--log-dir",
                     f"{tmp}/logs", "--", "sleep", "1000"], timeout=120)
            self.assertEqual(r.returncode, 124, r.stderr)
            self.assertRegex(r.stderr, r"aml-shim:   2 ranks \(0-1\) \[node 0, host [^\]]+\] "
                                       r"in \S*nanosleep",
                             slurp(f"{tmp}/logs/rank-0.stack"))
            self.assertIn("nanosleep", slurp(f"{tmp}/logs/rank-1.stack"))

    def test_the_shim_serves_signals_while_a_stack_reader_is_slow(self):
        # A stack reader that takes its time (gdb loading a large binary's
        # symbols) must not freeze the shim: a SIGTERM from the launcher
        # meanwhile reaches the ranks at once. The reader here (an eu-stack
        # first on PATH) waits for a rank's TERM handler, and the handler for
        # the reader to have seen it: both happen only if the shim forwarded
        # the signal while the reader read (a shim blocked on its readers
        # kills them unanswered after 10 s, then aborts the ranks).
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(f"{tmp}/bin")
            wait = 'i=0; while [ ! -e "$MARKS/{0}" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done'
            with open(f"{tmp}/bin/eu-stack", "w") as f:
                # Its stack is in the pipe before the rank may end.
                f.write('#!/bin/sh\ntouch "$MARKS/reading"\n' + wait.format("term") + "\n"
                        '[ -e "$MARKS/term" ] || exit 0\n'
                        'echo "TID $2:"; echo "#0  0x0000000000001000 after_the_term_handler"\n'
                        'touch "$MARKS/seen"\n')
            os.chmod(f"{tmp}/bin/eu-stack", 0o755)
            env = clean_env(MARKS=tmp, PATH=f"{tmp}/bin:" + os.environ["PATH"])
            handler = 'touch "$MARKS/term"; ' + wait.format("seen") + "; exit 143"
            p = spawn([SHIM, "--nproc-per-node", "2", "--hang-timeout", "2s", "--log-dir",
                       f"{tmp}/logs", "--", "sh", "-c",
                       f"trap '{handler}' TERM; echo up; while :; do sleep 0.1; done"],
                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.addCleanup(kill_group, p)
            self.assertTrue(wait_for(lambda: os.path.exists(f"{tmp}/reading"), 60),
                            "no stack reader started")
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=60)
            # The verdict came first: the job ends as hung.
            self.assertEqual(p.returncode, 124, err)
            self.assertTrue(os.path.exists(f"{tmp}/seen"), "the reader never saw the TERM "
                            "handler run:\n" + err)
            self.assertIn("after_the_term_handler", slurp(f"{tmp}/logs/rank-0.stack") +
                          slurp(f"{tmp}/logs/rank-1.stack"), err)

    def test_one_rank_per_shim_that_keeps_talking_is_never_hung(self):
        # Per-process launch (one child per shim): its output must reach the
        # watchdog too, although it is not tagged.
        env = clean_env(PERIOD="1", COUNT="12", ONLY_RANK="1")
        r = run(mpirun(2, "-x", "PERIOD", "-x", "COUNT", "-x", "ONLY_RANK", SHIM,
                       "--hang-timeout", "6s", "--", PYTHON, TALK), env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("hung", r.stderr)

    def test_a_job_that_keeps_talking_is_never_hung(self):
        # Only the last rank prints, on the other shim: rank 0's shim hears
        # it through the heartbeats alone.
        env = clean_env(PERIOD="1", COUNT="16", ONLY_RANK="3")
        r = run(mpirun(2, "-x", "PERIOD", "-x", "COUNT", "-x", "ONLY_RANK", SHIM,
                       "--nproc-per-node", "2", "--hang-timeout", "8s", "--", PYTHON, TALK),
                env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("hung", r.stderr)
        self.assertEqual(r.stdout.count("rank 3 still working"), 16, r.stdout)


class SideBySide(unittest.TestCase):
    """Two shims started as separate tasks that nothing else ends (srun
    without --kill-on-bad-exit, a container per node): only the control plane
    can end the job."""

    def start(self, tmp, *shim_args, command):
        port = free_port()
        procs = []
        for rank in range(2):
            env = clean_env(RANK=rank, WORLD_SIZE=2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            out = open(f"{tmp}/shim-{rank}.err", "w")
            procs.append(spawn([SHIM, "--nproc-per-node", "2", *shim_args, "--", *command],
                               env=env, stdout=subprocess.DEVNULL, stderr=out))
            self.addCleanup(kill_group, procs[-1])
            self.addCleanup(out.close)
        return procs

    def test_a_failure_on_one_shim_ends_the_other_and_is_printed_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = (f"import os,sys,time; r=int(os.environ['RANK']); "
                      f"time.sleep(1) if r == 3 else time.sleep(300); "
                      f"print('rank 3 gives up', file=sys.stderr); sys.exit(3)")
            procs = self.start(tmp, "--fail-fast", "job", command=[PYTHON, "-c", script])
            codes = [p.wait(timeout=60) for p in procs]
            self.assertEqual(codes, [3, 3])
            err0, err1 = slurp(f"{tmp}/shim-0.err"), slurp(f"{tmp}/shim-1.err")
            # Rank 0's shim prints the job's first failure, from the other shim.
            self.assertIn("aml-shim: first failure: rank 3 (local rank 1, node 1", err0)
            self.assertIn("| rank 3 gives up", err0)
            self.assertEqual((err0 + err1).count("==== job failed ===="), 1, err0 + err1)
            self.assertIn("aml-shim: rank 3 failed (exit status 3): the job's first failure; "
                          "rank 0's shim (on", err1)

    def test_without_the_control_plane_the_other_shim_runs_on(self):
        # What the control plane changes: without it the healthy shim's ranks
        # wait (here: sleep) until something else ends them.
        with tempfile.TemporaryDirectory() as tmp:
            script = ("import os,sys,time; r=int(os.environ['RANK']); "
                      "sys.exit(3) if r == 3 else time.sleep(300)")
            procs = self.start(tmp, command=[PYTHON, "-c", script])
            self.assertEqual(procs[1].wait(timeout=60), 3)
            time.sleep(3)
            self.assertIsNone(procs[0].poll())

    def test_a_shim_killed_mid_job_ends_the_job(self):
        with tempfile.TemporaryDirectory() as tmp:
            token = os.path.basename(tmp) + "-sleeper"
            procs = self.start(tmp, "--fail-fast", "job",
                               command=[PYTHON, "-c", "import time; time.sleep(300)", token])
            # Both shims joined and started their children.
            self.assertTrue(wait_for(lambda: len(commands_with(token)) == 4, 60),
                            f"commands {commands_with(token)}, shims {[p.poll() for p in procs]}:\n"
                            + slurp(f"{tmp}/shim-0.err") + slurp(f"{tmp}/shim-1.err"))
            procs[1].send_signal(signal.SIGKILL)
            self.assertEqual(procs[0].wait(timeout=60), 125)
            err0 = slurp(f"{tmp}/shim-0.err")
            self.assertIn("aml-shim: the control plane lost rank 1's shim on", err0)
            # (closed; reset when a beat to it was still unread)
            self.assertRegex(err0, r"\((closed|Connection reset by peer)\): ending the job")
            # Its keeper ended its children; rank 0's shim ended its own.
            self.assertTrue(wait_for(lambda: commands_with(token) == [], 30))

    def test_a_stranger_at_the_door_cannot_join_or_stop_the_job(self):
        with tempfile.TemporaryDirectory() as tmp:
            port = free_port()
            env = clean_env(RANK=0, WORLD_SIZE=2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                            AML_SHIM_JOB_SECRET="s3cret-of-this-job-0123")
            out = open(f"{tmp}/shim-0.err", "w")
            self.addCleanup(out.close)
            p = spawn([SHIM, "--fail-fast", "job", "--preflight-timeout", "8", "--", PYTHON,
                       "-c", "print('ran')"], env=env, stdout=subprocess.PIPE, stderr=out)
            self.addCleanup(kill_group, p)
            import socket
            import struct
            # As a shim would: a greeting, the door's challenge, then a join
            # whose proof answers nothing.
            hi = b'{"t":"hi"}'
            forged = (b'{"t":"join","v":"aml-shim-control-3","rank":1,"size":2,"port":9,'
                      b'"host":"x","nonce":"n1","proof":"-"}')

            def frame(s):
                head = s.recv(4, socket.MSG_WAITALL)
                return s.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)

            answer = b""
            for _ in range(100):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                        s.sendall(struct.pack(">I", len(hi)) + hi)
                        self.assertIn(b'"t":"challenge"', frame(s))
                        s.sendall(struct.pack(">I", len(forged)) + forged)
                        answer = frame(s)
                        break
                except OSError:
                    time.sleep(0.05)
            self.assertIn(b'"refused"', answer)
            self.assertIn(b"without this job's proof", answer)
            # Nobody real joined: rank 0 refuses to start, exit 125.
            self.assertEqual(p.wait(timeout=60), 125)
            self.assertEqual(p.stdout.read(), b"")
            err = slurp(f"{tmp}/shim-0.err")
            self.assertIn("aml-shim: control plane: rank 1 of 2 shims did not join rank 0 at "
                          f"127.0.0.1:{port} within 8 s (--preflight-timeout); 1 connection(s) "
                          "without this job's proof were refused", err)


if __name__ == "__main__":
    main()
