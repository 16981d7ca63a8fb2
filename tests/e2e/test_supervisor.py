"""Per-node launch and supervision: fan-out rank math, fail-fast teardown,
signal forwarding, PID 1 reaping, tagged output and per-rank logs."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

from harness import (require_namespaces, PYTHON, SHIM, alive, clean_env, main, mpirun, require, run, slurp, spawn,
                     wait_for)

SHOW = ('echo "{\\"rank\\":$RANK,\\"size\\":$WORLD_SIZE,\\"local\\":$LOCAL_RANK,'
        '\\"local_size\\":$LOCAL_WORLD_SIZE,\\"group\\":$GROUP_RANK,\\"groups\\":$GROUP_WORLD_SIZE,'
        '\\"node\\":$NODE_RANK,\\"omp\\":\\"$OMP_NUM_THREADS\\",\\"unbuf\\":\\"$PYTHONUNBUFFERED\\",'
        '\\"port\\":$MASTER_PORT}"')
TAG = re.compile(r"^\[rank (\d+)\]([+\\]?) (.*)$", re.S)


class Supervisor(unittest.TestCase):
    def setUp(self):
        require("mpirun")
        self.tmp = tempfile.mkdtemp(prefix="aml-sup-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_per_node_world_under_mpirun(self):
        r = run(mpirun(2, SHIM, "--nproc-per-node", "3", "--", "sh", "-c", SHOW))
        self.assertEqual(r.returncode, 0, r.stderr)
        docs = []
        for line in r.stdout.splitlines():
            m = TAG.match(line)
            self.assertIsNotNone(m, f"untagged line: {line!r}")
            doc = json.loads(m.group(3))
            self.assertEqual(int(m.group(1)), doc["rank"])
            docs.append(doc)
        docs.sort(key=lambda d: d["rank"])
        self.assertEqual([d["rank"] for d in docs], list(range(6)))
        for d in docs:
            self.assertEqual(d["size"], 6)
            self.assertEqual(d["group"], 0)  # the node, as torchrun
            self.assertEqual(d["groups"], 1)
            # Two shims share this node: LOCAL_RANK = l*p + i over 6 local processes.
            self.assertEqual(d["local"], d["rank"])
            self.assertEqual(d["local_size"], 6)
            self.assertEqual(d["node"], 0)
            self.assertEqual(d["omp"], "1")
            self.assertEqual(d["unbuf"], "1")
        self.assertEqual(len({d["port"] for d in docs}), 1)

    def test_first_failure_tears_down_the_job(self):
        script = ('if [ "$RANK" = 4 ]; then echo "fatal: bad shard on rank $RANK" >&2; exit 7; fi; '
                  'exec sleep 600')
        r = run(mpirun(2, SHIM, "--nproc-per-node", "3", "--grace", "3", "--log-dir", self.tmp,
                       "--", "sh", "-c", script), timeout=120)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("first failure: rank 4 (local rank 4, node 0, host ", r.stderr)
        self.assertIn("exit status 7", r.stderr)
        self.assertIn("| fatal: bad shard on rank 4", r.stderr)
        # Siblings killed by the teardown are never named as the cause, nor
        # are the ranks of the shim that mpirun stopped: one report per job.
        self.assertNotIn("first failure: rank 3", r.stderr)
        self.assertEqual(r.stderr.count("first failure:"), 1, r.stderr)
        report = json.loads(slurp(os.path.join(self.tmp, "failure.json")))
        self.assertEqual(report["rank"], 4)
        self.assertEqual(report["exit_code"], 7)
        self.assertEqual(report["stderr_tail"], ["fatal: bad shard on rank 4"])
        self.assertEqual(slurp(os.path.join(self.tmp, "rank-4.stderr")),
                         "fatal: bad shard on rank 4\n")
        self.assertEqual(sorted(os.listdir(self.tmp)),
                         sorted(["failure.json"] + [f"rank-{i}.{s}" for i in range(6)
                                                    for s in ("stdout", "stderr")]))

    def test_a_script_without_a_shebang_runs_as_it_does_in_place(self):
        # execvp runs an executable text file without "#!" with /bin/sh (as
        # env(1) and shells do); posix_spawn does not, and under supervision
        # the same command failed with 126 "Exec format error".
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "plain")
            with open(script, "w") as f:
                f.write('echo "plain $RANK $1"\n')
            os.chmod(script, 0o755)
            inplace = run([SHIM, "--", script, "x"])
            self.assertEqual((inplace.returncode, inplace.stdout), (0, "plain 0 x\n"), inplace.stderr)
            fanned = run([SHIM, "--nproc-per-node", "2", "--no-tag-output", "--", script, "x"])
            self.assertEqual(fanned.returncode, 0, fanned.stderr)
            self.assertEqual(sorted(fanned.stdout.splitlines()), ["plain 0 x", "plain 1 x"])
            # Found on PATH, as posix_spawnp found it.
            env = clean_env(PATH=tmp + ":" + os.environ["PATH"])
            fanned = run([SHIM, "--nproc-per-node", "2", "--no-tag-output", "--", "plain", "y"],
                         env=env)
            self.assertEqual(fanned.returncode, 0, fanned.stderr)
            self.assertEqual(sorted(fanned.stdout.splitlines()), ["plain 0 y", "plain 1 y"])

    def test_child_killed_by_sigkill_gives_137(self):
        r = run([SHIM, "--nproc-per-node", "2", "--grace", "2", "--", "sh", "-c",
                 '[ "$RANK" = 1 ] && kill -KILL $$; exec sleep 600'], timeout=60)
        self.assertEqual(r.returncode, 137, r.stderr)
        self.assertIn("signal 9 (SIGKILL)", r.stderr)
        self.assertIn("first failure: rank 1", r.stderr)

    def test_child_ignoring_sigterm_is_killed_after_grace(self):
        pidfile = os.path.join(self.tmp, "stubborn")
        # Rank 1 ignores SIGTERM and then publishes its pid; rank 0 fails only
        # after that, so the teardown meets a child that really ignores it.
        script = (f'if [ "$RANK" = 0 ]; then while [ ! -s {pidfile} ]; do sleep 0.05; done; exit 3; fi; '
                  f'trap "" TERM; echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; '
                  'while :; do sleep 0.1; done')
        r = run([SHIM, "--nproc-per-node", "2", "--grace", "1", "--", "sh", "-c", script],
                timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        pid = int(slurp(pidfile))
        self.assertFalse(alive(pid), "the child that ignored SIGTERM survived")

    def test_a_stopped_rank_is_continued_so_that_its_sigterm_handler_runs(self):
        # Rank 1 stops itself (SIGSTOP: a debugger, ^Z, a job-control
        # accident); rank 0 then fails. SIGTERM alone would stay pending on
        # the stopped rank until SIGKILL; with SIGCONT after it, its handler
        # runs and it saves its checkpoint within --grace.
        code = ("import os, signal, sys, time\n"
                "r = os.environ['RANK']\n"
                f"d = {self.tmp!r}\n"
                "def term(*_):\n"
                "    open(f'{d}/ckpt-{r}', 'w').write('saved'); sys.exit(0)\n"
                "signal.signal(signal.SIGTERM, term)\n"
                "if r == '1':\n"
                "    open(f'{d}/stopping', 'w').close(); os.kill(os.getpid(), signal.SIGSTOP)\n"
                "else:\n"
                "    while not os.path.exists(f'{d}/stopping'): time.sleep(0.05)\n"
                "    time.sleep(0.3); sys.exit(3)\n"
                "time.sleep(600)\n")
        r = run([SHIM, "--nproc-per-node", "2", "--grace", "20", "--", PYTHON, "-c", code],
                timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(slurp(f"{self.tmp}/ckpt-1"), "saved", r.stderr)

    def test_a_rank_that_reads_the_terminal_is_named_as_stopped(self):
        # Run from a terminal (script(1) gives one), a supervised rank is in
        # a background process group: input() stops it with SIGTTIN.
        require("script", "timeout")
        shim = (f"timeout 6 {SHIM} --nproc-per-node 2 -- {PYTHON} -c "
                "\"import os; os.environ['RANK'] == '1' and input(); import time; "
                "time.sleep(600)\"")
        r = run(["script", "-qec", shim, "/dev/null"], timeout=60)
        self.assertIn("rank 1 (pid ", r.stdout)
        self.assertIn(") is stopped by SIGTTIN: it read from the terminal", r.stdout)
        self.assertNotIn("rank 0 (pid", r.stdout)
        # timeout(1) stopped the job: one line, naming the rank that ended first.
        self.assertRegex(r.stdout, r"aml-shim: stopped: aml-shim received SIGTERM and forwarded "
                                   r"it to its 2 children; rank \d ended first, with signal 15 "
                                   r"\(SIGTERM\)")

    def test_a_rank_that_left_its_process_group_is_still_ended(self):
        # Rank 1 moves into aml-shim's own process group (out of the one
        # aml-shim made for it); rank 0 then fails: rank 1 still gets SIGTERM.
        code = ("import os, signal, sys, time\n"
                "r = os.environ['RANK']\n"
                f"d = {self.tmp!r}\n"
                "def term(*_):\n"
                "    open(f'{d}/term-{r}', 'w').write('got it'); sys.exit(0)\n"
                "signal.signal(signal.SIGTERM, term)\n"
                "if r == '1':\n"
                "    os.setpgid(0, os.getpgid(os.getppid()))\n"
                "    open(f'{d}/moved', 'w').write(str(os.getpid()))\n"
                "else:\n"
                "    while not os.path.exists(f'{d}/moved'): time.sleep(0.05)\n"
                "    sys.exit(3)\n"
                "time.sleep(600)\n")
        r = run([SHIM, "--nproc-per-node", "2", "--grace", "2", "--", PYTHON, "-c",
                 code], timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(slurp(f"{self.tmp}/term-1"), "got it", r.stderr)
        self.assertFalse(alive(int(slurp(f"{self.tmp}/moved"))), r.stderr)
        self.assertNotIn("still alive", r.stderr)

    def test_gnu_timeout_is_one_stop_with_its_grace(self):
        # timeout(1) sends SIGTERM to aml-shim and at once to its whole
        # process group: one request, not a second "kill now". Each rank
        # needs 1 s to checkpoint on SIGTERM, well inside --grace.
        script = (f'trap "sleep 1; echo saved > {self.tmp}/ckpt-$RANK; exit 0" TERM; '
                  f'echo up > {self.tmp}/up-$RANK; while :; do sleep 0.1; done')
        r = run(["timeout", "3", SHIM, "-v", "--nproc-per-node", "2", "--grace", "20", "--",
                 "sh", "-c", script], timeout=60)
        self.assertEqual(r.returncode, 124, r.stderr)
        for rank in range(2):
            self.assertTrue(os.path.exists(f"{self.tmp}/up-{rank}"), r.stderr)
            self.assertEqual(slurp(f"{self.tmp}/ckpt-{rank}"), "saved\n", r.stderr)
        # (Both signals may also arrive as one, while the first is pending.)
        self.assertNotIn("second SIGTERM", r.stderr)

    def test_sigterm_reaches_children_and_grandchildren_under_mpirun(self):
        # Children record the signal in a file: after SIGTERM mpirun is shutting
        # down its own output forwarding, so late stdout may not come through.
        # The trap is set before the gc file appears, so once all four files
        # exist every child is ready for the signal.
        script = (f'trap "echo got-term > {self.tmp}/term-$RANK; exit 0" TERM; '
                  f'sleep 600 & echo $! > {self.tmp}/gc-$RANK.tmp; '
                  f'mv {self.tmp}/gc-$RANK.tmp {self.tmp}/gc-$RANK; wait')
        p = spawn(mpirun(2, SHIM, "--nproc-per-node", "2", "--grace", "5", "--", "sh", "-c", script),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started = lambda: len([f for f in os.listdir(self.tmp)
                               if f.startswith("gc-") and not f.endswith(".tmp")]) >= 4
        self.assertTrue(wait_for(started, 60), "children did not start")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        for r in range(4):
            self.assertTrue(os.path.exists(f"{self.tmp}/term-{r}"),
                            f"rank {r} did not get SIGTERM\n{out}\n{err}")
            gc = int(slurp(f"{self.tmp}/gc-{r}"))
            self.assertFalse(alive(gc), f"grandchild of rank {r} survived")

    def test_pid1_reaps_orphans(self):
        require("unshare")
        require_namespaces("--pid", "--fork", "--mount-proc", why="a PID namespace")
        # The inner sleeps are orphaned at once and reparented to PID 1.
        script = ('for i in 1 2 3; do (sleep 0.2 &) ; done; sleep 1; '
                  'ps -eo pid,stat,comm --no-headers; exit 5')
        r = run(["unshare", "--pid", "--fork", "--mount-proc", SHIM, "--", "sh", "-c", script],
                timeout=60)
        self.assertEqual(r.returncode, 5, r.stderr)
        rows = [line.split() for line in r.stdout.splitlines() if line.strip()]
        self.assertTrue(any(row[0] == "1" and row[2] == "aml-shim" for row in rows), r.stdout)
        zombies = [row for row in rows if row[1].startswith("Z")]
        self.assertEqual(zombies, [], r.stdout)

    def test_pid1_forwards_signals(self):
        require("unshare")
        require_namespaces("--pid", "--fork", "--mount-proc", why="a PID namespace")
        p = spawn(["unshare", "--pid", "--fork", "--mount-proc", SHIM, "--", "sh", "-c",
                   'trap "echo got-term; exit 0" TERM; echo up; sleep 600 & wait'],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline().strip(), "up")
        # unshare --fork forwards nothing; signal the namespace's PID 1 directly.
        children = slurp(f"/proc/{p.pid}/task/{p.pid}/children").split()
        os.kill(int(children[0]), signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
        self.assertIn("got-term", out)
        self.assertEqual(p.returncode, 0)

    def test_tagged_output_keeps_every_byte(self):
        writer = ("import os, sys\n"
                  "r = os.environ['RANK']\n"
                  "for i in range(3000):\n"
                  "    sys.stdout.write(f'rank {r} line {i} ' + 'x' * (i % 97) + '\\n')\n"
                  "    if i % 500 == 0: sys.stdout.flush()\n"
                  "sys.stdout.write(r * (1 << 20))\n")
        r = run([SHIM, "--nproc-per-node", "4", "--", PYTHON, "-c", writer], timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Put each rank's bytes back together: "+" continues a cut line (its
        # '\n' before was not the child's), "\\" says the stream ended
        # without a newline (nor was the '\n' before it).
        text = {str(i): "" for i in range(4)}
        for line in r.stdout.split("\n")[:-1]:
            m = TAG.match(line)
            self.assertIsNotNone(m, f"untagged line: {line[:80]!r}")
            rank, mark, body = m.groups()
            if mark:
                self.assertTrue(text[rank].endswith("\n"))
                text[rank] = text[rank][:-1]
            if mark == "\\":
                self.assertEqual(body, "no newline at end of output")
            else:
                text[rank] += body + "\n"
        for rank in range(4):
            expected = "".join(f"rank {rank} line {i} " + "x" * (i % 97) + "\n"
                               for i in range(3000)) + str(rank) * (1 << 20)
            self.assertEqual(text[str(rank)], expected, f"rank {rank} output differs")

    def test_no_tag_output_passes_bytes_through(self):
        r = run([SHIM, "--nproc-per-node", "2", "--no-tag-output", "--", "sh", "-c",
                 'printf "a-$RANK"'])
        self.assertEqual(sorted([r.stdout[:3], r.stdout[3:]]), ["a-0", "a-1"])

    def test_command_not_found_in_fanout_is_127(self):
        r = run([SHIM, "--nproc-per-node", "2", "--", "no-such-program-xyz"])
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertIn("aml-shim: 'no-such-program-xyz': command not found", r.stderr)

    def test_gpu_without_gpus_is_125(self):
        r = run([SHIM, "--nproc-per-node", "gpu", "--", "true"],
                env=clean_env(CUDA_VISIBLE_DEVICES=""))
        self.assertEqual(r.returncode, 125)
        self.assertIn("--nproc-per-node=gpu: no NVIDIA GPU is visible (CUDA_VISIBLE_DEVICES=)",
                      r.stderr)
        # Set in the environment, the error names the variable the user set.
        r = run([SHIM, "--", "true"],
                env=clean_env(CUDA_VISIBLE_DEVICES="", AML_SHIM_NPROC_PER_NODE="gpu"))
        self.assertEqual(r.returncode, 125)
        self.assertIn("AML_SHIM_NPROC_PER_NODE=gpu: no NVIDIA GPU is visible", r.stderr)
        r = run([SHIM, "--nproc-per-node", "auto", "--", "sh", "-c", "echo $WORLD_SIZE"],
                env=clean_env(CUDA_VISIBLE_DEVICES=""))
        self.assertEqual(r.stdout.strip(), "1")


if __name__ == "__main__":
    main()
