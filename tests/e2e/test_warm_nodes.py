"""--warm-restart on network-namespace nodes with torch 2.14 (the Debian
forky root, scripts/forky-root.sh; docs/control-plane.md, "Warm restarts"):
real DDP over Gloo that checkpoints each epoch (tests/e2e/scripts/
ckpt_ddp.py), each epoch long enough that every node's standbys are made
before the fault, and the job must end with the weights of an undisturbed
run.

- A rank's failure, 4 nodes under Open MPI 4.1's mpirun: every node's ranks
  of the next attempt start from their standbys.
- A lost node with a spare, one shim per node started side by side (as a
  container or a pod per node; mpirun would end the job with the node):
  node 2's shim and its ranks SIGKILLed at once, the spare takes its place,
  and every rank of the next attempt, the spare's too, starts warm.
Each node says its own ranks' starts; rank 0's shim says the job's once
every node's shim said.
(A hung node retired and replaced warm: tests/e2e/test_culprit.py.)"""
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from harness import (CKPT, IN_ROOT, OWN_HOST, SHIM, SRC, clean_env, descendants, forky_mpirun,
                     forky_nodes, free_port, main, slurp)

CLUSTER = "amlw"
SUBNET = 51
NET = f"198.18.{SUBNET}"
WARM = "aml-shim: --warm-restart: 2 of 2 ranks started from their standbys"


def job_warm(ranks):
    """Rank 0's shim's line for the job: every node's shim said."""
    return (f"aml-shim: --warm-restart: {ranks} of the job's {ranks} ranks started from their "
            "standbys (every node's shim said)")


def weights_of(text):
    return re.findall(r"final weights ([0-9a-f]{64})", text)


class WarmOnNodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        forky_nodes(cls, CLUSTER, 4, SUBNET)

    def mpirun(self, nodes, *shim_args, timeout=600, **env):
        return forky_mpirun(self.root, self.agent, CLUSTER, NET, nodes, 2,
                            [*shim_args, "python3", CKPT], timeout=timeout, **env)

    def side_by_side(self, shims, tmp, *shim_args, **env):
        """One shim per node (nodes 1..`shims`), each in the forky root under
        its node's name, RANK, WORLD_SIZE and MASTER_ADDR as a pod gets them;
        output to tmp/node-N.out and .err."""
        port = free_port()
        procs = []
        for rank in range(shims):
            names = clean_env(RANK=rank, WORLD_SIZE=shims, MASTER_ADDR=f"{NET}.1",
                              MASTER_PORT=port, GLOO_SOCKET_IFNAME="eth0", USE_LIBUV="0",
                              AML_SHIM_PMIX="0",
                              AML_ROOT_BINDS=":".join(sorted({SRC, os.path.dirname(SHIM),
                                                              "/tmp"})), **env)
            cmd = (["ip", "netns", "exec", f"{CLUSTER}{rank + 1}"] + OWN_HOST +
                   [IN_ROOT, self.root, SHIM, "--nproc-per-node", "2", *shim_args, "python3",
                    CKPT])
            with open(f"{tmp}/node-{rank + 1}.out", "w") as out, \
                    open(f"{tmp}/node-{rank + 1}.err", "w") as err:
                procs.append(subprocess.Popen(cmd, env=names, stdout=out, stderr=err,
                                              start_new_session=True))
        self.addCleanup(lambda: [os.killpg(p.pid, signal.SIGKILL) for p in procs
                                 if p.poll() is None])
        return procs

    def test_a_failure_restarts_every_nodes_ranks_warm_to_the_undisturbed_weights(self):
        # Rank 5 (node 3) exits 7 at the start of epoch 2.
        with tempfile.TemporaryDirectory(dir="/tmp") as ckpt, \
                tempfile.TemporaryDirectory(dir="/tmp") as clean:
            calm = self.mpirun(4, CKPT_DIR=clean, FAIL_RANK="-1")
            self.assertEqual(calm.returncode, 0, calm.stdout + calm.stderr)
            self.assertEqual(len(weights_of(calm.stdout)), 1, calm.stdout)
            r = self.mpirun(4, "--max-restarts", "1", "--warm-restart", CKPT_DIR=ckpt,
                            FAIL_RANK="5", EPOCH_S="8")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("aml-shim: restart 1 of 1 after rank 5 failed (exit status 7)",
                          r.stderr)
            self.assertEqual(r.stderr.count(WARM), 4, r.stderr)
            self.assertEqual(r.stderr.count(job_warm(8)), 1, r.stderr)
            self.assertNotIn("starts cold", r.stderr)
            self.assertEqual(weights_of(r.stdout), weights_of(calm.stdout))

    def test_a_lost_nodes_place_is_taken_by_the_spare_and_every_rank_restarts_warm(self):
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            calm = self.side_by_side(3, tmp, CKPT_DIR=tmp, FAIL_RANK="-1")
            codes = [p.wait(timeout=300) for p in calm]
            self.assertEqual(codes, [0, 0, 0], slurp(f"{tmp}/node-1.err"))
            weights = weights_of(slurp(f"{tmp}/node-1.out"))
            self.assertEqual(len(weights), 1, slurp(f"{tmp}/node-1.out"))
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            procs = self.side_by_side(4, tmp, "--max-restarts", "1", "--spares", "1",
                                      "--warm-restart", CKPT_DIR=tmp, FAIL_RANK="-1",
                                      EPOCH_S="8")
            # Epoch 1 saved (its standbys made as the ranks started, their
            # modules learned once their process groups were up): node 2 dies.
            deadline = time.monotonic() + 300
            while "epoch 1 saved" not in slurp(f"{tmp}/node-1.out"):
                self.assertLess(time.monotonic(), deadline, slurp(f"{tmp}/node-1.err"))
                self.assertIsNone(procs[0].poll(), slurp(f"{tmp}/node-1.err"))
                time.sleep(0.2)
            for pid in [procs[1].pid] + descendants(procs[1].pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            codes = [procs[i].wait(timeout=300) for i in (0, 2, 3)]
            errs = [slurp(f"{tmp}/node-{i}.err") for i in (1, 3, 4)]
            text = "\n".join(errs)
            self.assertEqual(codes, [0, 0, 0], text)
            self.assertIn("NODE_RANK 1 moves to rank 3's shim on", errs[0])
            # Nodes 1 and 3, and the spare in node 2's place.
            self.assertEqual([e.count(WARM) for e in errs], [1, 1, 1], text)
            self.assertEqual(errs[0].count(job_warm(6)), 1, text)
            self.assertNotIn("starts cold", text)
            self.assertEqual(weights_of(slurp(f"{tmp}/node-1.out")), weights)


if __name__ == "__main__":
    main()
