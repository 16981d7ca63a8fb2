"""aml-shim gives each process the variables torchrun gives it (docs/torchrun.md,
"torchrun's variables"): Debian's torchrun and aml-shim run the same
2-process world and their variable sets are compared; every difference must
be one the README's table explains. Against torch 1.13 (bookworm, this
machine) and torch 2.x (the trixie root of scripts/trixie-root.sh)."""
import json
import os
import re
import tempfile
import unittest

from harness import PYTHON, SHIM, SRC, clean_env, main, mpirun, require, require_namespaces, run
from test_ompi5 import mpirun5, trixie_env, trixie_root

TORCHRUN = os.path.join(SRC, "bench", "peers", "torchrun.py")
SHOW = ("import os, json; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith(("
        "'TORCHELASTIC', 'GROUP_', 'ROLE_', 'LOCAL_', 'RANK', 'WORLD_SIZE', 'MASTER_', 'OMP_', "
        "'NODE_RANK', 'NCCL_', 'TORCH_NCCL', 'PYTHONUNBUF'))}, sort_keys=True), flush=True)")
SAME = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_MAX_RESTARTS", "OMP_NUM_THREADS"]
# Set by both, values differ on purpose (the README's table says why).
DIFFERENT = {"MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"}


def env():
    """This process's environment, less what torchrun or aml-shim would set."""
    return {k: v for k, v in clean_env().items()
            if not k.startswith(("PYTHONUNBUFFERED", "TORCHELASTIC", "ROLE_", "GROUP_"))}


def docs(stdout):
    out = {}
    for line in stdout.splitlines():
        line = re.sub(r"^\[rank \d+\] ", "", line)
        if line.startswith("{"):
            d = json.loads(line)
            out[int(d["RANK"])] = d
    return out


