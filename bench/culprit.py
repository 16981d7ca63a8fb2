#!/usr/bin/env python3
"""From a hang's verdict to the line that names its culprit
(docs/control-plane.md, "Naming the culprit").

- Real: torch 2.14 over Gloo in the Debian forky root (scripts/forky-root.sh)
  on network-namespace nodes (scripts/netns-cluster.sh, each under its own
  host name), one aml-shim per node under Open MPI 4.1's mpirun,
  `--hang-timeout 20s`: tests/e2e/scripts/skip_collective.py, where the last
  rank never enters all-reduce #6. Each line of aml-shim's output is stamped
  as it arrives; the verdict comes `--hang-timeout` after the last rank's
  last line (plus up to a heartbeat per tree level), so verdict-to-culprit
  is the culprit line's arrival less that line's, less the timeout. Each
  rank's dump is asked for, read and summarized, its stack read (SIGABRT),
  and the roll-call printed.
- Simulated: the same hang (a rank that skipped the last collective) in
  aml-plane-sim at 10,000 and 100,000 shims (its ranks answer their pipe in
  1 s, the stack readers take 0.2 s): the hang verdict to the roll-call that
  names the culprit, and the bytes rank 0's shim took in.

Needs root. bench/culprit.py [--ranks 2 8] [--runs N]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from results import write_section

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import forky_mpirun_line, forky_root  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NETNS = os.path.join(ROOT, "scripts", "netns-cluster.sh")
SKIP = os.path.join(ROOT, "tests", "e2e", "scripts", "skip_collective.py")
SIM = os.path.join(ROOT, "build", "aml-plane-sim")
NAME, SUBNET = "amlc", "50"
NET = f"198.18.{SUBNET}"
HANG_S = 20
MARK = "<!-- bench/culprit.py -->"


def stamped(cmd, env):
    """Runs cmd; returns [(arrival, line)] of stdout and stderr together."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    lines, lock = [], threading.Lock()

    def read(stream):
        for line in stream:
            with lock:
                lines.append((time.monotonic(), line.rstrip("\n")))

    readers = [threading.Thread(target=read, args=(s,)) for s in (p.stdout, p.stderr)]
    for r in readers:
        r.start()
    p.wait(timeout=600)
    for r in readers:
        r.join()
    return p.returncode, sorted(lines)


def real_once(shim, root, agent, ranks):
    nodes = max(1, ranks // 2)
    cmd, env = forky_mpirun_line(root, agent, NAME, NET, nodes, ranks // nodes,
                                 ["--hang-timeout", f"{HANG_S}s", "python3", SKIP], shim=shim,
                                 SKIP_RANK=ranks - 1)
    code, lines = stamped(cmd, env)
    last = max((t for t, l in lines if "all_reduce 5 sum" in l or "skips all_reduce" in l),
               default=None)
    found = [(t, l) for t, l in lines if l.startswith("aml-shim: culprit:")]
    if code != 124 or last is None or not found:
        raise RuntimeError(f"{ranks} ranks: exit {code}, no culprit line:\n" +
                           "\n".join(l for _, l in lines[-20:]))
    culprit, line = min(found)
    # Ranks whose record did not come, or came without its stack traces
    # (the line's "no flight record from ...", "no stack traces from ...").
    lacking = "; ".join(mark[2:] + line.split(mark, 1)[1].split("; no ")[0] for mark in
                        ("; no flight record from ", "; no stack traces from ") if mark in line)
    return culprit - last - HANG_S, lacking


def real(shim, rank_counts, runs):
    root = forky_root()
    most = max(max(1, r // 2) for r in rank_counts)
    subprocess.run([NETNS, "up", NAME, str(most), SUBNET], check=True, stdout=subprocess.DEVNULL)
    try:
        agent = subprocess.run([NETNS, "agent", NAME], check=True, stdout=subprocess.PIPE,
                               text=True).stdout.strip()
        rows = []
        for ranks in rank_counts:
            got = [real_once(shim, root, agent, ranks) for _ in range(runs)]
            took = [t for t, _ in got]
            lacking = [why for _, why in got if why]
            rows.append((ranks, max(1, ranks // 2), took, lacking))
            print(f"{ranks} ranks: {[f'{t:.2f}' for t in took]} {lacking}", file=sys.stderr)
        return rows
    finally:
        subprocess.run([NETNS, "down", NAME], check=False)


def simulated(shims):
    out = subprocess.run([SIM, "--shims", str(shims), "--seed", "1", "--fanout", "32",
                          "--faults", "hang,skip=7"], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    d = json.loads(out.splitlines()[0])
    if d["invariants"] != "ok":
        raise RuntimeError(d["invariants"])
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shim", default=os.path.join(ROOT, "build", "aml-shim"))
    a = ap.parse_args()
    rows = real(a.shim, a.ranks, a.runs)
    sims = [simulated(n) for n in (10000, 100000)]
    text = [MARK, "### A hang's culprit: from the verdict to the line that names it",
            "",
            f"`bench/culprit.py` (see its header), {time.strftime('%Y-%m-%d')}, on this machine "
            f"({os.cpu_count()} cores). torch 2.14 over Gloo, one rank never enters all-reduce "
            f"#6; `--hang-timeout {HANG_S}s`, `--dump-timeout` 10 s. Median (min to max) of "
            f"{a.runs} runs; the runs in which a rank's record did not come (or came without its "
            f"stack traces), and why.",
            "",
            "| ranks | nodes | verdict to culprit line | records that did not come, or without stack traces |",
            "|---|---|---|---|"]
    for ranks, nodes, took, lacking in rows:
        text.append(f"| {ranks} | {nodes} | {statistics.median(took):.2f} s "
                    f"({min(took):.2f} to {max(took):.2f}) | "
                    f"{'; '.join(lacking) if lacking else 'none'} |")
    text += ["", "Simulated (aml-plane-sim, fan-out 32; the simulated ranks answer in 1 s):",
             "", "| shims | tree depth | verdict to culprit (roll-call) | bytes into rank 0's "
             "shim | per shim |", "|---|---|---|---|---|"]
    for d in sims:
        text.append(f"| {d['shims']:,} | {d['depth']} | {d['rollcall_s']:.2f} s | "
                    f"{d['rank0_bytes'] / 1e6:.1f} MB | {d['rank0_bytes'] / d['shims']:.0f} B |")
    section = "\n".join(text) + "\n"
    write_section(MARK, section)
    print(section)


if __name__ == "__main__":
    main()
