"""Shared helpers for aml-shim's end-to-end tests (run by ctest).

Each test runs the built binary (AML_SHIM) under a real launcher and
asserts what a user would see: the environment each rank gets, exit codes,
messages, training results.
"""
import ctypes
import json
import os
import signal
import re
import shutil
import subprocess
import sys
import time
import unittest

SHIM = os.environ.get("AML_SHIM") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "aml-shim")
SRC = os.environ.get("AML_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch
TRAIN = os.path.join(SRC, "examples", "train_ddp.py")
# DDP that checkpoints every epoch and resumes (--max-restarts tests).
CKPT = os.path.join(SRC, "tests", "e2e", "scripts", "ckpt_ddp.py")

# Variables that would leak a launcher's world from the test's own
# environment into the commands it runs.
_LEAKY_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "MPI_LOCAL", "MV2_", "SLURM_", "AML_SHIM_",
                   "AZ_BATCH", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                   "NODE_RANK", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "TF_CONFIG",
                   "NCCL_", "GLOO_", "UCX_", "OMP_NUM_THREADS", "PRTE_")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY_PREFIXES)}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def spawn(args, env=None, **kwargs):
    """Popen in a session of its own: a signal one test sends to a process
    group never reaches another test, and kill_group() ends all it started."""
    return subprocess.Popen(args, env=env if env is not None else clean_env(),
                            start_new_session=True, **kwargs)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(args, env=None, timeout=120, input=None, cwd=None):
    """Runs args (in cwd); returns CompletedProcess with text stdout/stderr.
    On a timeout everything it started is killed, and the failure shows what
    it printed until then."""
    p = spawn(args, env=env, cwd=cwd, stdin=subprocess.PIPE if input is not None else None,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        out, err = p.communicate()
        # What it printed until then says where it hung.
        raise AssertionError(f"timed out after {timeout} s: {args}\n--- stdout:\n{out}\n"
                             f"--- stderr:\n{err}") from None
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def mpirun(np, *args, x=(), extra=(), mca=()):
    """An mpirun command line for this machine (root, oversubscribed); `mca`:
    more (name, value) pairs, before `extra` and the command."""
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np),
           "--mca", "btl", "self,tcp", "-x", "PMIX_MCA_gds=hash"]
    for name, value in mca:
        cmd += ["--mca", name, value]
    for name in x:
        cmd += ["-x", name]
    return cmd + list(extra) + list(args)


FINAL = re.compile(r"rank (\d+)/(\d+) local_rank (\d+) node (\d+) loss ([\d.]+) -> ([\d.]+) "
                   r"weights ([0-9a-f]+)")


def finals(stdout):
    """examples/train_ddp.py's last line of each rank, by rank, with any
    '[rank R] ' tag removed."""
    plain = "\n".join(re.sub(r"^\[rank \d+\]\+? ", "", l) for l in stdout.splitlines())
    return sorted((tuple(m.groups()) for m in FINAL.finditer(plain)), key=lambda g: int(g[0]))


def assert_converged(test, stdout, world):
    """Every rank 0..world-1 trained, the loss fell tenfold, and DDP kept the
    replicas identical: every rank ends with the same weights. Returns the rows."""
    rows = finals(stdout)
    test.assertEqual([int(r[0]) for r in rows], list(range(world)), stdout)
    for _rank, size, _local, _node, first, last, _ in rows:
        test.assertEqual(int(size), world)
        test.assertLess(float(last), float(first) / 10)
    test.assertEqual(len({r[6] for r in rows}), 1, "weights differ:\n" + stdout)
    return rows


