#!/usr/bin/env python3
"""Replacing a lost node, on 4 network-namespace nodes (scripts/netns-cluster.sh,
each with its own hostname): 3 nodes run 2 ranks each, the 4th is there to
take a lost node's place. Once every rank trains (Gloo, a barrier every
0.1 s), node 2 is lost: its launcher process and its ranks are SIGKILLed in
the same instant, as when a node dies; then the same with node 1 (rank 0's
shim, whose heir takes the job; torchrun's rendezvous endpoint). Measured: from the kill to the first
Python line of every rank of the next attempt (6 ranks, the 4th node's among
them). Median, min and max of RUNS runs; prints a Markdown table.

- aml-shim: one shim per node started side by side (as a container or a pod
  per node: RANK, WORLD_SIZE, MASTER_ADDR as the pod gets them),
  `--nproc-per-node 2 --spares 1 --max-restarts 1`.
- torchrun (Debian's torch 1.13, patched to start: peers/torchrun.py)
  `--nnodes 3:4 --nproc_per_node 2 --max_restarts 1 --rdzv_backend c10d` on
  every node, as its elastic mode is meant to route around a lost node. It
  has no spare: all 4 nodes join (WORLD_SIZE 8), and after the loss the 3
  left meet again (WORLD_SIZE 6). At its defaults (the agents look at their
  workers every 5 s; a rendezvous that reached its minimum waits 30 s for
  more nodes), and tuned (0.1 s, 1 s).

Needs root. bench/spare_latency.py [--runs N] [--shim build/aml-shim]"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from results import write_section

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import descendants  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NETNS = os.path.join(ROOT, "scripts", "netns-cluster.sh")
PY = "/usr/bin/python3"
NAME, SUBNET = "amlb", "49"
NET = f"198.18.{SUBNET}"
MARK = "<!-- bench/spare_latency.py -->"
RANK_SCRIPT = r"""
import os, time
t = time.time()
a = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
r = os.environ["RANK"]
d = os.environ["BENCH_DIR"]
with open(f"{d}/start-{a}-{r}", "w") as f:
    f.write(repr(t))
import torch.distributed as dist
dist.init_process_group("gloo")
with open(f"{d}/ready-{a}-{r}", "w") as f:
    f.write(repr(time.time()))
# As many barriers on every rank (a count, not a clock: a rank that left
# while another waited in one more would fail it).
for _ in range(600 if a == 0 else 20):
    dist.barrier()
    time.sleep(0.1)
