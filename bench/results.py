"""bench/RESULTS.md is made of sections, one per benchmark script, each
starting with its marker (`<!-- bench/NAME.py -->`); a script replaces its own
section and keeps the others."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_section(mark, text):
    path = os.path.join(ROOT, "bench", "RESULTS.md")
    with open(path) as f:
        old = f.read()
    i = old.find(mark)
    if i >= 0:
        j = old.find("<!-- bench/", i + len(mark))
        old = old[:i] + (old[j:] if j >= 0 else "")
    with open(path, "w") as f:
        f.write(old.rstrip("\n") + "\n\n" + text)
