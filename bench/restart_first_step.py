#!/usr/bin/env python3
"""A restart measured to the next attempt's first step, on one node: from a
rank's failure until every rank of the next attempt has finished its first
collective (issue 51's measure: what a user waits for is not the launcher's
part alone but the new interpreters' imports and the process group's start
too). aml-shim --nproc-per-node 4 --max-restarts 1 against
torchrun --standalone --nproc_per_node 4 --max_restarts 1 --monitor_interval
0.1 (Debian's torch 1.13, patched to start: peers/torchrun.py).

Each rank imports torch (and, with the heavy set, numpy, sympy, hypothesis,
cryptography, requests, pygments and yaml too), starts a Gloo process group
and all-reduces one tensor: its first step. In the first attempt rank 3
then fails (exit 7) 20 s after its start (--warm-restart makes its standbys
as the ranks start, in the idle scheduling class; they import --preload's
torch and what the rank had imported once its process group was up: the
heavy set too, learned);
the others sleep until they are ended. Each
rank writes when its interpreter started, when its imports were done and
when its first all-reduce returned. Prints a Markdown table: the restart to
every rank's first step (median, min, max of RUNS runs), and of it, the
launcher's part (to the last rank's interpreter started) and the imports'
(the slowest rank's).

With --root forky the same runs in the Debian forky root
(scripts/forky-root.sh: torch 2.14, Python 3.14; its TCPStore without libuv,
USE_LIBUV=0; torchrun's TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1), torchrun
that root's (peers/torchrun.py), and the heavy
set without cryptography and pygments (not in that root).

With --hang rank 3 stops taking part instead of failing (the others wait
in their next all-reduce) and aml-shim runs with --hang-timeout 10s: from
the verdict (its line on aml-shim's stderr, read as it comes) to every
rank's first step of the next attempt, and from the watchdog's deadline
(the job's last output, each rank's "first step" line, + 10 s: the
earliest the job can be judged hung) to it, which counts what the verdict
takes (the flight records and stack traces taken before the line, with
torch 2.14). torchrun has no hang check.

With --fail-after S (repeatable) rank 3 fails S seconds after its own first
step instead: an attempt's first seconds (a bad node's) against its steady
state. --only NAME runs the launchers whose name has NAME in it; --light
leaves the heavy set out.

  bench/restart_first_step.py [--runs N] [--shim build/aml-shim] [--root forky] [--hang]
                              [--fail-after S ...] [--only NAME] [--light]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
HANG_TIMEOUT_S = 10
HEAVY = "numpy, sympy, hypothesis, cryptography.x509, requests, pygments.lexers, yaml"
HEAVY_FORKY = "numpy, sympy, hypothesis, requests, yaml"
RANK_SCRIPT = r"""
import os, sys, time
t0 = time.time()
import torch
import torch.distributed as dist
import importlib
for m in os.environ["BENCH_MODULES"].split(","):
    if m:
        importlib.import_module(m)
t1 = time.time()
a = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
r = os.environ["RANK"]
d = os.environ["BENCH_DIR"]
dist.init_process_group("gloo")
x = torch.ones(4)
dist.all_reduce(x)
t2 = time.time()
with open(f"{d}/times-{a}-{r}", "w") as f:
    f.write(f"{t0!r} {t1!r} {t2!r}")
print(f"rank {r} first step", flush=True)  # the hang watchdog's last progress
if a == 0:
    if r == os.environ.get("BENCH_FAIL_RANK", "3"):
        after = os.environ.get("BENCH_FAIL_AFTER")
        time.sleep(max(0.0, (t2 + float(after) if after else t0 + 20) - time.time()))
        if os.environ.get("BENCH_HANG") == "1":
            time.sleep(600)  # the others wait in their next all-reduce: a hang
        with open(f"{d}/fail", "w") as f:
            f.write(repr(time.time()))
        os._exit(7)
    if os.environ.get("BENCH_HANG") == "1":
        dist.all_reduce(x)
    time.sleep(120)
dist.destroy_process_group()
"""


def verdict_time(cmd, env):
    """Runs cmd; the wall time at which its stderr said the job was hung
    (read as it came), and what it printed."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said, at = [], None
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    for line in p.stderr:
        said.append(line)
        if at is None and "hung" in line:
            at = time.time()
    p.wait(timeout=300)
    reader.join()
    return p.returncode, at, "".join(out) + "".join(said)


