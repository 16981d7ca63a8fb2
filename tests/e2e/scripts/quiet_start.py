"""A rank that says nothing until its process group is up: it imports torch,
then prepares its data for PREP_S seconds in silence (busy on the CPU, or
with PREP=sleep waiting on nothing), then joins the Gloo group, all-reduces
its rank and prints the sum. Used by tests/e2e/test_watchdog.py: a quiet
start-up longer than --hang-timeout is a start, not a hang."""
import os
import time

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

end = time.monotonic() + float(os.environ.get("PREP_S", "20"))
if os.environ.get("PREP") == "sleep":
    time.sleep(1000000)
data = 0
while time.monotonic() < end:  # data preparation: CPU, no output
    data = (data * 31 + 7) % 1000003
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} sum {t.item():.0f}", flush=True)
dist.destroy_process_group()
