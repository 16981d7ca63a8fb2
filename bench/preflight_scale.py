#!/usr/bin/env python3
"""--preflight tcp at scale on one machine (docs/preflight.md, "TCP preflight: limits
and strangers"): N shim processes of a fake world (RANK/WORLD_SIZE/LOCAL_RANK/
NODE_RANK through the environment, MASTER_ADDR=127.0.0.1), each running the
preflight and then exec'ing `true`, all started at once under a
1024-descriptor soft limit. Two layouts: one rank per node (every shim
connects to rank 0), and 8 ranks per node, each node a UTS namespace with
its own host name (the node's local rank 0 gathers its node: one connection
per node). Reports wall time (first spawn to last exit), rank 0's peak RSS
(VmHWM, sampled) and its peak open descriptors (sampled from /proc).
Needs root (unshare(CLONE_NEWUTS)).
Usage: bench/preflight_scale.py [N ...]   (default 256 1024 2048 4096)
Writes its table as the last section of bench/RESULTS.md (bench/run.py keeps
it) and prints it."""
import ctypes
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


def sample(pid, out):
    """Rank 0's peak descriptors and peak RSS (VmHWM, once it is aml-shim:
    wait4's ru_maxrss would count the forked Python before exec), until it
    is a zombie (it execs `true` after the preflight)."""
    while True:
        try:
            out[0] = max(out[0], len(os.listdir(f"/proc/{pid}/fd")))
            with open(f"/proc/{pid}/status") as f:
                status = dict(l.split(":", 1) for l in f if ":" in l)
            if status["State"].strip().startswith("Z"):
                return
            if status["Name"].strip() == "aml-shim":
                out[1] = max(out[1], int(status["VmHWM"].split()[0]) / 1024)
        except (OSError, KeyError, ValueError):
            return
        time.sleep(0.005)


LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUTS = 0x04000000


def node_of(name):
    """preexec_fn: a UTS namespace whose host name is `name`."""
    raw = name.encode()

    def enter():
        if LIBC.unshare(CLONE_NEWUTS) != 0 or LIBC.sethostname(raw, len(raw)) != 0:
            raise OSError(ctypes.get_errno(), "unshare/sethostname")
    return enter


FAKES = os.path.join(os.path.dirname(SHIM), "tests")


def one(n, per_node, nccl=False):
    port = free_port()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMPI_", "PMIX_", "SLURM_", "RANK", "WORLD_SIZE", "MASTER_"))}
    procs = []
    start = time.monotonic()
    for rank in range(n):
        node = rank // per_node
        env = dict(base, RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank % per_node),
                   GROUP_WORLD_SIZE=str((n + per_node - 1) // per_node),
                   LOCAL_WORLD_SIZE=str(per_node), NODE_RANK=str(node), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", NCCL_SOCKET_IFNAME="lo")
        check = ["--preflight", "tcp"]
        if nccl:
            env.update(AML_SHIM_LIBCUDART=os.path.join(FAKES, "libfake_cudart.so"),
                       AML_SHIM_LIBNCCL=os.path.join(FAKES, "libfake_nccl.so"),
                       FAKE_CUDA_DEVICES=str(per_node))
            check = ["--preflight", "nccl", "--preflight-bytes", "4K"]
        enter = node_of(f"bench-node-{node}") if per_node > 1 else None

        def setup(enter=enter):
            # The stand-in NCCL's world all-reduce is a star on rank 0's
            # worker, which keeps the soft limit it was started with.
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if nccl else 1024, hard))
            if enter:
                enter()
        procs.append(subprocess.Popen([SHIM, "-q", "--ib", "off", *check,
                                       "--preflight-timeout", "300", "--", "true"],
                                      env=env, stdout=subprocess.DEVNULL,
                                      stderr=None if os.environ.get("BENCH_STDERR")
                                      else subprocess.DEVNULL, preexec_fn=setup))
        if rank == 0:
            peak = [0, 0.0]
            sampler = threading.Thread(target=sample, args=(procs[0].pid, peak))
            sampler.start()
    sampler.join()  # before rank 0 is reaped: its /proc must not be another's
    codes = [p.wait() for p in procs]
    wall = time.monotonic() - start
    return wall, peak[1], peak[0], codes.count(0)


MARK = "<!-- bench/preflight_scale.py -->"


def table(title, rows, got):
    text = (f"\n#### {title}\n\n"
            "| ranks | wall | rank 0 peak RSS | rank 0 peak fds | passed | wall per rank |\n"
            "|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n")
    if len(got) > 1:
        (n0, w0, r0, _), (n1, w1, r1, f1) = got[0], got[-1]
        per_k = (r1 - r0) / (n1 - n0) * 1000
        text += (f"\nGrowth from {n0} to {n1} ranks: wall x{w1 / w0:.1f} for x{n1 / n0:.0f} "
                 f"ranks; rank 0's memory {per_k:+.2f} MiB per 1,000 ranks; its peak "
                 f"descriptors {f1} at {n1} ranks. Extrapolated to 10,000 ranks: about "
                 f"{r0 + per_k * (10000 - n0) / 1000:.0f} MiB.\n")
    return text


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [256, 1024, 2048, 4096]
    text = (MARK + "\n### `--preflight tcp` at scale: N shim processes on this machine\n\n"
            f"Measured by `bench/preflight_scale.py` on {os.uname().nodename} "
            f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}: a fake world through the "
            "environment, every shim started at once under a 1024-descriptor soft limit, "
            "each running the preflight and exec'ing `true`. Wall: first spawn to last exit "
            "(mostly starting N processes on the cores there are).\n")
    layouts = [(1, False, "One rank per node: every shim connects to rank 0"),
               (8, False, "8 ranks per node (a UTS namespace each): the node fan-in, "
                          "one connection per node"),
               (8, True, "`--preflight nccl`, 8 stand-in GPUs per node (tests/fakes), 4 KiB: "
                         "every shim and its NCCL worker; the GPU stage's frames go to rank 0 "
                         "from every shim (no fan-in), and the stand-in's world all-reduce is "
                         "itself a star on rank 0's worker")]
    only = os.environ.get("LAYOUTS")  # e.g. "2" to run the third only
    for i, (per_node, nccl, title) in enumerate(layouts):
        if only and str(i) not in only.split(","):
            continue
        rows, got = [], []
        for n in sizes:
            wall, rss, fds, ok = one(n, per_node, nccl)
            got.append((n, wall, rss, fds))
            rows.append(f"| {n} | {wall:.2f} s | {rss:.1f} MiB | {fds} | {ok}/{n} | "
                        f"{wall / n * 1000:.2f} ms |")
            print(per_node, rows[-1], flush=True)
        text += table(title, rows, got)
    text += ("\nAt 10,000 ranks (1,250 nodes x 8) rank 0 holds 1,250 connections with the "
             "fan-in (10,000 without: a hard RLIMIT_NOFILE of at least that, which `ulimit -Hn` "
             "shows; often 4096 on older systems). Rank 0's own work is one accept and one "
             "hello per node; on a cluster the ranks start in parallel, so the wall time there "
             "is the launcher's start-up plus that.\n")
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
