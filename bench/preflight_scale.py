#!/usr/bin/env python3
"""--preflight tcp at scale on one machine (README.md, "TCP preflight: limits
and strangers"): N shim processes of a fake world (RANK/WORLD_SIZE/NODE_RANK
through the environment, MASTER_ADDR=127.0.0.1), each running the preflight
and then exec'ing `true`, all started at once under a 1024-descriptor soft
limit. Reports wall time (first spawn to last exit), rank 0's peak RSS
(wait4's ru_maxrss) and its peak open descriptors (sampled from /proc).
Usage: bench/preflight_scale.py [N ...]   (default 256 1024 2048 4096)
Writes its table as the last section of bench/RESULTS.md (bench/run.py keeps
it) and prints it."""
import os
import resource
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM = os.environ.get("AML_SHIM") or os.path.join(ROOT, "build", "aml-shim")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_fds(pid, out, stop):
    while not stop.is_set():
        try:
            out[0] = max(out[0], len(os.listdir(f"/proc/{pid}/fd")))
        except OSError:
            return
        time.sleep(0.005)


def one(n):
    port = free_port()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMPI_", "PMIX_", "SLURM_", "RANK", "WORLD_SIZE", "MASTER_"))}
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    procs = []
    start = time.monotonic()
    for rank in range(n):
        env = dict(base, RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK="0",
                   LOCAL_WORLD_SIZE="1", NODE_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", NCCL_SOCKET_IFNAME="lo")
        procs.append(subprocess.Popen([SHIM, "-q", "--ib", "off", "--preflight", "tcp",
                                       "--preflight-timeout", "300", "--", "true"],
                                      env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, preexec_fn=limit))
        if rank == 0:
            fds, stop = [0], threading.Event()
            sampler = threading.Thread(target=peak_fds, args=(procs[0].pid, fds, stop))
            sampler.start()
    _, status, usage = os.wait4(procs[0].pid, 0)
    stop.set()
    sampler.join()
    codes = [os.waitstatus_to_exitcode(status)] + [p.wait() for p in procs[1:]]
    wall = time.monotonic() - start
    return wall, usage.ru_maxrss / 1024, fds[0], codes.count(0)


MARK = "<!-- bench/preflight_scale.py -->"


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [256, 1024, 2048, 4096]
    rows, got = [], []
    for n in sizes:
        wall, rss, fds, ok = one(n)
        got.append((n, wall, rss, fds))
        rows.append(f"| {n} | {wall:.2f} s | {rss:.1f} MiB | {fds} | {ok}/{n} | "
                    f"{wall / n * 1000:.2f} ms |")
        print(rows[-1], flush=True)
    text = (MARK + "\n### `--preflight tcp` at scale: N shim processes on this machine\n\n"
            f"Measured by `bench/preflight_scale.py` on {os.uname().nodename} "
            f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}: a fake world through the "
            "environment, every shim started at once under a 1024-descriptor soft limit, "
            "each running the preflight and exec'ing `true`. Wall: first spawn to last exit "
            "(mostly starting N processes on the cores there are).\n\n"
            "| ranks | wall | rank 0 peak RSS | rank 0 peak fds | passed | wall per rank |\n"
            "|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n")
    if len(got) > 1:
        (n0, w0, r0, _), (n1, w1, r1, f1) = got[0], got[-1]
        per_k = (r1 - r0) / (n1 - n0) * 1000
        text += (f"\nGrowth from {n0} to {n1} ranks: wall x{w1 / w0:.1f} for x{n1 / n0:.0f} ranks; "
                 f"rank 0's memory +{per_k:.2f} MiB per 1,000 ranks (the hello table), its "
                 f"descriptors one per rank plus {f1 - n1}. Extrapolated to 10,000 ranks "
                 f"(1,250 nodes x 8): rank 0 needs about {r0 + per_k * (10000 - n0) / 1000:.0f} MiB "
                 f"and {10000 + f1 - n1} descriptors, so a hard RLIMIT_NOFILE of at least that "
                 "(`ulimit -Hn`: often 4096 on older systems, 524288 or more on newer ones; "
                 "raise it in limits.conf where it is lower). Every rank still opens one connection to rank 0: the node-local "
                 "fan-in that would make it one per node is not built yet. Rank 0's own work is "
                 "one accept and one 40-byte hello per rank; on a cluster the ranks start in "
                 "parallel, so the wall time there is the launcher's start-up plus that.\n")
    out = os.path.join(ROOT, "bench", "RESULTS.md")
    with open(out) as f:
        old = f.read()
    i = old.find(MARK)
    keep = old[:i] if i >= 0 else old + "\n"
    with open(out, "w") as f:
        f.write(keep + text)
    print(text)


if __name__ == "__main__":
    main()
