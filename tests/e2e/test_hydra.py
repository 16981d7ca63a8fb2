"""MPICH's Hydra (mpiexec.hydra) on one node: the world from PMI_*/MPI_LOCAL*,
per-node fan-out, PyTorch DDP, and two concurrent jobs that must not share a
master port (Hydra exports no job id: aml-shim derives one from the
hydra_pmi_proxy that all ranks of a node share)."""
import json
import re
import subprocess
import unittest

from harness import PYTHON, SHIM, TRAIN, assert_converged, clean_env, main, require, run, spawn

SHOW = ('echo "{\\"rank\\":$RANK,\\"size\\":$WORLD_SIZE,\\"local\\":$LOCAL_RANK,'
        '\\"node\\":$NODE_RANK,\\"port\\":$MASTER_PORT,\\"addr\\":\\"$MASTER_ADDR\\"}"')


def docs(stdout):
    return sorted((json.loads(re.sub(r"^\[rank \d+\] ", "", l)) for l in stdout.splitlines()
                   if "{" in l), key=lambda d: d["rank"])


def hydra(n, *args):
    return ["mpiexec.hydra", "-n", str(n), *args]


class Hydra(unittest.TestCase):
    def setUp(self):
        require("mpiexec.hydra")

    def test_world_from_hydra(self):
        r = run(hydra(3, SHIM, "--", "sh", "-c", SHOW))
        self.assertEqual(r.returncode, 0, r.stderr)
        d = docs(r.stdout)
        self.assertEqual([x["rank"] for x in d], [0, 1, 2])
        self.assertTrue(all(x["size"] == 3 and x["node"] == 0 and x["addr"] == "127.0.0.1"
                            for x in d), d)
        self.assertEqual([x["local"] for x in d], [0, 1, 2])
        self.assertEqual(len({x["port"] for x in d}), 1)

    def test_per_node_fan_out(self):
        r = run(hydra(2, SHIM, "--nproc-per-node", "2", "--", "sh", "-c", SHOW))
        self.assertEqual(r.returncode, 0, r.stderr)
        d = docs(r.stdout)
        self.assertEqual([x["rank"] for x in d], [0, 1, 2, 3])
        self.assertEqual([x["local"] for x in d], [0, 1, 2, 3])
        self.assertTrue(all(x["size"] == 4 for x in d), d)

    def test_two_concurrent_jobs_get_different_ports(self):
        jobs = [spawn(hydra(2, SHIM, "--", "sh", "-c", SHOW + "; sleep 1"),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        ports = []
        for p in jobs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            job_ports = {x["port"] for x in docs(out)}
            self.assertEqual(len(job_ports), 1, out)  # the ranks of one job agree
            ports.append(job_ports.pop())
        self.assertNotEqual(ports[0], ports[1])

    def test_pytorch_ddp_under_hydra(self):
        require(PYTHON)
        r = run(hydra(2, SHIM, "--", PYTHON, TRAIN, "--epochs", "10"), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        assert_converged(self, r.stdout, 2)


if __name__ == "__main__":
    main()