class Torch113(unittest.TestCase):
    """torch 1.13's torchrun sets NCCL_ASYNC_ERROR_HANDLING (aml-shim sets
    torch 2.x's TORCH_NCCL_ASYNC_ERROR_HANDLING); both say there is no agent
    store."""
    SAME_HERE = ["TORCHELASTIC_USE_AGENT_STORE"]
    ONLY_TORCHRUN = {"NCCL_ASYNC_ERROR_HANDLING"}
    ONLY_SHIM = {"NODE_RANK", "TORCH_NCCL_ASYNC_ERROR_HANDLING"}
    DIFFERENT_HERE = set()

    @classmethod
    def setUpClass(cls):
        require(PYTHON)
        r = cls.run_here([PYTHON, TORCHRUN, "--standalone", "--nproc_per_node", "2", "--no_python",
                          PYTHON, "-c", SHOW])
        if r.returncode != 0:
            raise AssertionError("torchrun failed:\n" + r.stdout + r.stderr)
        cls.torchrun = docs(r.stdout)

    @classmethod
    def run_here(cls, cmd):
        return run(cmd, env=env(), timeout=120)

    def mpirun_here(self, *args):
        require("mpirun")
        return mpirun(2, *args)

    def compare(self, ours, also_only_shim=(), also_only_torchrun=()):
        self.assertEqual(sorted(ours), [0, 1])
        for rank in (0, 1):
            t, a = self.torchrun[rank], ours[rank]
            for key in SAME + self.SAME_HERE:
                self.assertEqual(a.get(key), t.get(key), f"rank {rank}: {key}")
            self.assertEqual(set(t) - set(a), self.ONLY_TORCHRUN | set(also_only_torchrun),
                             f"rank {rank}: only torchrun sets these")
            self.assertEqual(set(a) - set(t), self.ONLY_SHIM | set(also_only_shim),
                             f"rank {rank}: only aml-shim sets these")
            for key in DIFFERENT | self.DIFFERENT_HERE:
                self.assertIn(key, a)
                self.assertIn(key, t)
            # aml-shim runs no agent store: rank 0 creates the TCPStore.
            self.assertEqual(a["TORCHELASTIC_USE_AGENT_STORE"], "False")

    def test_per_node_launch_matches_torchrun(self):
        r = self.run_here([SHIM, "--nproc-per-node", "2", "--", PYTHON, "-c", SHOW])
        self.assertEqual(r.returncode, 0, r.stderr)
        # aml-shim reads the output through a pipe: PYTHONUNBUFFERED=1.
        ours = docs(r.stdout)
        self.compare(ours, also_only_shim=["PYTHONUNBUFFERED"])
        for rank in (0, 1):
            self.assertRegex(ours[rank]["TORCHELASTIC_ERROR_FILE"],
                             rf"/aml-shim-errors-\w+/rank-{rank}\.error\.json$")

    def test_per_process_launch_under_mpirun_matches_torchrun(self):
        r = self.run_here(self.mpirun_here(SHIM, "--", PYTHON, "-c", SHOW))
        self.assertEqual(r.returncode, 0, r.stderr)
        # Exec in place: nobody is left to read an error file.
        self.compare(docs(r.stdout), also_only_torchrun=["TORCHELASTIC_ERROR_FILE"])

    def test_a_recorded_exception_reaches_the_failure_summary(self):
        code = ("import os, sys\n"
                "from torch.distributed.elastic.multiprocessing.errors import record\n"
                "@record\n"
                "def main():\n"
                "    print(os.environ['TORCHELASTIC_ERROR_FILE'], flush=True)\n"
                "    if os.environ['RANK'] == '1':\n"
                "        raise ValueError('bad shard 7')\n"
                "main()\n")
        with tempfile.TemporaryDirectory() as logs:
            for args in ([], ["--log-dir", logs]):
                with self.subTest(args=args):
                    r = self.run_here([SHIM, "--nproc-per-node", "2", *args, "--", PYTHON,
                                       "-c", code])
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertIn("aml-shim:   exception: ValueError: bad shard 7", r.stderr)
                    self.assertIn("aml-shim:   traceback (TORCHELASTIC_ERROR_FILE, last lines):",
                                  r.stderr)
                    self.assertIn('aml-shim:   |   File "<string>", line 7, in main', r.stderr)
                    # The -c program's newlines are escaped in the summary.
                    self.assertIn("aml-shim:   command:  " + PYTHON + " -c import os, sys\\nfrom",
                                  r.stderr)
                    files = [re.sub(r"^\[rank \d+\] ", "", l) for l in r.stdout.splitlines()]
                    # The error files are in the private directory (never in
                    # --log-dir, which others may write), gone with the job.
                    self.assertTrue(all("/aml-shim-errors-" in f for f in files), files)
                    self.assertFalse([f for f in files if os.path.exists(os.path.dirname(f))])
                    if args:
                        report = json.loads(open(os.path.join(logs, "failure.json")).read())
                        self.assertEqual(report["exception"]["message"], "ValueError: bad shard 7")
                        # --log-dir has a copy of the failing rank's.
                        copy = json.loads(open(os.path.join(logs, "rank-1.error.json")).read())
                        self.assertIn("ValueError: bad shard 7", json.dumps(copy))


class Torch2(Torch113):
    """torch 2.x's torchrun (trixie's 2.6) sets TORCH_NCCL_ASYNC_ERROR_HANDLING,
    as aml-shim does, and TORCHELASTIC_USE_AGENT_STORE=True even with
    --standalone: its workers connect to the agent's store. aml-shim runs no
    agent, so it says False (True would make rank 0 wait for a store that
    nobody serves)."""
    SAME_HERE = ["TORCH_NCCL_ASYNC_ERROR_HANDLING"]
    ONLY_TORCHRUN = set()
    ONLY_SHIM = {"NODE_RANK"}
    DIFFERENT_HERE = {"TORCHELASTIC_USE_AGENT_STORE"}

    @classmethod
    def setUpClass(cls):
        # Said in one line before minutes of building a 1.7 GB root that
        # could not be entered (scripts/in-root.sh runs it in a mount
        # namespace).
        require_namespaces("--mount", "--fork", why="a mount namespace (the trixie root)")
        cls.root = trixie_root()
        super().setUpClass()

    @classmethod
    def run_here(cls, cmd):
        return run([os.path.join(SRC, "scripts", "in-root.sh"), cls.root] + cmd,
                   env=trixie_env(env()), timeout=120)

    def mpirun_here(self, *args):
        return mpirun5(2, *args)


if __name__ == "__main__":
    main()
