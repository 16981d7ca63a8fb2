"""A rank for tests/e2e/test_warm_restart.py: says how it started (one JSON
line: its attempt, __name__, sys.argv, the working directory, sys.path[0],
whether torch, xml.dom.minidom (an installed module it imports when LEARN
is 1) and warm_job_local (its own, beside it) were imported before its first
line, whether aml-shim's flight-recorder agent is armed, MASTER_PORT, and
any AML_SHIM_STANDBY_* variable it sees), then all-reduces once over Gloo. In
the first attempt every rank waits WAIT_S seconds (the standbys are made
meanwhile; with SHOW_STANDBYS=1 it then says the scheduling classes of its
shim's standbys' threads); rank KILL_STANDBY (-1: none) first SIGKILLs one standby of its
shim (a process running warm_standby.py whose parent is its own), then rank
FAIL_RANK (-1: none) exits 7 (with WAIT_STORE_HOST=1 once its shim's store
host is ready) and the others sleep until ended. In a later
attempt rank RAISE_RANK raises ValueError, and with MP=1 every rank squares
3 numbers in a multiprocessing pool started with spawn, then in one with
forkserver."""
import json
import os
import signal
import sys
import time

import threading  # noqa: E402

loaded = "torch" in sys.modules
learned = "xml.dom.minidom" in sys.modules
local = "warm_job_local" in sys.modules
# aml-shim's flight-recorder agent (with --hang-timeout): its import watch,
# or its thread once torch.distributed is imported.
agent = any(type(f).__name__ == "_AmlFlightWatch" for f in sys.meta_path) or any(
    t.name == "aml-shim-flight-recorder" for t in threading.enumerate())
rank = int(os.environ["RANK"])
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def open_fds():
    """The descriptors open as the script begins and still open a moment
    later: a leaked one stays; one the agent's thread holds for a moment (as
    it writes what the rank imported) does not count (a CI run: a warm
    rank's listing once caught one, [0, 1, 2, 3, 4] against [0, 1, 2, 3]).
    (Each listing's own descriptor is the lowest free one, in every one.)"""
    import time
    seen = None
    for _ in range(3):
        now = {int(fd) for fd in os.listdir("/proc/self/fd")}
        seen = now if seen is None else seen & now
        time.sleep(0.25)
    return sorted(seen)


print(json.dumps({"rank": rank, "attempt": attempt, "name": __name__, "argv": sys.argv,
                  "cwd": os.getcwd(), "path0": sys.path[0], "torch_loaded": loaded, "agent": agent,
                  "minidom_loaded": learned, "local_loaded": local,
                  "port": os.environ.get("MASTER_PORT"),
                  "standby_vars": sorted(k for k in os.environ if k.startswith("AML_SHIM_STANDBY")),
                  "pid": os.getpid(),
                  # Its scheduling class (0: SCHED_OTHER; 5: SCHED_IDLE, a
                  # standby's until its order).
                  "policy": os.sched_getscheduler(0),
                  "agent_store": os.environ.get("TORCHELASTIC_USE_AGENT_STORE"),
                  # Its open descriptors as the script begins (a warm start
                  # must leave none of the standby's or the shim's open).
                  "fds": open_fds()}), flush=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import warm_job_local  # noqa: E402,F401

if os.environ.get("LEARN") == "1":
    import xml.dom.minidom  # noqa: E402,F401


def square(x):
    return x * x


def store_host_ready():
    """Waits (200 s at most) until its shim's store host has imported
    torch and waits for its order: in the idle class it imports only on
    what the ranks leave, and a loaded machine leaves little."""
    me, calm = os.getppid(), 0
    deadline = time.monotonic() + 200
    while calm < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
        ready = False
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"store_host.py" not in f.read():
                        continue
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/maps") as f:
                    ready = (int(fields[1]) == me and fields[0] == "S" and
                             "libtorch" in f.read())
            except OSError:
                continue
            if ready:
                break
        calm = calm + 1 if ready else 0
    print(f"rank {rank} store host ready {calm >= 3}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"rank {rank} attempt {attempt} sum {t.item():.0f}", flush=True)
    if attempt == 0:
        time.sleep(float(os.environ.get("WAIT_S", "12")))
        if os.environ.get("SHOW_STANDBYS") == "1":
            # The scheduling class of each standby of its shim, waiting.
            me, policies = os.getppid(), set()
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read()
                    with open(f"/proc/{pid}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    if b"warm_standby.py" in cmd and ppid == me:
                        policies.update(os.sched_getscheduler(int(t))
                                        for t in os.listdir(f"/proc/{pid}/task"))
                except OSError:
                    continue
            print(f"rank {rank} standby policies {sorted(policies)}", flush=True)
        if rank == int(os.environ.get("KILL_STANDBY", "-1")):
            me = os.getppid()
            for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read()
                    with open(f"/proc/{pid}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    continue
                if b"warm_standby.py" in cmd and ppid == me:
                    os.kill(pid, signal.SIGKILL)
                    print(f"rank {rank} killed standby {pid}", flush=True)
                    break
            time.sleep(0.5)
        if rank == int(os.environ.get("FAIL_RANK", "-1")):
            if os.environ.get("WAIT_STORE_HOST") == "1":
                store_host_ready()
            sys.exit(7)
        if int(os.environ.get("FAIL_RANK", "-1")) >= 0:
            time.sleep(60)
    else:
        if rank == int(os.environ.get("RAISE_RANK", "-1")):
            raise ValueError(f"boom from rank {rank}")
        if os.environ.get("MP") == "1":
            import multiprocessing
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                print(f"rank {rank} squares {pool.map(square, [1, 2, 3])}", flush=True)
            with multiprocessing.get_context("forkserver").Pool(1) as pool:
                print(f"rank {rank} forkserver squares {pool.map(square, [1, 2, 3])}",
                      flush=True)
    dist.destroy_process_group()
