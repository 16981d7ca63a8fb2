"""Prints a line every PERIOD seconds for TOTAL seconds, on every rank or only
on rank ONLY_RANK, then exits 0: a job that is slow but not hung."""
import os
import time

period = float(os.environ.get("PERIOD", "2"))
total = float(os.environ.get("TOTAL", "20"))
rank = int(os.environ["RANK"])
end = time.monotonic() + total
while time.monotonic() < end:
    if os.environ.get("ONLY_RANK", str(rank)) == str(rank):
        print(f"rank {rank} still working", flush=True)
    time.sleep(period)
