"""Prints a line every PERIOD seconds, COUNT times, on every rank or only on
rank ONLY_RANK, then exits 0: a job that is slow but not hung."""
import os
import time

period = float(os.environ.get("PERIOD", "2"))
count = int(os.environ.get("COUNT", "10"))
rank = int(os.environ["RANK"])
for _ in range(count):
    if os.environ.get("ONLY_RANK", str(rank)) == str(rank):
        print(f"rank {rank} still working", flush=True)
    time.sleep(period)
