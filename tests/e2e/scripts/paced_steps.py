"""Steps of CPU work, each ending in an all-reduce over Gloo
(tests/e2e/test_slow_nodes.py): every rank does the same WORK loop
iterations of plain Python per step (the same work on every node, so that a
node slowed from outside takes longer), then sleeps PAUSE_S seconds (0 by
default; as a step waits for its data: ranks that leave CPU free do not
contend for it when several nodes share a few cores), then all-reduces 4
floats and a stop flag. Rank 0 raises the flag once RUN_S seconds passed since the
process group came up (or after STEPS steps, when STEPS is set); every rank
then prints its step count and the weights' digest (a sum of what every
rank contributed, step by step: the same for the same step count) and
exits 0. Prints a line every PRINT_EVERY steps (default 50). For the
bench (bench/straggler.py), rank SLOW_RANK does SLOW_FACTOR times the work
(a slowdown chosen exactly, where a cgroup's quota depends on the load),
and rank OWN_RANK spends OWN_S seconds more a step on its own work (a
sleep: rank 0's logging or metrics, which is not its node's fault). NOISE
(a fraction, 0 by default) varies every step's pause by up to that much
either way, drawn alike on every rank."""
import hashlib
import os
import random
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
work = int(os.environ.get("WORK", "200000"))
if rank == int(os.environ.get("SLOW_RANK", "-1")):
    work = int(work * float(os.environ.get("SLOW_FACTOR", "1")))
run_s = float(os.environ.get("RUN_S", "60"))
pause_s = float(os.environ.get("PAUSE_S", "0"))
own_s = float(os.environ.get("OWN_S", "0")) if rank == int(os.environ.get("OWN_RANK", "-1")) \
    else 0.0
noise = float(os.environ.get("NOISE", "0"))
draw = random.Random(rank)
steps_max = int(os.environ.get("STEPS", "0"))
every = int(os.environ.get("PRINT_EVERY", "50"))
torch.set_num_threads(1)
dist.init_process_group("gloo")
start = time.monotonic()
weights = torch.zeros(4, dtype=torch.float64)
step = 0
while True:
    x = 0
    for i in range(work):
        x += i & 7
    if pause_s:
        time.sleep(pause_s * (1 + noise * (2 * draw.random() - 1)))
    if own_s:
        time.sleep(own_s)
    step += 1
    stop = 1.0 if rank == 0 and ((steps_max and step >= steps_max) or
                                 (not steps_max and time.monotonic() - start >= run_s)) else 0.0
    t = torch.tensor([rank + 1.0, step, x % 97, 1.0, stop], dtype=torch.float64)
    dist.all_reduce(t)
    weights += t[:4]
    if step % every == 0:
        print(f"rank {rank} step {step}", flush=True)
    if t[4] > 0:
        break
digest = hashlib.sha256(weights.numpy().tobytes()).hexdigest()
print(f"rank {rank} steps {step} weights {digest}", flush=True)
dist.destroy_process_group()
