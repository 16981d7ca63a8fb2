"""Every command README.md and docs/ show is marked, and those marked `run`
run here and do what the text says (docs/testing.md, "Examples that run").

A fenced block in sh or console is marked after its language:

- `run`: run here, from a scratch directory that holds a small DDP
  `train.py`, with the built aml-shim and the Python that has torch first on
  PATH. `exit=N`: the status each command must end with (default 0).
  `needs=slurm`: inside a one-node Slurm this test starts (when it cannot
  start, those blocks are skipped with a line, the others still run, and the
  test fails at the end). `as-is`: without the test machine's mpirun
  default to oversubscribe (the block must say `--oversubscribe`, as a
  newcomer on a small machine needs). In a console
  block, `$ ` starts a command and the lines after it are output it must
  print (in any order, among others), `…` standing for any text.
- `not-run=WHY`: cannot run on one test machine (several nodes, a GPU,
  installing packages); the reason is a word the summary counts.

A block without a language that starts with a command must say which it is.
"""
import os
import re
import shutil
import tempfile
import unittest

from harness import PYTHON, SHIM, SRC, clean_env, main, run, start_local_slurm

SHELLS = {"sh", "bash", "console", "shell"}
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
COMMANDS = ("$ ", "aml-shim ", "mpirun ", "srun ", "sbatch ", "sudo ", "scripts/", "cmake ",
            "pip ", "git ", "python3 ", "python ")
SLURM_DIR = "/tmp/aml-shim-slurm-docs"

