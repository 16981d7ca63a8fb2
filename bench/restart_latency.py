#!/usr/bin/env python3
"""Restart latency on one node: from a rank's failure until every rank of
the next attempt has started (its first Python line ran), for
`aml-shim --nproc-per-node 4 --max-restarts 1` against
`torchrun --standalone --nproc_per_node 4 --max_restarts 1` (Debian's
torch 1.13, patched to start: peers/torchrun.py), at its default monitor
interval (5 s) and at 0.1 s. The ranks are Python processes that print,
then rank 3 fails after 1.5 s in the first attempt; the others sleep until
they are ended. Prints a Markdown table (median, min, max of RUNS runs).

  bench/restart_latency.py [--runs N] [--shim build/aml-shim]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
RANK_SCRIPT = r"""
import os, sys, time
t = time.time()
a = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
r = os.environ["RANK"]
d = os.environ["BENCH_DIR"]
with open(f"{d}/start-{a}-{r}", "w") as f:
    f.write(repr(t))
print(f"rank {r} attempt {a}", flush=True)
if a == 0:
    if r == "3":
        time.sleep(1.5)
        with open(f"{d}/fail", "w") as f:
            f.write(repr(time.time()))
        os._exit(7)
    time.sleep(60)
"""


def once(cmd):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, BENCH_DIR=d)
        env.pop("MASTER_PORT", None)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        fail = float(open(f"{d}/fail").read())
        starts = [float(open(f"{d}/start-1-{i}").read()) for i in range(4)]
        return max(starts) - fail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--shim", default=os.path.join(HERE, "..", "build", "aml-shim"))
    args = ap.parse_args()
    torchrun = [PY, os.path.join(HERE, "peers", "torchrun.py"), "--standalone",
                "--nproc_per_node", "4", "--max_restarts", "1"]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(RANK_SCRIPT)
        script = f.name
    peers = {
        "aml-shim --max-restarts 1": [args.shim, "--nproc-per-node", "4", "--max-restarts", "1",
                                      "--", PY, script],
        "torchrun --max_restarts 1 (monitor 5 s)": torchrun + [script],
        "torchrun --max_restarts 1 --monitor_interval 0.1": torchrun + ["--monitor_interval",
                                                                        "0.1", script],
    }
    print("| launcher | restart latency, median | min | max |")
    print("|---|---|---|---|")
    try:
        for name, cmd in peers.items():
            xs = [once(cmd) for _ in range(args.runs)]
            ms = [x * 1000 for x in xs]
            print(f"| {name} | {statistics.median(ms):.0f} ms | {min(ms):.0f} ms | "
                  f"{max(ms):.0f} ms |", flush=True)
    finally:
        os.unlink(script)


if __name__ == "__main__":
    sys.exit(main())
