"""PyTorch DDP over Gloo that survives a restart: it trains EPOCHS epochs
(default 4), saves a checkpoint (model and optimizer, written by rank 0 to
$CKPT_DIR and renamed into place) after each, and resumes from the last one
when it starts. Rank $FAIL_RANK (default 3) exits 7 at the start of epoch
$FAIL_EPOCH (default 2) in the first attempt (TORCHELASTIC_RESTART_COUNT 0),
or in every attempt with FAIL_ALWAYS=1; FAIL_RANK=-1: nobody fails. With
HANG=1 that rank sleeps instead of exiting (in the first attempt). Rank 0
prints the final weights' digest. Each rank writes its pid to
$CKPT_DIR/pid-A-R and, when it starts, says LEFTOVER for any pid of an
earlier attempt that is still alive. QUIET=1: it prints nothing (as a job
that logs to files does): each rank appends its lines to $CKPT_DIR/log-R
instead. A bad node (--spares, tests/e2e/test_spares.py): with BAD_NODE=1
in its environment, or on the node that has the address BAD_NODE_ADDR,
every rank exits 7 at the start of epoch $FAIL_EPOCH in every attempt; with
BAD_NODE_HANGS=1 too, its LOCAL_RANK 0 sleeps there instead, in every attempt
(it never enters the epoch's all-reduces, where the others wait: a hang
whose culprit is that node, tests/e2e/test_culprit.py). Used by
tests/e2e/test_restart.py. BEAT=1: a line a second from each rank until
its process group is up (a loaded machine's slow import is no hang).
EPOCH_S: the seconds each epoch waits besides its steps (default 0.3; the
weights do not depend on it)."""
import glob
import hashlib
import os
import socket
import time

attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
rank_env = os.environ["RANK"]
ckpt_dir = os.environ["CKPT_DIR"]


def say(line):
    if os.environ.get("QUIET") == "1":
        with open(os.path.join(ckpt_dir, f"log-{rank_env}"), "a") as f:
            f.write(line + "\n")
    else:
        print(line, flush=True)


for path in glob.glob(os.path.join(ckpt_dir, "pid-*-*")):
    earlier = int(os.path.basename(path).split("-")[1])
    if earlier < attempt:
        pid = int(open(path).read())
        try:
            # A zombie holds nothing (its memory, files and GPU are freed):
            # it waits for its new parent to reap it (slurmstepd, for a
            # shim killed under srun), which is not aml-shim's to do.
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    say(f"LEFTOVER pid {pid} of attempt {earlier}")
        except OSError:
            pass
mine = os.path.join(ckpt_dir, f"pid-{attempt}-{rank_env}")
with open(mine + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(mine + ".tmp", mine)
say(f"rank {rank_env} attempt {attempt} importing torch")
if os.environ.get("BEAT") == "1":
    import threading
    started = threading.Event()

    def beat():
        while not started.wait(1):
            say(f"rank {rank_env} starting")

    threading.Thread(target=beat, daemon=True).start()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def bad_node():
    if os.environ.get("BAD_NODE") == "1":
        return True
    addr = os.environ.get("BAD_NODE_ADDR")
    if not addr:
        return False
    with socket.socket() as s:
        try:
            s.bind((addr, 0))  # the address is this node's
            return True
        except OSError:
            return False


def main():
    dist.init_process_group("gloo")
    if os.environ.get("BEAT") == "1":
        started.set()
    rank = dist.get_rank()
    say(f"rank {rank} joined the process group")
    epochs = int(os.environ.get("EPOCHS", "4"))
    fail_rank = int(os.environ.get("FAIL_RANK", "3"))
    fail_epoch = int(os.environ.get("FAIL_EPOCH", "2"))
    always = os.environ.get("FAIL_ALWAYS") == "1"
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ckpt = os.path.join(ckpt_dir, "ckpt.pt")
    start = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"] + 1
        say(f"rank {rank} resumed at epoch {start}")
    for epoch in range(start, epochs):
        if epoch == fail_epoch and bad_node():
            if os.environ.get("BAD_NODE_HANGS") == "1":
                if os.environ.get("LOCAL_RANK") == "0":
                    say(f"rank {rank} on a bad node hangs")
                    time.sleep(1000000)
            else:
                say(f"rank {rank} on a bad node fails")
                os._exit(7)
        if rank == fail_rank and epoch == fail_epoch and (attempt == 0 or always):
            if os.environ.get("HANG") == "1":
                time.sleep(1000000)
            os._exit(7)
        g = torch.Generator().manual_seed(1000 * epoch + rank)
        for _ in range(8):
            x = torch.randn(32, 16, generator=g)
            y = x.sum(dim=1, keepdim=True)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        # An epoch takes a while: output well before a failure.
        time.sleep(float(os.environ.get("EPOCH_S", "0.3")))
        dist.barrier()
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                        "epoch": epoch}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
        dist.barrier()
        say(f"rank {rank} epoch {epoch} saved")
    if rank == 0:
        digest = hashlib.sha256()
        for t in model.module.state_dict().values():
            digest.update(t.numpy().tobytes())
        say(f"final weights {digest.hexdigest()}")
    dist.destroy_process_group()


main()