# The `train.py` of the examples: a real DDP step over Gloo that checks the
# world it was given.
TRAIN = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, (t.item(), world)
print(f"rank {rank} of {world}: all_reduce ok", flush=True)
dist.destroy_process_group()
"""


def documents():
    files = ["README.md"] + sorted(os.path.join("docs", f) for f in
                                   os.listdir(os.path.join(SRC, "docs")) if f.endswith(".md"))
    for f in files:
        with open(os.path.join(SRC, f), encoding="utf-8") as fh:
            yield f, fh.read()


class Block:
    def __init__(self, path, line, info, body):
        words = info.split()
        self.where = f"{path}:{line}"
        self.lang = words[0] if words else ""
        self.marks = dict(w.partition("=")[::2] for w in words[1:])
        self.body = body

    def commands(self):
        """(command, expected output lines) in order."""
        lines, out = self.body.splitlines(), []
        console = self.lang == "console"
        i = 0
        while i < len(lines):
            line = lines[i]
            if console and not line.startswith("$ "):
                if not out:
                    raise AssertionError(f"{self.where}: output before any `$ ` command")
                if line.strip() and line.strip() not in ("...", "…"):
                    out[-1][1].append(line.rstrip())
                i += 1
                continue
            cmd = line[2:] if console else line
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            if cmd.strip() and not cmd.lstrip().startswith("#"):
                out.append((cmd, []))
            i += 1
        return out


def blocks():
    for path, text in documents():
        for m in FENCE.finditer(text):
            yield Block(path, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))


def pattern(expected):
    return re.compile(".*".join(re.escape(p) for p in expected.split("…")) + r"\s*$")


class Docs(unittest.TestCase):
    def test_every_shell_block_is_marked(self):
        unmarked, counts = [], {}
        for b in blocks():
            looks_like_commands = b.lang == "" and b.body.lstrip().startswith(COMMANDS)
            if b.lang not in SHELLS and not looks_like_commands:
                continue
            if looks_like_commands or ("run" not in b.marks and "not-run" not in b.marks):
                unmarked.append(b.where)
            why = "run" if "run" in b.marks else "not-run=" + b.marks.get("not-run", "")
            counts[why] = counts.get(why, 0) + 1
        self.assertEqual(unmarked, [], "shell blocks that say neither `run` nor `not-run=WHY` "
                         "(a block of commands needs the language sh or console)")
        self.assertGreater(counts.get("run", 0), 10, counts)
        print("blocks:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))

    def test_runnable_blocks(self):
        runnable = [b for b in blocks() if b.lang in SHELLS and "run" in b.marks]
        self.assertTrue(runnable)
        scratch = tempfile.mkdtemp(prefix="aml-docs-")
        self.addCleanup(shutil.rmtree, scratch, True)
        bindir = os.path.join(scratch, ".bin")
        os.mkdir(bindir)
        os.symlink(os.path.abspath(SHIM), os.path.join(bindir, "aml-shim"))
        os.symlink(PYTHON, os.path.join(bindir, "python3"))
        with open(os.path.join(scratch, "train.py"), "w") as f:
            f.write(TRAIN)
        # Paths the examples give from the repository's root: its fixtures,
        # examples, the peers' fixed launchers, and the build's stand-ins.
        for d in ("tests", "examples", "bench"):
            os.symlink(os.path.join(os.path.abspath(SRC), d), os.path.join(scratch, d))
        # The build's entries, but a Testing/ of its own: docs/testing.md's
        # `ctest --test-dir build` must not write over the LastTest.log of
        # the ctest that runs this test (scripts/test.sh reads it after).
        real_build = os.path.dirname(os.path.abspath(SHIM))
        os.mkdir(os.path.join(scratch, "build"))
        for e in os.listdir(real_build):
            if e != "Testing":
                os.symlink(os.path.join(real_build, e), os.path.join(scratch, "build", e))
        log = os.path.join(real_build, "Testing", "Temporary", "LastTest.log")
        before = None
        if os.path.exists(log):
            with open(log, "rb") as f:
                before = f.read()
        # A small test machine run as root: fewer cores than ranks.
        env = clean_env(PATH=bindir + ":" + os.environ["PATH"], OMPI_ALLOW_RUN_AS_ROOT="1",
                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,tcp")
        # A need that cannot be met here (Slurm cannot start: a chroot, a
        # container) skips its blocks, each with a line; the rest still run.
        missing, cannot = {}, None
        if any(b.marks.get("needs") == "slurm" for b in runnable):
            try:
                env = start_local_slurm(SLURM_DIR, self.addCleanup, env)
            except AssertionError as e:
                missing["slurm"] = str(e).strip().splitlines()[-1]
            except unittest.SkipTest as e:
                # This machine cannot run one (a chroot): the other blocks
                # run, then the test says it skipped, and why.
                missing["slurm"] = cannot = str(e)
        skipped = []
        for b in runnable:
            need = b.marks.get("needs")
            if need in missing:
                print(f"skipped {b.where}: needs {need}, which cannot start here: {missing[need]}")
                skipped.append(b.where)
                continue
            with self.subTest(block=b.where):
                self.run_block(b, scratch, env)
        # Here every need is met (CI has root and Slurm): a skip is a failure,
        # after every other block ran, but where this machine cannot give it.
        if cannot and skipped:
            raise unittest.SkipTest(cannot)
        self.assertEqual(skipped, [], f"blocks not run: {missing}")
        # The ctest running this test appends to its log; one run by a block
        # would have begun it anew.
        if before is not None:
            with open(log, "rb") as f:
                self.assertTrue(f.read().startswith(before), f"a block wrote over {log}")

    def run_block(self, b, scratch, env):
        want = int(b.marks.get("exit", "0"))
        if "as-is" in b.marks:
            # As a newcomer's machine has it: mpirun oversubscribes only when
            # the block says so (root is allowed: tests run as root).
            env = {k: v for k, v in env.items() if k != "OMPI_MCA_rmaps_base_oversubscribe"}
        for cmd, expected in b.commands():
            r = run(["bash", "-c", cmd], env=env, cwd=scratch, timeout=300)
            said = f"{b.where}: {cmd}\n--- stdout:\n{r.stdout}\n--- stderr:\n{r.stderr}"
            self.assertEqual(r.returncode, want, said)
            lines = (r.stdout + r.stderr).splitlines()
            for e in expected:
                self.assertTrue(any(pattern(e).match(l) for l in lines),
                                f"expected a line like {e!r}\n{said}")
            if "train.py" in cmd and want == 0:
                # Every rank of the DDP step passed its check.
                self.assertIn("all_reduce ok", r.stdout, said)
            if "examples/train_ddp.py" in cmd and want == 0:
                # Every rank ended with the same weights: DDP kept them in sync.
                weights = set(re.findall(r" weights ([0-9a-f]+)$", r.stdout, re.M))
                self.assertEqual(len(weights), 1, said)


if __name__ == "__main__":
    main()
