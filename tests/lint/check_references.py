#!/usr/bin/env python3
"""Every file and section the sources and the documents name exists.

The project stands alone: a comment that cites DESIGN.md, a header that was
renamed or a link to a heading that moved sends the reader nowhere. Checks:

- the comments of the C++, CMake, shell and Python sources: each name ending
  in .h, .cc, .md, .py, .sh or .cmake names a file of the repository (as a
  path from the root, or by its base name);
- README.md and docs/*.md: each path into the repository's own folders
  (`shim/...`, `tests/...`, `docs/...`) names a file or folder of it, and
  each link `[text](target#anchor)` to a file of the repository names one
  that exists and, with an anchor, a heading of it (GitHub's anchors);
- everywhere: a cited section (a .md file, then a comma and the heading in
  double quotes: `docs/world.md, "MPI rendezvous"`) is a heading of that file.

Prints each dangling reference with where it is, exit 1.
"""
import functools
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
# The repository's own top-level folders: a path into one of them in a
# document must exist.
OWN = ("shim/", "launch/", "ib/", "tests/", "scripts/", "bench/", "docs/", "examples/",
       "cmake/", ".ci/")
OWN_PATH = re.compile(r"(?<![\w/.$~-])((?:" + "|".join(re.escape(d) for d in OWN) +
                      r")[\w./-]*[\w/])")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CITE = re.compile(r'([\w/.-]+\.md), "([^"]+)"')


def comment_lines(path, text):
    ext = os.path.splitext(path)[1]
    for i, line in enumerate(text.splitlines(), 1):
        if ext in (".h", ".cc"):
            if "//" in line:
                yield i, line[line.index("//"):]
        elif "#" in line:
            yield i, line[line.index("#"):]


def read(f):
    with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
        return fh.read()


def sources(files):
    """(name, text) of each source file of the tree."""
    for f in files:
        if re.search(r"(\.(h|cc|py|sh|cmake)|CMakeLists\.txt)$", f) and \
                os.path.exists(os.path.join(ROOT, f)):
            yield f, read(f)


def documents(files):
    for f in files:
        if (f == "README.md" or re.match(r"docs/[^/]+\.md$", f)) and \
                os.path.exists(os.path.join(ROOT, f)):
            yield f, read(f)


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(text):
    """The headings of a Markdown text, outside fenced blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            m = re.match(r"^#+ (.*)$", line)
            if m:
                out.append(m.group(1).strip())
    return out


@functools.lru_cache(maxsize=None)
def headings_of(path):
    """The headings of a Markdown file of the repository, read once."""
    return headings(read(path))


def prose(text):
    """(line number, line) of a Markdown text outside fenced blocks."""
    fenced = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield i, line


def main():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    tracked = set(files)
    names = tracked | {os.path.basename(f) for f in files}
    folders = {os.path.dirname(f) for f in files}
    folders |= {d for f in folders for d in [f.rsplit("/", i)[0] for i in range(f.count("/") + 1)]}
    by_base = {}
    for f in files:
        by_base.setdefault(os.path.basename(f), []).append(f)
    bad = []

    def resolve_md(name):
        if name in tracked:
            return name
        hits = by_base.get(os.path.basename(name), [])
        return hits[0] if len(hits) == 1 else None

    def check_cite(where, name, section):
        md = resolve_md(name)
        if md is None:
            bad.append(f"{where}: cites {name}, which is not in the repository")
        elif section not in headings_of(md):
            bad.append(f"{where}: cites {name} section \"{section}\", which {md} does not have")

    for f, text in sources(files):
        for lineno, comment in comment_lines(f, text):
            for name in NAME.findall(comment):
                base = os.path.basename(name)
                if name in names or base in OUTSIDE or base in names:
                    continue
                bad.append(f"{f}:{lineno}: names {name}, which is not in the repository")
        # A citation may wrap onto the next comment line.
        lines = text.splitlines() + [""]
        seen = set()
        for lineno, line in enumerate(lines[:-1], 1):
            joined = line + " " + re.sub(r"^\s*(//|#)?\s*", "", lines[lineno])
            for name, section in CITE.findall(joined):
                if (name, section) not in seen:
                    seen.add((name, section))
                    check_cite(f"{f}:{lineno}", name, section)

    for f, text in documents(files):
        here = os.path.dirname(f)
        for lineno, line in prose(text):
            where = f"{f}:{lineno}"
            for name, section in CITE.findall(line):
                check_cite(where, name, section)
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # https:, mailto:
                path, _, anchor = target.partition("#")
                path = os.path.normpath(os.path.join(here, path)) if path else f
                if path not in tracked and path not in folders:
                    bad.append(f"{where}: links to {path}, which is not in the repository")
                    continue
                if anchor and anchor not in {slug(h) for h in headings_of(path)}:
                    bad.append(f"{where}: links to {path}#{anchor}, a heading {path} does not have")
            for path in OWN_PATH.findall(line.replace("build/", "")):
                p = path.rstrip("/.")
                if "*" in p or "<" in p:
                    continue
                if p not in tracked and p not in folders:
                    bad.append(f"{where}: names {p}, which is not in the repository")
    for b in bad:
        print(b)
    print(f"{len(bad)} dangling references")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
