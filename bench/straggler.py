#!/usr/bin/env python3
"""The straggler check on network-namespace nodes (docs/control-plane.md,
"Slow nodes"): torch 2.14 over Gloo in the forky root (scripts/forky-root.sh),
one rank on each of 2 nodes under Open MPI's mpirun, running
tests/e2e/scripts/paced_steps.py (steps of CPU work, each ending in an
all-reduce) with rank 1 doing 1.1, 1.3 or 2 times the work. For each: the
look that named its node (--straggler-check 5s; -v's "straggler look N"
lines) and what the line said; a healthy run (1.0) for false alarms; and
the cost of the looks: steps done in 60 s with and without the check.
"healthy MINUTES": the false alarms of a healthy job beside CPU hogs (two
busy loops per core started first): 3 nodes of 2 ranks with GPU-like steps
(about 1 ms of Python and a 30 ms sleep, +-20 % alike on every rank) for
MINUTES, a look every 5 s; the lines that named a node or a rank, and each
node's shims' CPU per look (rank 0's node also judges).
Needs root. Usage: bench/straggler.py [RUNS] [RUN_S] [cost] |
bench/straggler.py healthy MINUTES: "cost" runs only the cost's pairs, with
and without the check in turn (RUNS pairs)."""
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from harness import SRC, CpuHogs, forky_mpirun, forky_root  # noqa: E402

CLUSTER, SUBNET = "amlb", 49
NET = f"198.18.{SUBNET}"
NETNS = os.path.join(SRC, "scripts", "netns-cluster.sh")
STEPS = os.path.join(SRC, "tests", "e2e", "scripts", "paced_steps.py")


def job(root, agent, shim_args, nodes=2, per_node=1, timeout=900, **env):
    r = forky_mpirun(root, agent, CLUSTER, NET, nodes, per_node, [*shim_args, "python3", STEPS],
                     timeout=timeout, **env)
    if r.returncode != 0:
        raise SystemExit(r.stdout + r.stderr)
    return r


def shim_cpu(nodes, done, seen):
    """Until `done`: every second, each node's aml-shim processes' CPU
    (user and system, in clock ticks) into seen[node][pid] (the last read)."""
    tick = os.sysconf("SC_CLK_TCK")
    while not done.wait(1):
        for node in range(1, nodes + 1):
            pids = subprocess.run(["ip", "netns", "pids", f"{CLUSTER}{node}"],
                                  stdout=subprocess.PIPE, text=True).stdout.split()
            for pid in pids:
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        stat = f.read()
                except OSError:
                    continue
                comm = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                if comm == "aml-shim":
                    seen.setdefault(node, {})[pid] = (int(fields[11]) + int(fields[12])) / tick


def healthy(root, agent, minutes):
    nodes, seen, done = 3, {}, threading.Event()
    with CpuHogs(2):
        t = threading.Thread(target=shim_cpu, args=(nodes, done, seen), daemon=True)
        t.start()
        r = job(root, agent, ["--straggler-check", "5s", "-v"], nodes=nodes, per_node=2,
                timeout=minutes * 60 + 300, RUN_S=minutes * 60, WORK=20000, PAUSE_S=0.03,
                NOISE=0.2, PRINT_EVERY=100000)
        done.set()
        t.join()
    steps = re.search(r"rank 0 steps (\d+)", r.stdout).group(1)
    looks = re.findall(r"straggler look (\d+): 3 shims' parts, \d+ collectives, ([1-9]\d*) "
                       r"judged", r.stderr)
    named = re.findall(r"warning: ([^\n]* is (?:slow|late)[^\n]*)", r.stderr)
    cleared = re.findall(r"aml-shim: ([^\n]* is no longer (?:slow|late)[^\n]*)", r.stderr)
    total = int(re.findall(r"straggler look (\d+):", r.stderr)[-1])
    print(f"healthy, {minutes} min beside 2 busy loops per core: {steps} steps; {len(looks)} "
          f"looks judged (of {total}); named: {len(named)}", flush=True)
    for line in named + cleared:
        print(f"  {line}", flush=True)
    for node in sorted(seen):
        cpu = sum(seen[node].values())
        print(f"  node {node}'s aml-shim processes: {cpu:.2f} s of CPU, {1000 * cpu / total:.1f} "
              f"ms per look", flush=True)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "healthy":
        root = forky_root()
        subprocess.run([NETNS, "up", CLUSTER, "3", str(SUBNET)], check=True)
        try:
            agent = subprocess.run([NETNS, "agent", CLUSTER], stdout=subprocess.PIPE, text=True,
                                   check=True).stdout.strip()
            healthy(root, agent, int(sys.argv[2]))
        finally:
            subprocess.run([NETNS, "down", CLUSTER], check=False)
        return
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    run_s = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    root = forky_root()
    subprocess.run([NETNS, "up", CLUSTER, "2", str(SUBNET)], check=True)
    try:
        agent = subprocess.run([NETNS, "agent", CLUSTER], stdout=subprocess.PIPE, text=True,
                               check=True).stdout.strip()
        cost_only = len(sys.argv) > 3 and sys.argv[3] == "cost"
        for factor in () if cost_only else (1.0, 1.1, 1.3, 2.0):
            for i in range(runs):
                r = job(root, agent, ["--straggler-check", "5s", "-v"], RUN_S=run_s,
                        SLOW_RANK=1, SLOW_FACTOR=factor, PRINT_EVERY=100000)
                steps = re.search(r"rank 0 steps (\d+)", r.stdout).group(1)
                looks = re.findall(r"straggler look (\d+): 2 shims' parts, \d+ collectives, "
                                   r"([1-9]\d*) judged", r.stderr)
                # (Only the root prints a look's line; the warning follows it.)
                warning = re.search(r"warning: (\S+ \(shim \d+\) is slow[^\n]*)", r.stderr)
                at = re.findall(r"straggler look (\d+):", r.stderr[:warning.start()]
                                )[-1] if warning else None
                first = looks[0][0] if looks else "-"
                print(f"factor {factor} run {i + 1}: {steps} steps in {run_s} s; first look that "
                      f"judged: {first}; named at look: "
                      f"{at + ': ' + warning.group(1) if warning else 'never'}", flush=True)
        for i in range(runs):
            for check in (True, False):
                args = ["--straggler-check", "5s"] if check else []
                r = job(root, agent, args, RUN_S=run_s, PRINT_EVERY=100000)
                steps = re.search(r"rank 0 steps (\d+)", r.stdout).group(1)
                print(f"{'with' if check else 'without'} --straggler-check 5s, run {i + 1}: "
                      f"{steps} steps in {run_s} s", flush=True)
    finally:
        subprocess.run([NETNS, "down", CLUSTER], check=False)


if __name__ == "__main__":
    main()
