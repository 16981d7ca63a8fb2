"""Plain collectives over Gloo (tests/e2e/test_culprit.py): every rank runs
STEPS all-reduces of 4 floats, printing a line after each, and then sleeps
(the job's quiet end: aml-shim's --hang-timeout judges it). Rank $SKIP_RANK
never enters all-reduce #$SKIP_AT (1-based: the collective's sequence
number), and sleeps there instead: the others wait in it, the job hangs
(with SKIP_EXITS=1 it exits 1 there two seconds later: a failure while the
others wait).
Its stand-ins for ranks that misbehave with their flight record:
SILENT_PIPE_RANK makes its own pipe before its process group starts (so
aml-shim's agent leaves it alone) and never answers it; BAD_DUMP_RANK does
the same but answers with a dump that is not one (BAD_DUMP=garbage) or one
of 80 MiB (BAD_DUMP=huge). Prints SITE=<value of USER_SITE_MARK> when that
variable is set (by a user's own sitecustomize). Until its process group is
up each rank prints a line a second (torch's import takes tens of seconds
on a loaded machine: that silence is not the hang under test). SILENT_S=N:
instead, every rank runs an all-reduce a second for N seconds printing
nothing (a silent epoch whose collectives advance), then prints "done" and
exits 0."""
import os
import threading
import time

rank = int(os.environ["RANK"])
starting = threading.Event()


def beat():
    while not starting.wait(1):
        print(f"rank {rank} starting", flush=True)


threading.Thread(target=beat, daemon=True).start()
if "USER_SITE_MARK" in os.environ:
    print(f"rank {rank} SITE={os.environ['USER_SITE_MARK']}", flush=True)


def own_pipe():
    """The rank's pipe, made here first: aml-shim's agent then serves none."""
    pipe = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + f"{rank}.pipe"
    os.mkfifo(pipe, 0o600)
    return os.open(pipe, os.O_RDWR)


def bad_dump(fd, kind):
    """Answers every ask, as torch does (aml-shim also asks while the job is
    silent, before any hang)."""
    out = os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank)
    while os.read(fd, 1):
        with open(out + ".tmp", "wb") as f:
            if kind == "huge":
                f.truncate(80 << 20)
            else:
                f.write(b"\x80\x02garbage that is no pickle")
        os.rename(out + ".tmp", out)


if rank == int(os.environ.get("SILENT_PIPE_RANK", "-1")):
    silent = own_pipe()  # held open, never read
if rank == int(os.environ.get("BAD_DUMP_RANK", "-1")):
    threading.Thread(target=bad_dump, args=(own_pipe(), os.environ["BAD_DUMP"]), daemon=True).start()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo")
starting.set()
t = torch.ones(4)
if "SILENT_S" in os.environ:
    until = time.monotonic() + float(os.environ["SILENT_S"])
    while time.monotonic() < until:
        dist.all_reduce(t)
        time.sleep(1)
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()
    raise SystemExit(0)
for seq in range(1, int(os.environ.get("STEPS", "8")) + 1):
    if rank == int(os.environ.get("SKIP_RANK", "-1")) and seq == int(os.environ.get("SKIP_AT", "6")):
        print(f"rank {rank} skips all_reduce {seq}", flush=True)
        if os.environ.get("SKIP_EXITS") == "1":
            time.sleep(2)  # the others enter it and wait
            print(f"rank {rank} exits 1", flush=True)
            os._exit(1)
        break
    dist.all_reduce(t)
    print(f"rank {rank} all_reduce {seq} sum {t[0].item():.0f}", flush=True)
    time.sleep(0.2)
time.sleep(1000000)
