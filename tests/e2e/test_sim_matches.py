"""The simulator is checked against the real thing (docs/control-plane.md,
"Simulation"): the same scenario, 256 shim processes on this machine and 256
simulated shims in aml-plane-sim, gives the same decisions (a failure: every
shim exits 7; a hang: every shim exits 124 after the roll-call; a failure
with --max-restarts 1: one restart, then every shim exits 0) and the same
frames on every shim's links, by type (heartbeats apart: their number is a
matter of time). The
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
import subprocess
import tempfile
import time
import unittest

from harness import SHIM, clean_env, free_port, main

SIM = os.path.join(os.path.dirname(os.path.abspath(SHIM)), "aml-plane-sim")
SHIMS = 256
FAILING = 5


def without_beats(frames):
    return " ".join(sorted(f for f in frames.split() if not f.startswith("beat=")))


def without_fail(frames):
    return " ".join(f for f in frames.split() if not f.startswith("fail="))


def fails(frames):
    return sum(int(f[5:]) for f in frames.split() if f.startswith("fail="))


def run_real(test, flags, command_of, want):
    """SHIMS real shims, rank r running command_of(r); each must exit `want`.
    Returns each shim's frames (what -v printed at its end), beats apart."""
    port = free_port()
    procs, logs = [], []
    # PATH holds `sh` and `sleep` alone: no stack reader runs on a hang (as
    # bench/control_scale.py: the roll-call is the control plane's own).
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(f"{tmp}/bin")
        for tool in ("sh", "sleep"):
            os.symlink(f"/bin/{tool}", f"{tmp}/bin/{tool}")
        try:
            for rank in range(SHIMS):
                env = clean_env(RANK=rank, WORLD_SIZE=SHIMS, MASTER_ADDR="127.0.0.1",
                                MASTER_PORT=port, AML_SHIM_JOB_SECRET="sim-matches-0123456789",
                                PATH=f"{tmp}/bin")
                log = open(os.path.join(tmp, f"shim-{rank}.err"), "w+")
                logs.append(log)
                procs.append(subprocess.Popen(
                    [SHIM, "-v", "--ib", "off", "--preflight-timeout", "600", "--grace", "1"] +
                    flags + ["--"] + command_of(rank),
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
            test.assertEqual(p.returncode, want, f"shim {rank}:\n{err[-2000:]}")
            said = [l for l in err.splitlines() if "frames handled here:" in l]
            test.assertEqual(len(said), 1, f"shim {rank}:\n{err[-2000:]}")
            real.append(without_beats(said[0].split("frames handled here:", 1)[1]))
        return real


def run_sim(test, faults, want, *flags):
    sim = json.loads(subprocess.run(
        [SIM, "--shims", str(SHIMS), "--per-node", str(SHIMS), "--seed", "1", "--faults",
         faults, "--grace", "1", "--frames"] + list(flags),
        capture_output=True, text=True, check=True, timeout=60).stdout)
    test.assertEqual(sim["invariants"], "ok")
    test.assertEqual(sim["exit_code"], want)
    return [without_beats(f) for f in sim["frames"]]


class SimulatorMatchesTheRealPlane(unittest.TestCase):
    def test_a_failure_among_256_shims_decides_and_talks_alike(self):
        real = run_real(self, ["--fail-fast", "job"],
                        lambda r: ["sh", "-c", "sleep 3; exit 7"] if r == FAILING
                        else ["sleep", "100000"], 7)
        simulated = run_sim(self, f"fail@3:{FAILING}", 7)
        self.assertEqual(collections.Counter(map(without_fail, real)),
                         collections.Counter(map(without_fail, simulated)))
        # Rank 0 heard the failure once; it crossed 1 or 2 links on the way.
        self.assertEqual(fails(real[0]), 1, real[0])
        self.assertEqual(fails(simulated[0]), 1, simulated[0])
        self.assertIn(sum(map(fails, real)), (1, 2))
        self.assertIn(sum(map(fails, simulated)), (1, 2))

    def test_a_hang_among_256_shims_decides_and_talks_alike(self):
        # Nobody prints: rank 0 judges the job hung, every shim sends its
        # stacks, every shim exits 124.
        real = run_real(self, ["--hang-timeout", "3s"], lambda r: ["sleep", "100000"], 124)
        simulated = run_sim(self, "hang", 124, "--hang-timeout", "3")
        self.assertEqual(collections.Counter(real), collections.Counter(simulated))

    def test_a_restart_among_256_shims_decides_and_talks_alike(self):
        # Rank 5 fails in the first attempt; the job is restarted once and
        # ends well: every shim exits 0.
        first = ('if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then '
                 f'[ "$RANK" = {FAILING} ] && {{ sleep 3; exit 7; }}; exec sleep 100000; fi; '
                 'sleep 1')
        real = run_real(self, ["--max-restarts", "1"], lambda r: ["sh", "-c", first], 0)
        simulated = run_sim(self, f"restart@3:{FAILING}", 0)
        self.assertEqual(collections.Counter(map(without_fail, real)),
                         collections.Counter(map(without_fail, simulated)))
        self.assertEqual(fails(real[0]), 1, real[0])
        self.assertEqual(fails(simulated[0]), 1, simulated[0])


if __name__ == "__main__":
    main()
