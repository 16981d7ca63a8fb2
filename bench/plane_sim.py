#!/usr/bin/env python3
"""The control plane in deterministic simulation at 1,000, 10,000 and 100,000
shims (docs/control-plane.md, "Simulation"): build/aml-plane-sim, one run per
size and scenario (seed 1), 50 us per hop, 10 Gb/s links, the per-frame cost
measured on this machine (`aml-plane-sim --measure-cost`, the median of 5)
rather than the built-in default. Each figure is virtual time; wall is what
the simulation took here. Prints the table and writes its section into
bench/RESULTS.md (bench/run.py keeps it).
Usage: bench/plane_sim.py [N ...]   (default 1000 10000 100000)"""
import json
import os
import statistics
import subprocess
import sys
import time

from results import write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.environ.get("AML_PLANE_SIM") or os.path.join(ROOT, "build", "aml-plane-sim")
MARK = "<!-- bench/plane_sim.py -->"
# Scenario: (--faults, the figure it measures, its key, the target and its anchor).
SCENARIOS = [
    ("none", "join (to the last shim's go)", "join_s",
     "<= 2 s at 10,000, <= 5 s at 100,000 (torch's libuv TCPStore: 96K ranks in 100 s)"),
    ("fail", "a failure to every shim's stop order, p99", "stop_p99_s",
     "p99 <= 50 ms at 10,000"),
    ("freeze", "a frozen shim found (to rank 0's verdict)", "lost_detect_s",
     "<= 5 s (torchft 5 s, ULFM 10 s)"),
    ("cut", "a cut link found", "lost_detect_s", "<= 5 s"),
    ("hang", "hang verdict to the printed roll-call", "rollcall_s", "<= 2 s at 10,000"),
    ("restart", "a failure to every shim's restart", "restart_round_s", "(none)"),
    ("kill,restarts=2,spares=1", "a node killed (its link closed) to every holder of the "
     "next attempt's NODE_RANKs ordered to start, a spare among them", "replace_s",
     "<= 1 s at 10,000, plus the back-off"),
    ("fail,restarts=3(failing),spares=1", "a node whose ranks fail every attempt: its second "
     "failure to the next attempt ordered everywhere, the spare in its place (includes the "
     "second restart's back-off of 1 s)", "replace_s", "<= 1 s at 10,000, plus the back-off"),
    ("freeze,restarts=2,spares=1", "a node frozen to the spare's attempt ordered everywhere "
     "(found at the allowance)", "replace_s", "(the allowance, 5 s)"),
    ("kill@35:0,restarts=1,spares=1", "rank 0's shim killed: to every holder of the heir's "
     "next attempt ordered to start, the spare in NODE_RANK 0 (a new root)", "replace_s",
     "<= 1 s at 10,000"),
    ("freeze@35:0,restarts=1,spares=1", "rank 0's shim frozen: the same (found at the "
     "allowance, then 31 s for a silent root to let go)", "replace_s",
     "(the allowance and kMaxSilenceS + 1 s)"),
]


def run(args):
    out = subprocess.run([SIM] + args, capture_output=True, text=True, timeout=900)
    if out.returncode not in (0, 1):
        sys.exit(f"aml-plane-sim {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000, 100000]
    cost = statistics.median(run(["--measure-cost"])["frame_cost_us"] for _ in range(5))
    rows = []
    for faults, what, key, target in SCENARIOS:
        cells = []
        for n in sizes:
            r = run(["--shims", str(n), "--seed", "1", "--faults", faults,
                     "--cost-us", f"{cost:.2f}"])
            ok = "" if r["invariants"] == "ok" else " (invariant broken: " + r["invariants"] + ")"
            v = r[key]
            fig = "-" if v is None else (f"{v * 1000:.1f} ms" if v < 1 else f"{v:.2f} s")
            cells.append(f"{fig}, rank 0 {r['rank0_msgs']:,} frames, wall {r['wall_s']:.1f} s{ok}")
            print(faults, n, fig, r["rank0_msgs"], r["msgs_max_per_shim"], r["wall_s"], ok,
                  flush=True)
        rows.append(f"| {what} | " + " | ".join(cells) + f" | {target} |")
    text = (MARK + "\n### The control plane in simulation: 1,000 to 100,000 shims\n\n"
            f"Measured by `bench/plane_sim.py` on {os.uname().nodename} ({os.cpu_count()} "
            f"cores), {time.strftime('%Y-%m-%d')}: `build/aml-plane-sim`, seed 1, 50 us per "
            f"hop, 10 Gb/s, a per-frame cost of {cost:.2f} us (measured here: a heartbeat "
            "sent and received over a socket pair, decoded and noted; `aml-plane-sim "
            "--measure-cost`), fan-out 32, one shim per node. Virtual time; wall is what the "
            "simulation took. The stop figure is the order to end the ranks, which rank 0 "
            "sends as it hears of the failure (`halt`); the verdict that names the earliest "
            "failure of the same moment follows 0.1 s later. A freeze or a cut comes 35 s "
            "after go (a steady job); found at the allowance of 5 s after the last frame "
            "heard, so about 4 s after the fault with 1 s beats. The roll-call's stack "
            "readers take 0.2 s on each node here, in parallel (gdb or py-spy take up to "
            "10 s), then 0.05 s for each rank's dump. With a spare (`spares=1`: the last "
            "shim waits), the replacement is from the fault to the last holder of the "
            "next attempt's NODE_RANKs taking its restart order (its ranks start at once): "
            "the deciding window of 0.1 s, the tree's latency and the back-off (none before "
            "the first restart, 1 s before the second). When rank 0's shim is lost, its "
            "heir takes the job (docs/control-plane.md, \"A new root\"): the frames are the "
            "heir's. Every run is checked against the "
            "oracle; the simulated nodes run the real supervisor's state machine.\n\n"
            "| scenario | " + " | ".join(f"{n:,} shims" for n in sizes) +
            " | target (anchor) |\n|---|" + "---|" * len(sizes) + "---|\n" +
            "\n".join(rows) + "\n")
    write_section(MARK, text)
    print(text)


if __name__ == "__main__":
    main()
