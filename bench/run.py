#!/usr/bin/env python3
"""aml-shim's benchmarks, measured side by side with its peers in one run.

    bench/run.py [--quick]          # writes bench/RESULTS.md and prints it
    bench/run.py --only rendezvous  # measures one section, replaces it there

Peers: a shell that forks the same children (the floor), torchrun, the
seeds' Python launch.py (bench/peers/, verbatim from Azure ML's guide),
bare mpirun, tini and dumb-init. Times come from hyperfine (median of
repeated runs) or, for teardown latency and memory, from this script's own
repeated measurements. Nothing here is asserted: see README.md for the table.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHIM = os.environ.get("AML_SHIM", os.path.join(ROOT, "build", "aml-shim"))
PY = "/usr/bin/python3"
LAUNCH_PY = os.path.join(HERE, "peers", "launch.py")
# Debian's /usr/bin/torchrun (torch 1.13) crashes on Python 3.11; see peers/torchrun.py.
TORCHRUN = f"{PY} {os.path.join(HERE, 'peers', 'torchrun.py')}"
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp",
          "-x", "PMIX_MCA_gds=hash"]
# The seeds' launch.py reads Open MPI/AzureML variables even on one node.
SEED_ENV = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1",
            "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "1",
            "AZ_BATCHAI_MPI_MASTER_NODE": "127.0.0.1", "PYTHONPATH": os.path.join(HERE, "peers")}


def clean_env(**extra):
    drop = ("OMPI_", "PMIX_", "SLURM_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "AML_SHIM_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    # Where munge is installed (for Slurm) but munged is not running, PMIx's
    # munge security plugin retries for about 2.3 s in every mpirun: a
    # property of the machine, not of any launcher measured here.
    env["PMIX_MCA_psec"] = "native"
    env.update(extra)
    return env


def sh(cmd):
    return " ".join(cmd) if isinstance(cmd, list) else cmd


def hyperfine(commands, runs, warmup=2, env=None, shell=True, rounds=1):
    """Median seconds per command name. shell=False runs each command without
    a shell in between (-N), for timings of a few milliseconds. rounds > 1
    splits the runs into that many hyperfine runs of all the commands, one
    after the other, and takes the median of all their times: a machine whose
    speed drifts over a minute (a VM) then weighs on every command alike."""
    times = {name: [] for name in commands}
    for _ in range(rounds):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            args = ["hyperfine", "--style", "none", "--warmup", str(warmup), "--runs",
                    str(max(2, runs // rounds)), "--export-json", out.name] + ([] if shell else ["-N"])
            for name, cmd in commands.items():
                args += ["--command-name", name, cmd]
            subprocess.run(args, check=True, env=env or clean_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            data = json.load(open(out.name))
        for r in data["results"]:
            times[r["command"]] += r["times"]
    return {name: statistics.median(t) for name, t in times.items()}


def show(cmd):
    """A command as the table shows it: repo-relative, temp dirs elided."""
    cmd = cmd.replace(ROOT + "/", "")
    return re.sub(r"/tmp/tmp\w+/", "$TMP/", cmd)


def fmt_s(s):
    return f"{s * 1000:.1f} ms" if s < 10 else f"{s:.1f} s"


def table(title, rows, note=""):
    lines = [f"### {title}", ""]
    if note:
        lines += [note, ""]
    lines += ["| command | median | vs. reference |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {ratio} |" for name, value, ratio in rows]
    return "\n".join(lines) + "\n"


def ratio_rows(results, ref, cmds):
    base = results[ref]
    return [(f"`{show(cmds[name])}`", fmt_s(v), f"{v / base:.2f}x") for name, v in results.items()]


def bench_fanout(runs):
    cmds = {
        "floor": "sh -c 'true & true & true & true & wait'",
        "floor, exec": "sh -c '/bin/true & /bin/true & /bin/true & /bin/true & wait'",
        "aml-shim": f"{SHIM} --nproc-per-node 4 -- true",
        "torchrun": f"{TORCHRUN} --nproc_per_node 4 --no_python true",
        "launch.py": f"{PY} {LAUNCH_PY} --nproc_per_node 4 --no_python --use_env true",
    }
    env = clean_env(**SEED_ENV)
    # No shell between hyperfine and each command (-N): it would add its own
    # start to every row. 100 runs a round, in 20 rounds: a few ms each.
    res = hyperfine({k: cmds[k] for k in ("floor", "floor, exec", "aml-shim")}, runs * 100,
                    warmup=20, env=env, shell=False, rounds=20)
    res.update(hyperfine({k: cmds[k] for k in ("torchrun", "launch.py")}, max(3, runs // 2),
                         warmup=1, env=env))
    return table("Start-to-exit of 4 children running `true`",
                 ratio_rows(res, "floor, exec", cmds),
                 "Reference: the fork+exec floor, a shell that starts the same four programs "
                 "(`/bin/true`) and waits. Goal: aml-shim within 1.25x (a keeper, a private "
                 "directory for the error files, a pipe pair per rank and their reading are "
                 "its own). In dash `true` is a builtin: the first row execs nothing. Measured "
                 "with `hyperfine -N` (no shell in between), in 20 rounds that alternate the "
                 "commands, median of all runs.")


def bench_mpirun(runs):
    cmds = {"mpirun": sh(MPIRUN + ["-np", "2", "true"]),
            "mpirun + aml-shim": sh(MPIRUN + ["-np", "2", SHIM, "--", "true"])}
    res = hyperfine(cmds, runs)
    return table("Per-process launch under mpirun (2 ranks)", ratio_rows(res, "mpirun", cmds),
                 "Reference: bare mpirun. Goal: under 10% overhead.")


def bench_throughput(runs, mb):
    tmp = tempfile.mkdtemp()
    data = os.path.join(tmp, "lines.txt")
    line = b"step 000123 loss 0.123456 lr 0.0001 throughput 1234.5 samples/s\n"
    with open(data, "wb") as f:
        block = line * (1 << 14)
        for _ in range(mb * (1 << 20) // len(block)):
            f.write(block)
    size = os.path.getsize(data)
    cmds = {
        "plain pipe": f"sh -c 'cat {data} & cat {data} & wait' | cat > /dev/null",
        "aml-shim tagged": f"{SHIM} --nproc-per-node 2 -- cat {data} > /dev/null",
        "aml-shim untagged": f"{SHIM} --nproc-per-node 2 --no-tag-output -- cat {data} > /dev/null",
    }
    res = hyperfine(cmds, runs, warmup=1)
    shutil.rmtree(tmp)
    rows = []
    for name, v in res.items():
        rows.append((f"`{show(cmds[name])}`", f"{fmt_s(v)} ({2 * size / v / 1e6:.0f} MB/s)",
                     f"{v / res['plain pipe']:.2f}x"))
    return table(f"Output throughput: 2 children writing {size / 1e6:.0f} MB each",
                 rows, "Reference: the same children writing into one plain pipe. Goal: within 2x.")


def pid_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def teardown_once(argv, tmp, env):
    """Seconds from a child's failure until the last sibling is gone."""
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)
    # A sibling killed before it finished writing its pid is gone already.
    sibs = []
    for n in os.listdir(tmp):
        if n.startswith("pid-"):
            with open(os.path.join(tmp, n)) as f:
                text = f.read().strip()
            if text:
                sibs.append(int(text))
    deadline = time.time() + 60
    while not all(pid_gone(p) for p in sibs) and time.time() < deadline:
        time.sleep(0.0005)
    end = time.time_ns()
    return (end - int(open(os.path.join(tmp, "failed")).read())) / 1e9


