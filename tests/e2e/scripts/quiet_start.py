"""A rank that says nothing until its process group is up: it imports torch,
then prepares its data for PREP_S seconds in silence (busy on the CPU, or
with PREP=sleep waiting on nothing; PREP=gil: its first GIL_S seconds of it
in one call of C code that holds the GIL, as a tokenizer or a pandas
operation does, so that no other thread of the rank runs), then joins the
Gloo group, all-reduces
its rank and prints the sum. PREP_AFTER_GROUP=1: it joins the group first
and prepares its data before its first collective (a model built, torch's
lazy imports). Used by tests/e2e/test_quiet_start.py and test_culprit.py: a
quiet start-up longer than --hang-timeout is a start, not a hang."""
import os
import time

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

after = os.environ.get("PREP_AFTER_GROUP") == "1"
if after:
    dist.init_process_group("gloo")
end = time.monotonic() + float(os.environ.get("PREP_S", "20"))
if os.environ.get("PREP") == "sleep":
    time.sleep(1000000)
data = 0
if os.environ.get("PREP") == "gil":
    # A pause first (its loader's workers start, say), in which aml-shim's
    # agent, a thread of this rank, makes its flight-recorder pipe; then
    # sum() over a range: one C call that never lets the GIL go, so that
    # the agent cannot answer a look. Timed on 10**7 first, on this
    # machine as loaded as it is now.
    time.sleep(3)
    took = time.monotonic()
    sum(range(10**7))
    per = max(time.monotonic() - took, 1e-4) / 10**7
    data = sum(range(int(float(os.environ.get("GIL_S", "15")) / per)))
while time.monotonic() < end:  # data preparation: CPU, no output
    data = (data * 31 + 7) % 1000003
if not after:
    dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} sum {t.item():.0f}", flush=True)
dist.destroy_process_group()