def once(cmd, modules, extra_env, hang=False, fail_after=None):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, BENCH_DIR=d, BENCH_MODULES=modules, **extra_env)
        if fail_after is not None:
            env["BENCH_FAIL_AFTER"] = str(fail_after)
        env.pop("MASTER_PORT", None)
        if hang:
            env["BENCH_HANG"] = "1"
            code, fail, text = verdict_time(cmd, env)
            if code != 0 or fail is None:
                raise SystemExit(f"{cmd[0]} failed ({code}) or said no hang:\n{text}")
        else:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise SystemExit(f"{cmd[0]} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
            fail = float(open(f"{d}/fail").read())
        times = [[float(x) for x in open(f"{d}/times-1-{i}").read().split()] for i in range(4)]
        started = max(t[0] for t in times) - fail
        imports = max(t[1] - t[0] for t in times)
        step = max(t[2] for t in times) - fail
        if hang:
            # The watchdog's deadline: the first attempt's last output + 10 s.
            first = [[float(x) for x in open(f"{d}/times-0-{i}").read().split()]
                     for i in range(4)]
            return step, started, imports, max(t[2] for t in times) - (max(t[2] for t in first)
                                                                       + HANG_TIMEOUT_S)
        return step, started, imports


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shim", default=os.path.join(HERE, "..", "build", "aml-shim"))
    ap.add_argument("--root", choices=["forky"])
    ap.add_argument("--fail-after", type=float, action="append",
                    help="rank 3 fails this many seconds after its first step (again: each "
                         "moment in turn; default: 20 s after its start)")
    ap.add_argument("--only", help="the launchers whose name has this in it")
    ap.add_argument("--light", action="store_true", help="torch alone, not the heavy set too")
    ap.add_argument("--hang", action="store_true",
                    help="rank 3 hangs the job instead of failing; from the hang's verdict "
                         "(--hang-timeout 10s), aml-shim alone (torchrun has no hang check)")
    args = ap.parse_args()
    shim_path = os.path.abspath(args.shim)
    py, heavy_set, wrap, extra_env = PY, HEAVY, [], {}
    torchrun = [PY, os.path.join(HERE, "peers", "torchrun.py")]
    if args.root:
        src = os.path.dirname(HERE)
        root = subprocess.run([os.path.join(src, "scripts", "forky-root.sh")], check=True,
                              capture_output=True, text=True).stdout.strip()
        wrap = [os.path.join(src, "scripts", "in-root.sh"), root]
        py, heavy_set = "python3", HEAVY_FORKY
        torchrun = ["python3", os.path.join(HERE, "peers", "torchrun.py")]
        # (torchrun's ranks make their stores as clients of its own, with
        # libuv whatever USE_LIBUV says, unless it shares none.)
        extra_env = {"USE_LIBUV": "0", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
                     "AML_ROOT_BINDS": ":".join(
            sorted({os.path.dirname(shim_path), src, tempfile.gettempdir()}))}
    torchrun = wrap + torchrun + ["--standalone", "--nproc_per_node", "4", "--max_restarts", "1",
                                  "--monitor_interval", "0.1"]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(RANK_SCRIPT)
        script = f.name
    shim = wrap + [shim_path, "--nproc-per-node", "4", "--max-restarts", "1"]
    heavy_mods = heavy_set.replace(" ", "")
    peers = {
        "aml-shim --max-restarts 1 (cold)": lambda heavy: shim + ["--", py, script],
        "aml-shim --max-restarts 1 --warm-restart": lambda heavy: shim + [
            "--warm-restart", "--", py, script],
        "torchrun --max_restarts 1 --monitor_interval 0.1": lambda heavy: torchrun + [script],
    }
    if args.hang:
        shim += ["--hang-timeout", f"{HANG_TIMEOUT_S}s"]
        del peers["torchrun --max_restarts 1 --monitor_interval 0.1"]
    start = "the hang's verdict" if args.hang else "failure"
    deadline = ("the watchdog's deadline to every rank's first step, median (min-max) | "
                if args.hang else "")
    print(f"| imports | launcher | {start} to every rank's first step, median (min-max) | "
          f"{deadline}of it: the last interpreter started | the slowest rank's imports |")
    print("|---|---|---|---|---|" + ("---|" if args.hang else ""))
    if args.only:
        peers = {k: v for k, v in peers.items() if args.only in k}
    moments = args.fail_after or [None]
    try:
        for heavy, moment in ((h, m) for h in ((False,) if args.light else (False, True))
                              for m in moments):
            what = f"torch, {heavy_set}" if heavy else "torch"
            if moment is not None:
                what += f"; fails {moment:g} s after its first step"
            for name, cmd in peers.items():
                runs = [once(cmd(heavy), heavy_mods if heavy else "", extra_env, args.hang,
                             moment) for _ in range(args.runs)]
                step = [x[0] for x in runs]
                late = [x[3] for x in runs] if args.hang else []
                print(f"| {what} | {name} | {statistics.median(step):.2f} s "
                      f"({min(step):.2f}-{max(step):.2f}) | " +
                      (f"{statistics.median(late):.2f} s ({min(late):.2f}-{max(late):.2f}) | "
                       if late else "") +
                      f"{statistics.median(x[1] for x in runs):.2f} s | "
                      f"{statistics.median(x[2] for x in runs):.2f} s |", flush=True)
    finally:
        os.unlink(script)


if __name__ == "__main__":
    sys.exit(main())