def signal_all(pids, sig):
    """`sig` to each of `pids` that is still there (SIGSTOP/SIGCONT: a node
    that stalls and wakes)."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class CpuHogs:
    """Busy loops beside a test (a busy node is the normal case): `per_core`
    per core, started when the block begins and ended when it ends."""

    def __init__(self, per_core=1):
        self.n = per_core * (os.cpu_count() or 2)

    def __enter__(self):
        # Each ends with the test's process too (setpriv --pdeathsig, of
        # util-linux: no preexec_fn, unsafe beside threads): a test killed by
        # ctest's timeout (or by hand) left its hogs spinning, and every
        # later test ran beside them.
        self.hogs = [spawn(["setpriv", "--pdeathsig", "KILL", "sh", "-c", "while :; do :; done"],
                           stdout=subprocess.DEVNULL) for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for h in self.hogs:
            kill_group(h)
            h.wait()


def descendants(pid):
    """Every process below pid (from /proc's parent links)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = slurp(f"/proc/{entry}/stat")
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def take_orphans(on=True):
    """From now on (until take_orphans(False)) this test process takes every
    process orphaned below it (a subreaper): whatever a shim it ran left
    behind when it ended becomes this process's child, alive or dead, for
    left_behind() to find (or waitpid, for an orphaned shim's status)."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _what(pid):
    try:
        cmd = slurp(f"/proc/{pid}/cmdline").replace("\0", " ").strip()
        return cmd or "zombie of " + slurp(f"/proc/{pid}/comm").strip()
    except OSError:
        return "?"


def left_behind():
    """Run once every shim this process ran has ended: the processes below
    this one (with take_orphans(): what those shims left behind, a process
    that outlived its shim by an instant included), each killed and reaped.
    Their pids and what each was (its command line, or "zombie of" its
    name)."""
    found = {}
    for _ in range(10):
        pids = descendants(os.getpid())
        if not pids:
            break
        for p in pids:
            found.setdefault(p, _what(p))
        signal_all(pids, signal.SIGKILL)
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass  # not ours (yet): its parent's, reaped next round
    return list(found.items())


def wait_for(condition, seconds=20):
    """Polls `condition` until it holds (True) or `seconds` pass (False)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def json_lines(text):
    """Parses every line of text that is a JSON object."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def alive(pid):
    """The process exists and is not a zombie (kill(0) answers for zombies)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        # (Reaped between the open and the read: the read fails with ESRCH;
        # test_teardown failed so in a fresh-clone run.)
        return False


def recorded(marks, rank_var, command):
    """A shell line that runs `command` and keeps its stderr and exit status
    in marks/rank-R (R: the value of $rank_var): what each rank did, whichever
    ranks' output the launcher chose to forward (prterun may drop one of two
    ranks' stderr when both exit at once). It exits 0, so that the launcher
    does not kill the other ranks before they have recorded theirs."""
    f = f"{marks}/rank-${rank_var}"
    return f'{command} 2>{f}; echo "exit $?" >>{f}'


def assert_each_rank_refused(test, marks, ranks, message):
    """Every rank's shim (run through recorded()) printed `message` and
    exited 125, and none ran its command (which touches marks/ran-R)."""
    for rank in ranks:
        test.assertEqual(slurp(f"{marks}/rank-{rank}"), message + "\nexit 125\n")
        test.assertFalse(os.path.exists(f"{marks}/ran-{rank}"))


def slurp(path):
    with open(path) as f:
        return f.read()


def assert_resumed_once(test, r, shims):
    """A --max-restarts 1 run of scripts/ckpt_ddp.py (rank 3 fails once, in
    the first attempt): it ended well, every one of its `shims` marked the
    restart, rank 3 resumed from the checkpoint, rank 0 printed the final
    weights, and no process of the first attempt was alive in the second."""
    text = r.stdout + r.stderr
    test.assertEqual(r.returncode, 0, text)
    test.assertEqual(text.count("aml-shim: restart 1 of 1 after rank 3 failed (exit status 7)"),
                     shims, text)
    test.assertIn("rank 3 resumed at epoch 2", r.stdout)
    test.assertRegex(r.stdout, r"final weights [0-9a-f]{64}")
    test.assertNotIn("LEFTOVER", text)


# Ports free_port() hands out: below the shim's derived ports (20000-31999,
# shim/world/port.h), which jobs without MASTER_PORT use, and below the
# kernel's ephemeral range (32768-60999), where any process's outgoing
# connection or bind to port 0 may take a port at any moment.
_PORT_RANGE = (10000, 19999)
_PORT_STALE_S = 3 * 3600


def _port_folder():
    """A folder of this user's own, not a link, for the reservations."""
    import tempfile
    d = os.path.join(tempfile.gettempdir(), f"aml-shim-test-ports-{os.getuid()}")
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(d)
    import stat as st_mod
    if not st_mod.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise AssertionError(f"{d} is not a folder of uid {os.getuid()}: remove it")
    return d


def free_port():
    """A port free now on loopback and on every address, for jobs of tests
    that ctest runs side by side (torch's default MASTER_PORT 29500 would
    be shared). Not from the ephemeral range: there a port found free by
    a bind to port 0 was taken by another test's Gloo socket before
    torch's TCPStore bound it ("Address already in use" in CI). Each port
    is reserved across the test processes by a file created with O_EXCL,
    so two tests never get the same one."""
    import random
    import socket
    d = _port_folder()
    lo, hi = _PORT_RANGE
    for _ in range(1000):
        port = random.randint(lo, hi)
        mark = os.path.join(d, str(port))
        try:
            fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            try:
                if time.time() - os.lstat(mark).st_mtime < _PORT_STALE_S:
                    continue
                os.unlink(mark)  # a reservation of a run long over
            except FileNotFoundError:
                pass
            continue
        os.close(fd)
        try:
            for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
                with socket.socket(family) as s:
                    s.bind((host, port))
        except OSError:
            continue  # in use by something that is not a test: keep it marked
        return port
    raise AssertionError(f"no free port in {lo}-{hi} after 1000 tries: see {d}")



# ---- torch 2.14 in the Debian forky root, on network-namespace nodes

IN_ROOT = os.path.join(SRC, "scripts", "in-root.sh")
# Each netns node under its own host name (netns-cluster.sh shares this
# machine's): a verdict's host is the node's.
OWN_HOST = ["unshare", "--uts", "sh", "-c", 'hostname "$(ip netns identify)"; exec "$@"', "sh"]


def forky_root():
    """The forky root's path (scripts/forky-root.sh, made once and cached)."""
    made = subprocess.run([os.path.join(SRC, "scripts", "forky-root.sh")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=1800)
    if made.returncode != 0:
        raise AssertionError("the forky root could not be made:\n" + made.stderr)
    return made.stdout.strip()


def forky_nodes(cls, cluster, nodes, subnet):
    """A test class's `nodes` netns nodes (`cluster`1.., 198.18.`subnet`.0/24,
    down again after the class) and the forky root: cls.root, cls.agent
    (mpirun's rsh agent)."""
    require("mpirun", "ip", "debootstrap", "unshare", "chroot")
    require_namespaces("--net", "--mount", "--uts", why="network, mount and UTS namespaces")
    cls.root = forky_root()
    netns = os.path.join(SRC, "scripts", "netns-cluster.sh")
    cls.addClassCleanup(subprocess.run, [netns, "down", cluster], check=False)
    subprocess.run([netns, "up", cluster, str(nodes), str(subnet)], check=True)
    cls.agent = subprocess.run([netns, "agent", cluster], stdout=subprocess.PIPE, text=True,
                               check=True).stdout.strip()


def forky_mpirun_line(root, agent, cluster, net, nodes, per_node, args, shim=None, **env):
    """The command line and environment of forky_mpirun (bench/culprit.py
    runs it itself, to stamp each line as it comes)."""
    shim = os.path.abspath(shim or SHIM)
    names = {"USE_LIBUV": "0", "MASTER_ADDR": f"{net}.1", "MASTER_PORT": str(free_port()),
             "GLOO_SOCKET_IFNAME": "eth0", "AML_SHIM_PMIX": "0",
             "AML_ROOT_BINDS": ":".join(sorted({SRC, os.path.dirname(shim), "/tmp"})),
             **{k: str(v) for k, v in env.items()}}
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(nodes),
           "--mca", "btl", "self,tcp", "--mca", "plm_rsh_agent", agent,
           "--mca", "oob_tcp_if_include", f"{net}.0/24", "--mca", "btl_tcp_if_include",
           f"{net}.0/24", "--mca", "rtc_hwloc_vmhole", "none",
           "--host", ",".join(f"{cluster}{i}:1" for i in range(1, nodes + 1))]
    for name in names:
        cmd += ["-x", name]
    cmd += OWN_HOST + [IN_ROOT, root, shim, "--nproc-per-node", str(per_node), *args]
    return cmd, clean_env(**names)


def forky_mpirun(root, agent, cluster, net, nodes, per_node, args, timeout=300, **env):
    """One aml-shim per node (nodes 1..`nodes` of netns cluster `cluster` on
    `net`.0/24, its `agent`) under Open MPI's mpirun, each in the forky root
    under its node's name: `aml-shim --nproc-per-node per_node *args`; Gloo
    over eth0, MASTER_ADDR the first node, `env` passed to every rank."""
    cmd, names = forky_mpirun_line(root, agent, cluster, net, nodes, per_node, args, **env)
    return run(cmd, env=names, timeout=timeout)


def require(*programs):
    """Fails (not skips) when a launcher the test needs is missing: CI
    installs them all, so a missing one is a broken setup."""
    for p in programs:
        if shutil.which(p) is None and not os.path.exists(p):
            raise AssertionError(f"{p} is not installed: run scripts/setup.sh")


_namespaces = {}


def start_local_slurm(directory, add_cleanup, env):
    """Starts the one-node Slurm of scripts/slurm-local.sh with its state in
    `directory` (stopping one left there first); `add_cleanup` (a test's or
    a class's) stops it. Returns `env` with what srun needs to reach it."""
    require("srun", "slurmctld", "slurmd", "munged")
    script = os.path.join(SRC, "scripts", "slurm-local.sh")
    env = dict(env, SLURM_CONF=os.path.join(directory, "slurm.conf"), AML_SLURM_DIR=directory)
    subprocess.run([script, "stop"], env=env, capture_output=True)
    # Registered first: daemons half started are stopped too.
    add_cleanup(run, [script, "stop"], env=env, timeout=60)
    r = run([script, "start"], env=env, timeout=90)
    if r.returncode == 3:
        # This machine cannot run a Slurm of its own (a chroot without
        # cgroups, another Slurm on its ports): skipped, saying why.
        skip_here(r.stderr.strip().splitlines()[-1].removeprefix("slurm: cannot run here: "),
                  "a one-node Slurm of its own")
    if r.returncode != 0:
        raise AssertionError("could not start Slurm:\n" + r.stdout + r.stderr)
    return env


# The reason a test skipped for want of namespaces starts with this: main()
# names each such test, and exits 77 (ctest's "Skipped", apart from
# failures) when no test of the file ran.
NO_NAMESPACES = "cannot run here: needs"


def require_namespaces(*flags, why="namespaces"):
    """Skips the test, naming why in one line, where this machine cannot make
    the namespaces it needs (a chroot, an unprivileged container, no root):
    `unshare FLAGS true` is tried once per set of flags. main() names the
    test as skipped here, not failed. With
    AML_TESTS_REQUIRE_NAMESPACES=1 (CI sets it: a CI machine that lost them is
    broken) it fails instead."""
    key = tuple(flags)
    if key not in _namespaces:
        try:
            r = subprocess.run(["unshare", *flags, "true"], capture_output=True, text=True,
                               timeout=30)
            _namespaces[key] = "" if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")
        except (OSError, subprocess.TimeoutExpired) as e:
            _namespaces[key] = str(e)
    if _namespaces[key]:
        skip_here(f"`unshare {' '.join(flags)} true` failed here: {_namespaces[key]}", why)


def skip_here(reason, needs):
    """Skips the test for want of what this machine cannot give (`needs`),
    saying why in one line; fails instead with AML_TESTS_REQUIRE_NAMESPACES=1."""
    message = (f"{NO_NAMESPACES} {needs} ({reason}); run the tests as root on a machine or VM "
               "that allows them, not in a chroot or an unprivileged container")
    if os.environ.get("AML_TESTS_REQUIRE_NAMESPACES") == "1":
        raise AssertionError(message)
    raise unittest.SkipTest(message)


def main():
    # ctest starts every test file in its own process group: a test that
    # signals its group reaches only itself.
    try:
        os.setpgid(0, 0)
    except PermissionError:
        pass  # already a session leader
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    here = [(test.id().rsplit(".", 1)[-1], reason) for test, reason in result.skipped
            if reason.startswith(NO_NAMESPACES)]
    # Each test that could not run here is said by name (scripts/test.sh
    # lists them); the file is "Skipped" to ctest only when none ran.
    for name, reason in here:
        print(f"skipped here: {name}: {reason}", file=sys.stderr)
    if here and len(result.skipped) == result.testsRun:
        sys.exit(77)  # SKIP_RETURN_CODE in tests/CMakeLists.txt
    sys.exit(0)