def bench_teardown(runs):
    tmp = tempfile.mkdtemp()
    marks = tempfile.mkdtemp()
    # Rank 0 records the time and fails; the others record their pid and
    # would sleep (they exit on SIGTERM). A script file, because torchrun
    # mangles `sh -c '...'` arguments.
    scripts = {}
    for secs in (100, 5):
        path = os.path.join(tmp, f"child-{secs}.sh")
        with open(path, "w") as f:
            f.write(f'if [ "$RANK" = 0 ]; then date +%s%N > {marks}/failed; exit 1; fi\n'
                    f'echo $$ > {marks}/pid-$RANK\nexec sleep {secs}\n')
        scripts[secs] = path
    env = clean_env(**SEED_ENV)
    peers = {
        "aml-shim": ([SHIM, "--nproc-per-node", "4", "--", "sh", scripts[100]], runs * 2),
        "torchrun": (TORCHRUN.split() + ["--nproc_per_node", "4", "--no_python", "sh",
                                         scripts[100]], max(3, runs // 3)),
        "launch.py (siblings sleep 5 s)": ([PY, LAUNCH_PY, "--nproc_per_node", "4", "--no_python",
                                            "--use_env", "sh", scripts[5]], 3),
    }
    rows = []
    for name, (argv, n) in peers.items():
        vals = [teardown_once(argv, marks, env) for _ in range(n)]
        rows.append((name, fmt_s(statistics.median(vals)), f"{n} runs"))
    shutil.rmtree(tmp)
    shutil.rmtree(marks)
    return ("### Teardown latency: a child fails, until the last sibling is gone\n\n"
            "Rank 0 of 4 exits 1; the three siblings would sleep (they exit on SIGTERM). "
            "torchrun notices failures at its monitor interval (5 s); the seeds' launch.py "
            "waits for rank 0, raises, and leaves the siblings running as orphans until they end "
            "by themselves. Goal: under 50 ms.\n\n"
            "| launcher | median | runs |\n|---|---|---|\n" +
            "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def bench_memory():
    env = clean_env(**SEED_ENV)
    peers = {
        "aml-shim": [SHIM, "--nproc-per-node", "8", "--", "sleep", "4"],
        "torchrun (agent)": TORCHRUN.split() + ["--nproc_per_node", "8", "--no_python", "sleep", "4"],
        "launch.py": [PY, LAUNCH_PY, "--nproc_per_node", "8", "--no_python", "--use_env",
                      "sleep", "4"],
    }
    rows = []
    for name, argv in peers.items():
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2.5)
        rss = rss_kib(p.pid)
        p.wait()
        rows.append((name, f"{rss / 1024:.1f} MiB"))
    return ("### Resident memory of the supervisor with 8 children\n\nGoal: under 4 MiB.\n\n"
            "| launcher | VmRSS |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows) + "\n")


def bench_pid1(runs):
    ns = "unshare --pid --fork --mount-proc"
    cmds = {"tini": f"{ns} tini -- true", "dumb-init": f"{ns} dumb-init true",
            "aml-shim": f"{ns} {SHIM} -- true"}
    res = hyperfine(cmds, runs)
    return table("As PID 1 in a new PID namespace: start-to-exit of `true`",
                 ratio_rows(res, "tini", cmds), "Reference: tini. All three reap orphans "
                 "(aml-shim's reaping is tested in tests/e2e/test_supervisor.py).")


def bench_probe():
    tool = os.path.join(os.path.dirname(SHIM), "aml_probe_bench")
    fixture = os.path.join(ROOT, "tests", "fixtures", "sysfs", "nd96asr_v4")
    doc = json.loads(subprocess.run([tool, fixture, "500"], check=True, capture_output=True,
                                    text=True).stdout)
    cli = hyperfine({"probe": f"{SHIM} probe --json --sysfs-root {fixture}",
                     "env": f"{SHIM} env --sysfs-root {fixture}"}, 30)
    return ("### Fabric probe on the ND96asr_v4 fixture (9 devices)\n\n"
            "Goal: under 2 ms, so it costs nothing at start.\n\n"
            "| what | time |\n|---|---|\n"
            f"| sysfs probe + env plan, in process (mean of {doc['iterations']}) | "
            f"{doc['probe_ms']:.3f} ms |\n"
            f"| libibverbs first call: dlopen + device list, as `ibv_devinfo` starts "
            f"({doc['verbs']}) | {doc['verbs_first_call_ms']:.3f} ms |\n"
            f"| `aml-shim probe --json` process, start to exit | {fmt_s(cli['probe'])} |\n"
            f"| `aml-shim env` process with the probe, start to exit | {fmt_s(cli['env'])} |\n")


def mpi_floor_program():
    """A C program that only calls MPI_Init and MPI_Finalize (built with mpicc)."""
    d = tempfile.mkdtemp()
    src, exe = os.path.join(d, "mpi_floor.c"), os.path.join(d, "mpi_floor")
    with open(src, "w") as f:
        f.write("#include <mpi.h>\nint main(int c, char** v) "
                "{ MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n")
    subprocess.run(["mpicc", "-O2", "-o", exe, src], check=True)
    return exe


def bench_rendezvous(runs):
    """The world from PMIx and the rendezvous over PMIx, against env resolution,
    the MPI rendezvous, bare mpirun and MPI_Init alone, by N."""
    floor = mpi_floor_program()
    no_pmix = ["-x", "AML_SHIM_PMIX=0"]
    lines = ["### Rendezvous cost under mpirun: PMIx against MPI (one machine, oversubscribed)",
             "",
             "Open MPI 4.1 with PMIx 4.2. *env*: `--rendezvous env`, the world from variables "
             "only (one node: nothing to ask). *PMIx rendezvous*: `--rendezvous mpi`: PMIx_Init, "
             "every rank's node (one fence), and the full rendezvous (rank 0's "
             "listener, every rank's verified connection) over PMIx fences. *MPI "
             "rendezvous*: the same over MPI_Init/MPI_Finalize (`AML_SHIM_PMIX=0`), as under "
             "Hydra. The MPI floor is a C program that only calls MPI_Init and MPI_Finalize.",
             "",
             "| ranks | bare mpirun | env | PMIx rendezvous | MPI_Init+Finalize floor | "
             "MPI rendezvous |", "|---|---|---|---|---|---|"]
    for n in (2, 8, 32):
        np_ = ["-np", str(n)]
        cmds = {"bare": sh(MPIRUN + np_ + ["true"]),
                "env": sh(MPIRUN + np_ + [SHIM, "--rendezvous", "env", "--", "true"]),
                "pmix rv": sh(MPIRUN + np_ + [SHIM, "--rendezvous", "mpi", "--", "true"]),
                "floor": sh(MPIRUN + np_ + [floor]),
                "mpi": sh(MPIRUN + no_pmix + np_ + [SHIM, "--rendezvous", "mpi", "--", "true"])}
        res = hyperfine(cmds, max(3, runs // (2 if n < 32 else 4)), warmup=1)
        lines.append(f"| {n} | {fmt_s(res['bare'])} | {fmt_s(res['env'])} | "
                     f"{fmt_s(res['pmix rv'])} | "
                     f"{fmt_s(res['floor'])} | {fmt_s(res['mpi'])} |")
    return "\n".join(lines) + "\n"


def bench_preflight(runs):
    """What --preflight costs at start, without a GPU: the TCP check, and the
    NCCL stage's own machinery (worker process, frames, ids) over the
    stand-in libraries of tests/fakes, which move host memory, not GPU."""
    fakes = os.path.join(os.path.dirname(SHIM), "tests")
    env = clean_env(AML_SHIM_LIBCUDART=os.path.join(fakes, "libfake_cudart.so"),
                    AML_SHIM_LIBNCCL=os.path.join(fakes, "libfake_nccl.so"), FAKE_CUDA_DEVICES="4")
    cmds = {
        "none": f"{SHIM} -- true",
        "tcp": f"{SHIM} --preflight tcp -- true",
        "nccl, 1 GPU": f"{SHIM} --preflight nccl --preflight-bytes 4K -- true",
        "nccl, 4 GPUs": f"{SHIM} --nproc-per-node 4 --preflight nccl --preflight-bytes 4K -- true",
        "no GPU": (f"sh -c 'env -u AML_SHIM_LIBCUDART -u AML_SHIM_LIBNCCL {SHIM} "
                   f"--preflight nccl -- true 2>/dev/null; test $? = 125'"),
    }
    res = hyperfine(cmds, runs, env=env)
    what = {"none": "no preflight", "tcp": "`--preflight tcp` (world of one)",
            "nccl, 1 GPU": "`--preflight nccl`, 1 stand-in GPU, 4 KiB",
            "nccl, 4 GPUs": "`--nproc-per-node 4 --preflight nccl`, 4 stand-in GPUs, 4 KiB",
            "no GPU": "`--preflight nccl` with this host's own libraries: time to exit 125"}
    rows = [f"| {what[k]} | {fmt_s(v)} | {fmt_s(v - res['none'])} |" for k, v in res.items()]
    return ("### Preflight cost at start, without a GPU\n\n"
            "Stand-in CUDA/NCCL (tests/fakes): this is aml-shim's own cost (the worker "
            "process, the ids over the TCP connection, the report), not NCCL's or a GPU's. "
            "The last row loads the real libcudart/libnccl where this host has them.\n\n"
            "| what | median | added |\n|---|---|---|\n" + "\n".join(rows) + "\n")


SCALE_BEGIN = "<!-- bench/preflight_scale.py -->"
SECTIONS = {
    "fanout": bench_fanout, "mpirun": bench_mpirun, "rendezvous": bench_rendezvous,
    "throughput": lambda runs: bench_throughput(max(3, runs // 4), 200),
    "teardown": bench_teardown, "memory": lambda runs: bench_memory(), "pid1": bench_pid1,
    "probe": lambda runs: bench_probe(), "preflight": bench_preflight,
}


def replace_section(path, section):
    """Puts `section` (a '### ' title and its body) where the section of the
    same kind stands in `path` (found by its bench's first title word after
    '### '), keeping the rest of the file as it is."""
    with open(path) as f:
        text = f.read()
    parts = re.split(r"(?m)^(?=### |<!-- bench/)", text)
    key = section.split()[1]
    for i, part in enumerate(parts):
        if part.startswith("### " + key):
            parts[i] = section + "\n"
            break
    else:
        sys.exit(f"bench: no section starting '### {key}' in {path}")
    with open(path, "w") as f:
        f.write("".join(parts))
    print(section)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer runs")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--only", choices=sorted(SECTIONS),
                    help="measure this section alone and replace it in --out")
    args = ap.parse_args()
    runs = 5 if args.quick else 20
    for tool in ("hyperfine", "torchrun", "mpirun", "tini", "dumb-init", "unshare"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing: run scripts/setup.sh")
    if args.only:
        replace_section(args.out, SECTIONS[args.only](runs))
        return
    sections = [bench(runs) for bench in SECTIONS.values()]
    head = (f"# aml-shim benchmarks\n\nMeasured by `bench/run.py` on {platform.node()} "
            f"({os.cpu_count()} cores, {platform.platform()}), "
            f"{time.strftime('%Y-%m-%d')}. Medians; lower is better.\n\n")
    text = head + "\n".join(sections)
    # bench/preflight_scale.py's section (minutes to run) is kept as it is.
    try:
        with open(args.out) as f:
            old = f.read()
        i = old.find(SCALE_BEGIN)
        if i >= 0:
            text += "\n" + old[i:]
    except FileNotFoundError:
        pass
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
