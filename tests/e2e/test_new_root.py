"""--spares and a new root under the faults an attacker would pick
(docs/control-plane.md, "A new root"): a hang with a spare standing by, a
second takeover, an old root that comes back after the job moved on, a
frozen old root that still holds its log files, the root and its heir
lost together. Shims started side by side, as srun without
--kill-on-bad-exit or a container per node leaves them (only the control
plane ends the job), one rank each unless a test says otherwise."""
import json
import os
import signal
import tempfile
import time
import unittest

from harness import (CKPT, PYTHON, SHIM, clean_env, free_port, kill_group, main, run, slurp,
                     spawn, wait_for)
from test_spares import descendants, final_weights, kill_all

# A rank that prints once, then hangs.
QUIET_HANG = "import time; print('hello', flush=True); time.sleep(600)"


class NewRoot(unittest.TestCase):
    def start(self, tmp, args, command, shims=3, per_node=1, env=None):
        port = free_port()
        procs = []
        for rank in range(shims):
            e = clean_env(RANK=rank, WORLD_SIZE=shims, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                          CKPT_DIR=tmp, FAIL_RANK="-1", **(env or {}))
            out = open(f"{tmp}/shim-{rank}.out", "w")
            err = open(f"{tmp}/shim-{rank}.err", "w")
            procs.append(spawn([SHIM, "--nproc-per-node", str(per_node), *args, "--", *command],
                               env=e, stdout=out, stderr=err))
            self.addCleanup(kill_group, procs[-1])
            self.addCleanup(out.close)
            self.addCleanup(err.close)
        return procs

    def outputs(self, tmp, shims):
        return ([slurp(f"{tmp}/shim-{i}.out") for i in range(shims)],
                [slurp(f"{tmp}/shim-{i}.err") for i in range(shims)])

    def test_a_hang_keeps_the_spare(self):
        # At the roll-call the spare, which runs no ranks, reports none (it
        # crashed reading a rank it never started, was counted lost and
        # retired: a hang cost the job its spare).
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp, ["--spares", "1", "--max-restarts", "1", "--hang-timeout",
                                     "5", "--log-dir", f"{tmp}/logs"],
                               [PYTHON, "-c", QUIET_HANG])
            codes = [p.wait(timeout=120) for p in procs]
            outs, errs = self.outputs(tmp, 3)
            text = "\n".join(outs + errs)
            self.assertEqual(codes, [124, 124, 124], text)
            self.assertNotIn("lost rank 2's shim", text)
            self.assertIn("aml-shim: restart 1 of 1 after the job was hung", errs[2])
            record = json.loads(slurp(f"{tmp}/logs/failure.json"))
            self.assertEqual([a["exit_code"] for a in record["attempts"]], [124, 124], record)
            self.assertNotIn("retired", record)
            self.assertEqual(sorted(g for grp in record["hang"]["groups"] for g in grp["ranks"]),
                             [0, 1], record)


if __name__ == "__main__":
    main()
