#!/usr/bin/env python3
"""The control plane at scale on one machine (docs/control-plane.md, "Control plane"): N
shim processes of a fake world (RANK/WORLD_SIZE/MASTER_ADDR through the
environment, MASTER_ADDR=127.0.0.1), each under a hard RLIMIT_NOFILE of 4096,
started at once with --hang-timeout and one child that never prints
(`sleep`). All shims come from one address, so the tree is built as for many
shims per node (at most 64 child links each). Measures, for rank 0's shim:
the join (first spawn to rank 0's "joined"), its open descriptors, RSS and
CPU and its wake-ups per second (voluntary context switches) over 5 s of a
healthy job, and the time from the hang verdict to the printed roll-call
(stacks from every shim: here "no Python stack"), then every shim's exit.
Also start-to-exit of one shim with 4 children running `true`, control plane
on (--fail-fast job) and off.
Usage: bench/control_scale.py [N ...]   (default 256 1024 4096)
Writes its section into bench/RESULTS.md (bench/run.py keeps it) and prints it."""
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time

from results import write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM = os.environ.get("AML_SHIM") or os.path.join(ROOT, "build", "aml-shim")
HANG_S = 40
MARK = "<!-- bench/control_scale.py -->"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(l.split(":", 1) for l in f if ":" in l)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one(n):
    port = free_port()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMPI_", "PMIX_", "SLURM_", "RANK", "WORLD_SIZE", "MASTER_",
                                 "AML_SHIM_"))}

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))

    # PATH holds `sleep` alone: no stack reader (gdb) runs, so "collect" is
    # the control plane's own cost, not N debuggers' on this machine's cores
    # (on a cluster each node reads only its own ranks).
    bindir = f"/tmp/aml-bench-path-{os.getpid()}"
    os.makedirs(bindir, exist_ok=True)
    if not os.path.exists(f"{bindir}/sleep"):
        os.symlink("/bin/sleep", f"{bindir}/sleep")
    procs = []
    start = time.monotonic()
    for rank in range(n):
        env = dict(base, RANK=str(rank), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), AML_SHIM_JOB_SECRET="bench-secret-0123456789",
                   PATH=bindir)
        procs.append(subprocess.Popen(
            [SHIM, "-v" if rank == 0 else "-q", "--ib", "off", "--hang-timeout", f"{HANG_S}s",
             "--preflight-timeout", "600", "--grace", "1", "--", "sleep", "100000"],
            env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE if rank == 0 else
            (None if os.environ.get("BENCH_STDERR") else subprocess.DEVNULL), preexec_fn=limit))
    lines = []  # rank 0's stderr, each with when it arrived

    def read():
        for raw in procs[0].stderr:
            lines.append((time.monotonic(), raw.decode(errors="replace")))
    reader = threading.Thread(target=read)
    reader.start()

    def when(pattern, timeout=900):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for t, line in list(lines):
                if re.search(pattern, line):
                    return t, line
            time.sleep(0.01)
        raise SystemExit(f"bench: rank 0 never printed {pattern!r}")

    joined, _ = when(r"control plane: joined")
    # Every shim starts its keeper and child after the join: let that pass
    # (minutes of forks on 2 cores at 2048 shims would be measured instead).
    time.sleep(min(25, HANG_S - 10))
    pid = procs[0].pid
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    st0, c0, t0 = proc_status(pid), cpu_s(pid), time.monotonic()
    time.sleep(5)
    st1, c1, t1 = proc_status(pid), cpu_s(pid), time.monotonic()
    wake = (int(st1["voluntary_ctxt_switches"]) - int(st0["voluntary_ctxt_switches"])) / (t1 - t0)
    rss = int(st1["VmRSS"].split()[0]) / 1024
    cpu = (c1 - c0) / (t1 - t0) * 100
    rolled, line = when(r"hung: no rank of the job wrote any output for")
    silent = float(re.search(r"for (\d+) s", line).group(1))
    codes = [p.wait() for p in procs]
    reader.join()
    end = time.monotonic()
    collect = rolled - joined - silent  # the verdict came `silent` s after the job started
    return (n, joined - start, fds, rss, cpu, wake, collect, end - rolled,
            sum(c == 124 for c in codes))


def on_off():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "RANK"))}
    out = {}
    for name, extra in (("off", []), ("on (`--fail-fast job`)", ["--fail-fast", "job"])):
        times = []
        for _ in range(20):
            t = time.monotonic()
            subprocess.run([SHIM, "--nproc-per-node", "4", *extra, "--", "true"], env=env,
                           check=True)
            times.append(time.monotonic() - t)
        out[name] = statistics.median(times)
    return out


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [256, 1024, 4096]
    rows = []
    for n in sizes:
        r = one(n)
        rows.append(f"| {r[0]} | {r[1]:.1f} s | {r[2]} | {r[3]:.1f} MiB | {r[4]:.2f} % | "
                    f"{r[5]:.1f} | {r[6] * 1000:.0f} ms | {r[7]:.1f} s | {r[8]} of {r[0]} |")
        print(rows[-1], flush=True)
    oo = on_off()
    text = (MARK + "\n### Control plane at scale: N shim processes on this machine\n\n"
            f"Measured by `bench/control_scale.py` on {os.uname().nodename} "
            f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}: N shims started at once "
            "(hard RLIMIT_NOFILE 4096 each), one child each that never prints, "
            f"`--hang-timeout {HANG_S}s`. All shims come from one address: the tree of many "
            "shims per node. Rank 0's figures; wake-ups are its voluntary context switches per "
            "second while the job is healthy; collect is the hang verdict to the printed "
            "roll-call (every shim's stacks in; no stack reader on PATH, so this is the "
            "protocol's cost); end is the roll-call to the last shim's exit.\n\n"
            "| shims | join | rank 0 fds | rank 0 RSS | rank 0 CPU | wake-ups/s | collect | "
            "end | exit 124 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" +
            "\n".join(rows) + "\n\n"
            "Start-to-exit of one shim with 4 children running `true` (median of 20):\n\n"
            "| control plane | median |\n|---|---:|\n" +
            "\n".join(f"| {k} | {v * 1000:.1f} ms |" for k, v in oo.items()) + "\n")
    write_section(MARK, text)
    print(text)


if __name__ == "__main__":
    main()
