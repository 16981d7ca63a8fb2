#!/usr/bin/env python3
"""A lost node replaced by a spare, measured to the next attempt's first
step (issue 51's "≤ 1 s with a spare on netns nodes"): on 4 network-namespace
nodes (scripts/netns-cluster.sh, each with its own hostname), 3 run 2 ranks
each and the 4th is the spare; one shim per node started side by side (as a
container or a pod per node: RANK, WORLD_SIZE, MASTER_ADDR as the pod gets
them), `--nproc-per-node 2 --spares 1 --max-restarts 1`, cold and with
`--warm-restart`. Each rank imports torch, starts a Gloo process group and
all-reduces one tensor: its first step. 25 s after every rank's first step
(the standbys are made 10 s into an attempt once the ranks' modules are
known, and import them), node 2's shim and its ranks are SIGKILLed in the
same instant, as when a node dies; measured: from the kill until every rank
of the next attempt (the spare's among them) has finished its first
all-reduce. Median, min and max of RUNS runs, with Debian's torch 1.13 and
with torch 2.14 in the forky root (scripts/forky-root.sh, USE_LIBUV=0).
Prints a Markdown table and writes its section of bench/RESULTS.md.

(torchrun has no spare; bench/spare_latency.py compares its --nnodes 3:4
with aml-shim --spares to each rank's first line.)

Needs root. bench/restart_spare.py [--runs N] [--shim build/aml-shim]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from results import write_section
from restart_first_step import RANK_SCRIPT
from spare_latency import NAME, NET, NETNS, ROOT, lose_node, repeat

MARK = "<!-- bench/restart_spare.py -->"
WAIT_S = 25  # after every rank's first step, before the loss


def once(commands, d):
    """Node 2 lost WAIT_S after every rank's first step: the kill to every
    rank's first step of the next attempt, and of it the last rank's
    interpreter start."""
    def measure(killed):
        times = [[float(x) for x in open(f"{d}/times-1-{r}").read().split()] for r in range(6)]
        return max(t[2] for t in times) - killed, max(t[0] for t in times) - killed
    return lose_node(commands, d, [f"{d}/times-0-{r}" for r in range(6)], 2, WAIT_S, measure,
                     start_s=240)


def commands(wrap, shim, py, script, d, port, warm, extra):
    out = []
    for i in range(1, 5):
        env = dict(PATH=os.environ["PATH"], BENCH_DIR=d, BENCH_MODULES="", BENCH_FAIL_RANK="-1",
                   RANK=str(i - 1), WORLD_SIZE="4",
                   MASTER_ADDR=f"{NET}.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="eth0",
                   **extra)
        out.append((wrap + [shim, "--nproc-per-node", "2", "--spares", "1", "--max-restarts",
                            "1", *(["--warm-restart"] if warm else []), "--", py, script], env))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shim", default=os.path.join(ROOT, "build", "aml-shim"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("restart_spare: needs root (network namespaces)")
    shim = os.path.abspath(args.shim)
    forky = subprocess.run([os.path.join(ROOT, "scripts", "forky-root.sh")], check=True,
                           capture_output=True, text=True).stdout.strip()
    tmp = tempfile.gettempdir()
    setups = [
        ("Debian's torch 1.13", [], "/usr/bin/python3", {}),
        ("torch 2.14 (forky root)", [os.path.join(ROOT, "scripts", "in-root.sh"), forky],
         "python3", {"USE_LIBUV": "0",
                     "AML_ROOT_BINDS": ":".join(sorted({os.path.dirname(shim), ROOT, tmp}))}),
    ]
    subprocess.run([NETNS, "up", NAME, "4", NET.rsplit(".", 1)[1]], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(RANK_SCRIPT)
        script = f.name
    os.chmod(script, 0o644)
    rows = ["| torch | aml-shim | node lost to every rank's first step, median (min-max) | "
            "of it: the last interpreter started |", "|---|---|---|---|"]
    print("\n".join(rows))
    try:
        port = 29700
        for torch, wrap, py, extra in setups:
            for warm in (False, True):
                name = ("--spares 1 --max-restarts 1" +
                        (" --warm-restart" if warm else " (cold)"))
                xs, note, port = repeat(
                    name, args.runs, port,
                    lambda d, p: once(commands(wrap, shim, py, script, d, p, warm,
                                               extra), d))
                step = [x[0] for x in xs]
                cells = (f"{statistics.median(step):.2f} s ({min(step):.2f}-{max(step):.2f}) | "
                         f"{statistics.median(x[1] for x in xs):.2f} s" if xs else "- | -")
                rows.append(f"| {torch} | {name}{note} | {cells} |")
                print(rows[-1], flush=True)
    finally:
        os.unlink(script)
        subprocess.run([NETNS, "down", NAME], check=False)
    write_section(MARK, MARK + "\n### A lost node replaced by a spare, to the next attempt's "
                  "first step\n\n"
                  f"Measured by `bench/restart_spare.py --runs {args.runs}` on "
                  f"{os.uname().nodename} ({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}. "
                  "4 network-namespace nodes, one shim per node side by side, 3 of them running "
                  "2 ranks each (Gloo), the 4th the spare; "
                  f"{WAIT_S} s after every rank's first all-reduce, node 2's shim and its ranks "
                  "SIGKILLed at once; from the kill until every rank of the next attempt (the "
                  "spare's 2 among them) has finished its first all-reduce.\n\n" +
                  "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
