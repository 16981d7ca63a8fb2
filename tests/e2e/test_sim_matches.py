"""The simulator is checked against the real thing (docs/control-plane.md,
"Simulation"): the same scenario, 256 shim processes on this machine and 256
simulated shims in aml-plane-sim, gives the same decisions (every shim
exits 7, the first failure's status) and the same frames on every shim's
links, by type (heartbeats apart: their number is a matter of time). The
shims all come from one address, as bench/control_scale.py runs them, so the
tree is rank 0's node's: its shape does not depend on the order of the joins,
only which rank takes which place does; the frames are compared as a
multiset over the shims. Only the failure's relay differs with that order
(the failing rank's shim under rank 0 or under a leader: 1 or 2 links), so
the `fail` frames are compared apart: rank 0 gets one on both sides.
"""
import collections
import json
import os
import socket
import subprocess
import tempfile
import time
import unittest

from harness import SHIM, clean_env, main

SIM = os.path.join(os.path.dirname(os.path.abspath(SHIM)), "aml-plane-sim")
SHIMS = 256
FAILING = 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def without_beats(frames):
    return " ".join(sorted(f for f in frames.split() if not f.startswith("beat=")))


def without_fail(frames):
    return " ".join(f for f in frames.split() if not f.startswith("fail="))


def fails(frames):
    return sum(int(f[5:]) for f in frames.split() if f.startswith("fail="))


class SimulatorMatchesTheRealPlane(unittest.TestCase):
    def test_a_failure_among_256_shims_decides_and_talks_alike(self):
        port = free_port()
        procs, logs = [], []
        with tempfile.TemporaryDirectory() as tmp:
            try:
                for rank in range(SHIMS):
                    env = clean_env(RANK=rank, WORLD_SIZE=SHIMS, MASTER_ADDR="127.0.0.1",
                                    MASTER_PORT=port, AML_SHIM_JOB_SECRET="sim-matches-0123456789")
                    cmd = (["sh", "-c", "sleep 3; exit 7"] if rank == FAILING
                           else ["sleep", "100000"])
                    log = open(os.path.join(tmp, f"shim-{rank}.err"), "w+")
                    logs.append(log)
                    procs.append(subprocess.Popen(
                        [SHIM, "-v", "--ib", "off", "--fail-fast", "job", "--preflight-timeout",
                         "600", "--grace", "1", "--"] + cmd,
                        env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True))
                deadline = time.monotonic() + 300
                for p in procs:
                    p.wait(timeout=max(1, deadline - time.monotonic()))
            finally:
                for p in procs:
                    if p.poll() is None:
                        os.killpg(p.pid, 9)
                        p.wait()
            real = []
            for rank, (p, log) in enumerate(zip(procs, logs)):
                log.seek(0)
                err = log.read()
                log.close()
                self.assertEqual(p.returncode, 7, f"shim {rank}:\n{err[-2000:]}")
                said = [l for l in err.splitlines() if "frames handled here:" in l]
                self.assertEqual(len(said), 1, f"shim {rank}:\n{err[-2000:]}")
                real.append(without_beats(said[0].split("frames handled here:", 1)[1]))
        sim = json.loads(subprocess.run(
            [SIM, "--shims", str(SHIMS), "--per-node", str(SHIMS), "--seed", "1", "--faults",
             f"fail@3:{FAILING}", "--grace", "1", "--frames"],
            capture_output=True, text=True, check=True, timeout=60).stdout)
        self.assertEqual(sim["invariants"], "ok")
        self.assertEqual(sim["exit_code"], 7)
        simulated = [without_beats(f) for f in sim["frames"]]
        self.assertEqual(collections.Counter(map(without_fail, real)),
                         collections.Counter(map(without_fail, simulated)))
        # Rank 0 heard the failure once; it crossed 1 or 2 links on the way.
        self.assertEqual(fails(real[0]), 1, real[0])
        self.assertEqual(fails(simulated[0]), 1, simulated[0])
        self.assertIn(sum(map(fails, real)), (1, 2))
        self.assertIn(sum(map(fails, simulated)), (1, 2))


if __name__ == "__main__":
    main()
