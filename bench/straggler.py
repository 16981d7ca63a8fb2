#!/usr/bin/env python3
"""The straggler check on network-namespace nodes (docs/control-plane.md,
"Slow nodes"): torch 2.14 over Gloo in the forky root (scripts/forky-root.sh),
one rank on each of 2 nodes under Open MPI's mpirun, running
tests/e2e/scripts/paced_steps.py (steps of CPU work, each ending in an
all-reduce) with rank 1 doing 1.1, 1.3 or 2 times the work. For each: the
look that named its node (--straggler-check 5s; -v's "straggler look N"
lines) and what the line said; a healthy run (1.0) for false alarms; and
the cost of the looks: steps done in 60 s with and without the check.
Needs root. Usage: bench/straggler.py [RUNS] [RUN_S] [cost]: "cost" runs
only the cost's pairs, with and without the check in turn (RUNS pairs)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from harness import SRC, forky_mpirun, forky_root  # noqa: E402

CLUSTER, SUBNET = "amlb", 49
NET = f"198.18.{SUBNET}"
NETNS = os.path.join(SRC, "scripts", "netns-cluster.sh")
STEPS = os.path.join(SRC, "tests", "e2e", "scripts", "paced_steps.py")


def job(root, agent, shim_args, **env):
    r = forky_mpirun(root, agent, CLUSTER, NET, 2, 1, [*shim_args, "python3", STEPS],
                     timeout=900, **env)
    if r.returncode != 0:
        raise SystemExit(r.stdout + r.stderr)
    return r


def main():
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
