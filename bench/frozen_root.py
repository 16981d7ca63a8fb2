#!/usr/bin/env python3
"""A frozen root on a busy machine (docs/control-plane.md, "A new root"): 4
shims side by side (3 NODE_RANKs and a spare; RANK, WORLD_SIZE and
MASTER_ADDR as a pod gets them), `--spares 1 --max-restarts 3 --grace 5`,
DDP over Gloo with a checkpoint per epoch (tests/e2e/scripts/ckpt_ddp.py),
beside two busy loops per core started before the shims. At epoch 2 (the
start-up's load: the links' allowances still differ) rank 0's node stops:
its shim, keeper and rank are SIGSTOPped. Measured, from the freeze: the
heir's line that it takes the job, and the first line of the next
attempt's every rank (each resumes from the checkpoint); and whether every
live shim ended with 0 and the old root, woken then, stepped down (125).
Median, min and max of RUNS runs; prints a Markdown table and writes it
into bench/RESULTS.md.

bench/frozen_root.py [--runs N] [--shim build/aml-shim]"""
import argparse
import os
import signal
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import (CKPT, PYTHON, CpuHogs, clean_env, descendants, free_port,  # noqa: E402
                     kill_group, signal_all, slurp, spawn)
from results import write_section  # noqa: E402

MARK = "<!-- bench/frozen_root.py -->"


def one_run(shim):
    with tempfile.TemporaryDirectory() as tmp, CpuHogs(per_core=2):
        port = free_port()
        procs = []
        for rank in range(4):
            env = clean_env(RANK=rank, WORLD_SIZE=4, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                            CKPT_DIR=tmp, FAIL_RANK="-1", EPOCHS="40")
            procs.append(spawn([shim, "--grace", "5", "--spares", "1", "--max-restarts", "3",
                                "--log-dir", f"{tmp}/logs", "--", PYTHON, CKPT], env=env,
                               stdout=open(f"{tmp}/out-{rank}", "w"),
                               stderr=open(f"{tmp}/err-{rank}", "w")))
        try:
            deadline = time.monotonic() + 300
            while "epoch 2 saved" not in slurp(f"{tmp}/out-1"):
                if time.monotonic() > deadline:
                    raise SystemExit("the job did not reach epoch 2")
                time.sleep(0.05)
            frozen = [procs[0].pid] + descendants(procs[0].pid)
            signal_all(frozen, signal.SIGSTOP)
            t0 = time.monotonic()
            took = resumed = None
            while time.monotonic() < t0 + 400 and resumed is None:
                errs = "".join(slurp(f"{tmp}/err-{r}") for r in range(1, 4))
                if took is None and "takes the job as its root" in errs:
                    took = time.monotonic() - t0
                outs = [slurp(f"{tmp}/out-{r}") for r in range(1, 4)]
                if sum(o.count("resumed at epoch") for o in outs) >= 3:
                    resumed = time.monotonic() - t0
                time.sleep(0.05)
            signal_all(frozen, signal.SIGCONT)
            code0 = procs[0].wait(timeout=120)
            codes = [p.wait(timeout=400) for p in procs[1:]]
            return took, resumed, codes == [0, 0, 0] and code0 == 125
        finally:
            for p in procs:
                kill_group(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shim", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                   "aml-shim"))
    a = ap.parse_args()
    shim = os.path.abspath(a.shim)
    runs = [one_run(shim) for _ in range(a.runs)]
    for i, r in enumerate(runs):
        print(f"run {i + 1}: takeover {r[0]} s, every rank resumed {r[1]} s, outcome ok {r[2]}",
              file=sys.stderr)
    took = [r[0] for r in runs if r[0] is not None]
    resumed = [r[1] for r in runs if r[1] is not None]
    ok = sum(1 for r in runs if r[2])

    def cell(v):
        return (f"{statistics.median(v):.1f} s ({min(v):.1f}-{max(v):.1f})" if v else "none")

    text = (f"{MARK}\n### A frozen root beside CPU hogs: the heir takes the job\n\n"
            f"Measured by `bench/frozen_root.py --runs {a.runs}` on {os.uname().nodename} "
            f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}. 4 shims side by side (3 "
            "NODE_RANKs and a spare), DDP over Gloo with a checkpoint per epoch, two busy loops "
            "per core started before the shims; rank 0's node (shim, keeper, rank) SIGSTOPped "
            "at epoch 2 of the loaded start-up. From the freeze: the heir's line that it takes "
            "the job (the root's silence found, at the link's allowance, then the 31 s a silent "
            "root is given to let go), and every rank of the next attempt resumed from the "
            "checkpoint. Median (min-max).\n\n"
            "| takeover | every rank resumed | runs where every live shim ended 0 and the "
            "woken root stepped down (125) |\n|---|---|---|\n"
            f"| {cell(took)} | {cell(resumed)} | {ok} of {len(runs)} |\n")
    print(text)
    write_section(MARK, text)


if __name__ == "__main__":
    main()
