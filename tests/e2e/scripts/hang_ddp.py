"""PyTorch DDP over Gloo in which one rank hangs: every step trains a
DistributedDataParallel model, then all-reduces the step's loss; rank
$HANG_RANK (default 2) sleeps forever before its third all-reduce, so the
others wait in all_reduce. With HANG_RANK=-1 nobody hangs. Used by
tests/e2e/test_watchdog.py, which finds the two lines below by their marks."""
import os
import time

# Each stage of the start says so: a slow start on a loaded machine is
# progress, not a hang (only the sleep below is one).
print(f"rank {os.environ['RANK']} importing torch", flush=True)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def main():
    print(f"rank {os.environ['RANK']} joining the process group", flush=True)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    hang_rank = int(os.environ.get("HANG_RANK", "2"))
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    for step in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if step == 2 and rank == hang_rank:
            time.sleep(1000000)  # mark: hang
        dist.all_reduce(loss.detach())  # mark: all_reduce
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


main()
