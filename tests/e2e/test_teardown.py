"""No process aml-shim starts outlives it: a SIGKILLed shim (mpirun's
SIGKILL 1 s after SIGTERM, the OOM killer) still takes its children and their
groups with it, --grace works under mpirun when mpirun allows it, and a pid
the kernel has given to an unrelated process is never signalled."""
import os
import signal
import subprocess
import tempfile
import time
import shutil
import unittest

from harness import (SHIM, alive, clean_env, kill_group, main, mpirun, require, run, slurp, spawn,
                     take_orphans, wait_for, require_namespaces)

# Each rank records its pid and its grandchild's, then waits; TERM makes it
# take `delay` seconds to "checkpoint" (a file) before exiting, or, with
# delay=None, is ignored.
def ranks_script(tmp, delay=0):
    trap = ('trap "" TERM; ' if delay is None else
            f'trap "sleep {delay}; echo saved > {tmp}/ckpt-$RANK; exit 0" TERM; ')
    return (trap +
            f'sleep 600 & echo "$$ $!" > {tmp}/pids-$RANK.tmp; mv {tmp}/pids-$RANK.tmp {tmp}/pids-$RANK; '
            'wait; wait')


def carrying(marker):
    """Pids of the processes whose environment holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


class Teardown(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="aml-teardown-")

    def tearDown(self):
        for name in os.listdir(self.tmp):
            if name.startswith("pids-") and not name.endswith(".tmp"):
                for pid in slurp(os.path.join(self.tmp, name)).split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def pids(self, n):
        self.assertTrue(wait_for(lambda: len([f for f in os.listdir(self.tmp)
                                              if f.startswith("pids-") and not f.endswith(".tmp")]) >= n,
                                 60), "the ranks did not start")
        return [int(p) for r in range(n) for p in slurp(f"{self.tmp}/pids-{r}").split()]

    def assert_all_gone(self, pids, why):
        self.assertTrue(wait_for(lambda: not any(alive(p) for p in pids), 20),
                        f"{why}: still alive: {[p for p in pids if alive(p)]}")

    def assert_sigkilled_shim_leaves_nothing(self, script, check=lambda pids: None):
        """A shim of 2 ranks running `script` (which records pids-RANK) is
        SIGKILLed once they run (`check` sees the pids first): every recorded
        process must end."""
        p = spawn([SHIM, "--nproc-per-node", "2", "--", "sh", "-c", script],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            pids = self.pids(2)
            check(pids)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            self.assert_all_gone(pids, "processes outlived their SIGKILLed shim")
        finally:
            kill_group(p)

    def test_children_and_grandchildren_die_with_a_sigkilled_shim(self):
        self.assert_sigkilled_shim_leaves_nothing(ranks_script(self.tmp))

    def test_descendants_that_left_their_ranks_group_die_with_a_sigkilled_shim(self):
        # setsid (a daemon) and Python's start_new_session=True (what
        # DataLoader helpers and servers do) leave the rank's process group:
        # the keeper finds them by the tag they inherited (issue 23, item 4).
        t = self.tmp
        script = (f'setsid sleep 600 & a=$!; '
                  f'/usr/bin/python3 -c "import subprocess,sys; '
                  f'p=subprocess.Popen([\'sleep\',\'600\'],start_new_session=True); print(p.pid)" > {t}/py-$RANK; '
                  f'echo "$$ $a $(cat {t}/py-$RANK)" > {t}/pids-$RANK.tmp; mv {t}/pids-$RANK.tmp {t}/pids-$RANK; '
                  f'exec sleep 600')

        def left_their_groups(pids):
            self.assertEqual(len(pids), 6, pids)
            for rank, a, b in (pids[:3], pids[3:]):
                self.assertNotIn(rank, (os.getpgid(a), os.getpgid(b)), "left the rank's group")

        self.assert_sigkilled_shim_leaves_nothing(script, left_their_groups)

    def test_a_child_being_spawned_when_the_shim_is_killed_does_not_leak(self):
        # SIGKILL while the shim starts 16 children that ignore SIGTERM: the
        # one being spawned had not been named to the keeper yet and lived
        # on in a group of its own (issue 23, item 3). Every kill time from
        # 0 to 30 ms; afterwards no process of the job may be left.
        marker = "AML_TEST_SPAWN_KILL=" + os.path.basename(self.tmp)
        env = clean_env(AML_TEST_SPAWN_KILL=os.path.basename(self.tmp))
        leaks = []
        try:
            for i in range(30):
                p = spawn([SHIM, "--grace", "0.2", "--nproc-per-node", "16", "--", "sh", "-c",
                           'trap "" TERM; exec sleep 600'], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(i / 1000)
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=30)
                if not wait_for(lambda: not carrying(marker), 10):
                    leaks.append((i, carrying(marker)))
                    for pid in carrying(marker):
                        os.kill(pid, signal.SIGKILL)
        finally:
            for pid in carrying(marker):
                os.kill(pid, signal.SIGKILL)
        self.assertEqual(leaks, [], "(kill after ms, processes left)")

    def test_a_shim_killed_in_its_first_milliseconds_leaves_no_private_directory(self):
        # The error files' private directory (aml-shim-errors-*, under
        # $TMPDIR) is made after the keeper knows its name: a SIGKILL at any
        # moment of the start leaves none behind.
        tmpdir = os.path.join(self.tmp, "t")
        os.mkdir(tmpdir)
        for i in range(120):
            p = spawn([SHIM, "--nproc-per-node", "2", "--", "sleep", "30"],
                      env=clean_env(TMPDIR=tmpdir), stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
            time.sleep((i % 12) * 0.0005)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            kill_group(p)
        left = lambda: [n for n in os.listdir(tmpdir) if n.startswith("aml-shim-errors-")]
        self.assertTrue(wait_for(lambda: not left(), 20), f"left behind: {left()}")

    def test_a_flight_recorder_run_leaves_nothing_under_tmp(self):
        # With --hang-timeout the private directory holds the flight
        # recorder's agent (python/), whose import by every rank writes its
        # bytecode one level further down (python/__pycache__/): three runs
        # left it behind where /dev/shm is not a sticky tmpfs and $TMPDIR is
        # used. Neither a run that ends nor a shim SIGKILLed while its ranks
        # run (its keeper removes the directory) leaves anything there.
        tmpdir = os.path.join(self.tmp, "t")
        os.mkdir(tmpdir)
        left = lambda: os.listdir(tmpdir)
        env = clean_env(TMPDIR=tmpdir)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # (ctest's: a user's Python writes it)
        r = run([SHIM, "--hang-timeout", "60s", "--nproc-per-node", "2", "--",
                 "/usr/bin/python3", "-c", "import sys; print(*[p for p in sys.path if '/aml-shim-errors-' in p])"],
                env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("/python", r.stdout, "the agent's directory is not on the ranks' path")
        self.assertEqual(left(), [])
        p = spawn([SHIM, "--hang-timeout", "60s", "--nproc-per-node", "2", "--",
                   "/usr/bin/python3", "-c",
                   f"import os, sys, time; open('{self.tmp}/up-' + os.environ['RANK'], 'w').write("
                   "str([os.listdir(p) for p in sys.path if '/aml-shim-errors-' in p]));"
                   " time.sleep(600)"],
                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.assertTrue(wait_for(lambda: all(os.path.exists(f"{self.tmp}/up-{r}")
                                                 for r in range(2)), 60), "the ranks did not start")
            self.assertIn("__pycache__", slurp(f"{self.tmp}/up-0") + slurp(f"{self.tmp}/up-1"))
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
        finally:
            kill_group(p)
        self.assertTrue(wait_for(lambda: not left(), 20), f"left behind: {left()}")

    def test_a_sigkilled_mpirun_takes_every_child_with_it(self):
        # mpirun SIGKILLed (an OOM kill, a node agent) signals nothing; its
        # shim, reparented to init, sees its launcher gone and ends its ranks
        # as a stop does: SIGTERM, which they ignore here, SIGKILL after
        # --grace.
        require("mpirun")
        p = spawn(mpirun(1, SHIM, "--grace", "2", "--nproc-per-node", "2", "--", "sh", "-c",
                         ranks_script(self.tmp, delay=None)),
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            pids = self.pids(2)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            gone_by = time.monotonic() + 2 + 1
            self.assertTrue(wait_for(lambda: not any(alive(q) for q in pids), 20),
                            f"still alive: {[q for q in pids if alive(q)]}")
            self.assertLessEqual(time.monotonic(), gone_by,
                                 "the ranks outlived a SIGKILLed mpirun by more than --grace + 1 s")
        finally:
            kill_group(p)

    def launched_by_a_shell_that_dies(self, launcher_vars):
        """A shell starts aml-shim in the background (its stderr to a file)
        and is SIGKILLed once the 2 ranks run; returns their pids and the
        shim's."""
        env = clean_env(**launcher_vars)
        sh = spawn(["sh", "-c", f"{SHIM} -v --grace 1 --nproc-per-node 2 -- sh -c "
                    f"'{ranks_script(self.tmp)}' 2>{self.tmp}/shim.err & echo $! > {self.tmp}/shim.pid;"
                    " wait"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pids = self.pids(2)
        shim = int(slurp(f"{self.tmp}/shim.pid"))
        os.kill(sh.pid, signal.SIGKILL)
        sh.wait(timeout=30)
        return pids, shim

    def test_a_shim_whose_launcher_is_gone_says_so_and_exits_143(self):
        ompi = dict(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1",
                    OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="1")
        # This test process takes the orphaned shim (a subreaper), so that
        # its exit status can be read.
        take_orphans()
        try:
            pids, shim = self.launched_by_a_shell_that_dies(ompi)
            deadline = time.monotonic() + 20
            while True:
                got, status = os.waitpid(shim, os.WNOHANG)
                if got == shim or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(got, shim, "the shim outlived its launcher")
            self.assertEqual(os.waitstatus_to_exitcode(status), 143)
        finally:
            take_orphans(False)
        self.assert_all_gone(pids, "the launcher died")
        err = slurp(f"{self.tmp}/shim.err")
        self.assertRegex(err, r"aml-shim: stopped: the launcher \(sh, pid \d+\) is gone\n")

    def test_a_shim_started_from_a_shell_outlives_the_shell(self):
        # No launcher's variables: `nohup aml-shim ... &` survives a logout.
        pids, shim = self.launched_by_a_shell_that_dies({})
        time.sleep(2)
        self.assertTrue(all(alive(q) for q in pids + [shim]), slurp(f"{self.tmp}/shim.err"))
        os.kill(shim, signal.SIGTERM)
        self.assert_all_gone(pids + [shim], "SIGTERM")

    def test_a_shim_killed_after_it_forwarded_sigterm_sends_no_second_one(self):
        # The launcher's stop: SIGTERM (forwarded to every rank, which takes
        # its time to checkpoint), then SIGKILL to the shim. Each rank got its
        # one SIGTERM: the keeper ends them with SIGKILL, not a second
        # SIGTERM (a handler may take a second one as "abort now").
        script = (f'trap "echo term >> {self.tmp}/terms-$RANK" TERM; '
                  f'echo "$$" > {self.tmp}/pids-$RANK.tmp; mv {self.tmp}/pids-$RANK.tmp '
                  f'{self.tmp}/pids-$RANK; while :; do sleep 0.05; done')
        p = spawn([SHIM, "--grace", "60", "--nproc-per-node", "2", "--", "sh", "-c", script],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            pids = self.pids(2)
            p.send_signal(signal.SIGTERM)
            self.assertTrue(wait_for(lambda: all(os.path.exists(f"{self.tmp}/terms-{r}")
                                                 for r in range(2)), 30))
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            self.assert_all_gone(pids, "ranks outlived their SIGKILLed shim")
            for r in range(2):
                self.assertEqual(slurp(f"{self.tmp}/terms-{r}"), "term\n", f"rank {r}")
        finally:
            kill_group(p)

    def sigterm_mpirun(self, grace, delay, mca=()):
        """mpirun -np 1 of a shim with 2 ranks (ranks_script), SIGTERM to
        mpirun once they run; returns the ranks' pids and mpirun's stderr."""
        require("mpirun")
        p = spawn(mpirun(1, SHIM, "--grace", str(grace), "--nproc-per-node", "2", "--", "sh",
                         "-c", ranks_script(self.tmp, delay=delay), mca=mca),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            pids = self.pids(2)
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=90)
            return pids, err
        finally:
            kill_group(p)

    def test_mpirun_sigkill_after_sigterm_leaves_no_child(self):
        # The ranks ignore SIGTERM; mpirun SIGKILLs the shim after 1 s
        # (odls_base_sigkill_timeout), long before --grace ends: nothing may
        # be left running.
        pids, _ = self.sigterm_mpirun(grace=20, delay=None)
        self.assert_all_gone(pids, "ranks outlived mpirun's teardown")

    def test_mpirun_with_room_for_grace_lets_ranks_checkpoint(self):
        # docs/supervision.md: give mpirun's SIGKILL timeout room for --grace (mpirun
        # then waits that long at every shutdown, hence a small one here).
        pids, err = self.sigterm_mpirun(grace=5, delay=2,
                                        mca=[("odls_base_sigkill_timeout", "6")])
        for r in range(2):
            self.assertEqual(slurp(f"{self.tmp}/ckpt-{r}"), "saved\n", err)
        self.assert_all_gone(pids, "ranks outlived the job")

    def test_a_recycled_pid_is_never_signalled(self):
        require("unshare", "setsid")
        require_namespaces("--pid", "--fork", "--mount-proc", why="a PID namespace")
        # In a PID namespace of its own, rank 0 exits at once; its pid is then
        # handed (ns_last_pid) to an unrelated process group leader, and
        # rank 1 fails leaving a straggler that ignores SIGTERM, so the shim's
        # final sweep runs. The unrelated process must survive it.
        t = self.tmp
        inner = (
            f'{SHIM} --grace 1 --nproc-per-node 2 -- sh -c \''
            f'if [ "$RANK" = 0 ]; then echo $$ > {t}/r0; exit 0; fi; '
            f'while [ ! -f {t}/go ]; do sleep 0.05; done; '
            f'(trap "" TERM; touch {t}/stray; exec sleep 600) & '
            f'while [ ! -f {t}/stray ]; do sleep 0.05; done; exit 3\' & shim=$!; '
            f'while [ ! -s {t}/r0 ]; do sleep 0.05; done; r0=$(cat {t}/r0); '
            f'while kill -0 $r0 2>/dev/null; do sleep 0.05; done; '
            f'echo $((r0 - 1)) > /proc/sys/kernel/ns_last_pid; '
            f'setsid sleep 600 & other=$!; echo "$r0 $other" > {t}/other; '
            f'touch {t}/go; wait $shim; echo shim=$?; '
            f'if kill -0 $other 2>/dev/null; then echo other-alive; else echo other-killed; fi; '
            f'kill -9 $other 2>/dev/null; true')
        r = run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", inner], timeout=120)
        r0, other = slurp(f"{t}/other").split()
        self.assertEqual(r0, other, "could not hand rank 0's pid to another process")
        self.assertIn("shim=3", r.stdout, r.stderr)
        self.assertIn("other-alive", r.stdout, r.stderr)

    def test_closed_stdio_never_turns_a_childs_bytes_into_a_kill(self):
        # Security (issue 23): started with 0, 1 and 2 closed, the keeper's
        # pipe became aml-shim's stdout and stderr, a child's bytes 01 00 00
        # 00 on stderr read as "watch process group 1", and when the shim
        # died the keeper called kill(-1): every process of the user. In a
        # PID namespace of its own (kill(-1) reaches only it), an unrelated
        # process must survive the shim's SIGKILL.
        require("unshare", "setsid")
        require_namespaces("--pid", "--fork", "--mount-proc", why="a PID namespace")
        t = self.tmp
        inner = (
            f'setsid sleep 600 & other=$!; '
            f'{SHIM} --nproc-per-node 2 --no-tag-output -- sh -c \'printf "\\001\\000\\000\\000" >&2; '
            f'touch {t}/up-$RANK; exec sleep 600\' <&- >&- 2>&- & shim=$!; '
            f'while [ ! -f {t}/up-0 ] || [ ! -f {t}/up-1 ]; do sleep 0.05; done; sleep 0.3; '
            f'kill -9 $shim; sleep 1; '
            f'if kill -0 $other 2>/dev/null; then echo other-alive; else echo other-killed; fi')
        r = run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", inner], timeout=60)
        self.assertIn("other-alive", r.stdout, r.stderr)


if __name__ == "__main__":
    main()
