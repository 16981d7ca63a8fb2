#!/usr/bin/env python3
"""Every file a comment names exists in the repository.

The project stands alone: a comment that cites DESIGN.md or a header that was
renamed sends the reader nowhere. Scans the comments of the C++, CMake, shell
and Python sources for names ending in .h, .cc, .md, .py, .sh or .cmake and
checks that each names a file of the repository (as a path from the root, or
by its base name), and that each README section a comment cites (README.md,
then a comma and the heading in double quotes) is a heading of README.md. Prints each dangling reference with where it is, exit 1.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
NAME = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:h|cc|md|py|sh|cmake))\b")
# Files that are not the project's: system headers and the peers' own files.
OUTSIDE = {"cuda_runtime_api.h", "nccl.h", "verbs.h", "mpi.h", "spawn.h", "unistd.h",
           "poll.h", "signal.h", "stdio.h", "stdlib.h", "pmix_common.h", "ibvsymbols.cc", "ibvcore.h", "subprocess-posix.cc", "launch.py",
           "aml_mpienv.py", "torchrun.py", "train.py", "m4p.py", "setup.py"}


def comment_lines(path, text):
    ext = os.path.splitext(path)[1]
    for i, line in enumerate(text.splitlines(), 1):
        if ext in (".h", ".cc"):
            if "//" in line:
                yield i, line[line.index("//"):]
        elif "#" in line:
            yield i, line[line.index("#"):]


def sources(files):
    """(name, text) of each source file of the tree."""
    for f in files:
        if not re.search(r"(\.(h|cc|py|sh|cmake)|CMakeLists\.txt)$", f):
            continue
        path = os.path.join(ROOT, f)
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                yield f, fh.read()


def main():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    names = set(files) | {os.path.basename(f) for f in files}
    bad = []
    for f, text in sources(files):
        for lineno, comment in comment_lines(f, text):
            for name in NAME.findall(comment):
                base = os.path.basename(name)
                if name in names or base in OUTSIDE or base in names:
                    continue
                bad.append(f"{f}:{lineno}: names {name}, which is not in the repository")
    # A cited README section is one of README.md's headings.
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        headings = {m.group(1).strip() for m in re.finditer(r"^#+ (.*)$", fh.read(), re.M)}
    for f, text in sources(files):
        for lineno, line in enumerate(text.splitlines(), 1):
            for section in re.findall(r'README\.md, "([^"]+)"', line):
                if section not in headings:
                    bad.append(f"{f}:{lineno}: names README.md section \"{section}\", "
                               "which README.md does not have")
    for b in bad:
        print(b)
    print(f"{len(bad)} dangling references in comments")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