dist.destroy_process_group()
"""


def on_node(i, cmd):
    """cmd in node i's namespace, with the node's own hostname."""
    return ["ip", "netns", "exec", f"{NAME}{i}", "unshare", "--uts", "sh", "-c",
            f'hostname {NAME}{i} && exec "$@"', "sh"] + cmd


class RunFailed(Exception):
    pass


def lose_node(commands, d, ready, victim, settle_s, measure, start_s=120):
    """Starts each node's command (logs in `d`), and once every path of
    `ready` exists (within `start_s`) and `settle_s` more passed, kills node
    `victim` (1 to 4): its launcher and everything below it at once. When
    every other launcher ended well, returns measure(the kill's time);
    RunFailed when the job did not go on to its end."""
    procs = []
    for i, (cmd, env) in enumerate(commands, start=1):
        log = open(f"{d}/node-{i}.log", "w")
        procs.append(subprocess.Popen(on_node(i, cmd), env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True))
    try:
        deadline = time.time() + start_s
        while not all(os.path.exists(p) for p in ready):
            if time.time() > deadline:
                raise RunFailed("the job did not start")
            time.sleep(0.05)
        time.sleep(settle_s)
        lost = procs[victim - 1]
        victims = [lost.pid] + descendants(lost.pid)
        killed = time.time()
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for i, p in enumerate(procs):
            if p is not lost and p.wait(timeout=240) != 0:
                raise RunFailed(f"node {i + 1}'s launcher exited {p.returncode}")
        return measure(killed)
    except subprocess.TimeoutExpired:
        raise RunFailed("a launcher still ran 240 s after the kill")
    except OSError as e:
        raise RunFailed(str(e))
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def once(commands, d, ranks_before, victim):
    """Node `victim` lost once every rank trains: the kill to the last first
    line of the next attempt."""
    def measure(killed):
        return max(float(open(f"{d}/start-1-{r}").read()) for r in range(6)) - killed
    return lose_node(commands, d, [f"{d}/ready-0-{r}" for r in range(ranks_before)], victim, 2,
                     measure)


def repeat(name, runs, port, one):
    """`runs` runs of one(d, port), each in a directory of its own on a port
    of its own: their measures, a note on those that did not finish (their
    logs on stderr), and the last port used."""
    xs, failed = [], []
    for _ in range(runs):
        port += 1
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o777)
            try:
                xs.append(one(d, port))
            except RunFailed as e:
                failed.append(str(e))
                print(f"{name}: a run failed: {e}\n{logs(d)}", file=sys.stderr)
    note = (f" ({len(failed)} of {runs} runs did not finish: "
            f"{'; '.join(sorted(set(failed)))})" if failed else "")
    return xs, note, port


def logs(d):
    return "".join(open(os.path.join(d, f)).read()[-3000:] for f in sorted(os.listdir(d))
                   if f.endswith(".log"))


def shim_commands(shim, script, d, port):
    out = []
    for i in range(1, 5):
        env = dict(PATH=os.environ["PATH"], BENCH_DIR=d, RANK=str(i - 1), WORLD_SIZE="4",
                   MASTER_ADDR=f"{NET}.1", MASTER_PORT=str(port))
        out.append(([shim, "--nproc-per-node", "2", "--spares", "1", "--max-restarts", "1",
                     "--", PY, script], env))
    return out


def torchrun_commands(script, d, port, monitor, last_call):
    out = []
    for _ in range(1, 5):
        env = dict(PATH=os.environ["PATH"], BENCH_DIR=d)
        cmd = [PY, os.path.join(HERE, "peers", "torchrun.py"), "--nnodes", "3:4",
               "--nproc_per_node", "2", "--max_restarts", "1", "--rdzv_backend", "c10d",
               "--rdzv_endpoint", f"{NAME}1:{port}", "--rdzv_id", "bench",
               "--monitor_interval", str(monitor)]
        if last_call is not None:
            cmd += ["--rdzv_conf", f"last_call_timeout={last_call}"]
        out.append((cmd + [script], env))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--shim", default=os.path.join(ROOT, "build", "aml-shim"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("spare_latency: needs root (network namespaces)")
    subprocess.run([NETNS, "up", NAME, "4", SUBNET], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(RANK_SCRIPT)
        script = f.name
    os.chmod(script, 0o644)
    peers = [
        ("aml-shim --spares 1 --max-restarts 1 (one shim per node)",
         lambda d, port: shim_commands(args.shim, script, d, port), 6),
        ("torchrun --nnodes 3:4 --max_restarts 1, c10d (defaults: monitor 5 s, last call 30 s)",
         lambda d, port: torchrun_commands(script, d, port, 5, None), 8),
        ("torchrun --nnodes 3:4 --max_restarts 1, c10d, --monitor_interval 0.1, "
         "last_call_timeout=1",
         lambda d, port: torchrun_commands(script, d, port, 0.1, 1), 8),
    ]
    # Node 2; then node 1: rank 0's shim (a new root takes the job), and
    # torchrun's c10d rendezvous endpoint.
    header = ["| launcher | a node lost to every rank of the next attempt started, median | min | "
              "max |", "|---|---|---|---|"]
    tables = {2: list(header), 1: list(header)}
    try:
        port = 29600
        for victim in (2, 1):
            rows = tables[victim]
            print(f"node {victim} lost\n" + "\n".join(rows))
            for name, commands, ranks in peers:
                xs, note, port = repeat(
                    name, args.runs, port,
                    lambda d, p: once(commands(d, p), d, ranks, victim))
                cells = (f"{statistics.median(xs):.2f} s | {min(xs):.2f} s | {max(xs):.2f} s"
                         if xs else "- | - | -")
                rows.append(f"| {name}{note} | {cells} |")
                print(rows[-1], flush=True)
    finally:
        os.unlink(script)
        subprocess.run([NETNS, "down", NAME], check=False)
    write_section(MARK, MARK + "\n### Replacing a lost node: aml-shim --spares against torchrun "
                  "--nnodes 3:4\n\n"
                  f"Measured by `bench/spare_latency.py --runs {args.runs}` on "
                  f"{os.uname().nodename} ({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}. "
                  "4 network-namespace nodes, 3 of them running 2 Python ranks each (Gloo, a "
                  "barrier every 0.1 s); node 2's launcher process and its ranks SIGKILLed at "
                  "once; from the kill to the first line of the last of the next attempt's 6 "
                  "ranks (the 4th node's among them for aml-shim; torchrun has no spare: all 4 "
                  "nodes ran, 8 ranks, and the 3 left meet again with 6).\n\n" +
                  "\n".join(tables[2]) + "\n\n"
                  "Node 1 lost instead: it runs rank 0's shim, whose heir takes the job "
                  "(docs/control-plane.md, \"A new root\"), and torchrun's c10d rendezvous "
                  "endpoint (its store).\n\n" + "\n".join(tables[1]) + "\n")


if __name__ == "__main__":
    main()
