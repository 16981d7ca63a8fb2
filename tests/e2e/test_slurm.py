"""aml-shim under a real one-node Slurm (slurmctld + slurmd + munged) that
this test starts and stops."""
import os
import unittest

from harness import PYTHON, SHIM, TRAIN, clean_env, json_lines, main, run, start_local_slurm

SLURM_DIR = "/tmp/aml-shim-slurm-test"


def slurm_env(**extra):
    return clean_env(SLURM_CONF=os.path.join(SLURM_DIR, "slurm.conf"), AML_SLURM_DIR=SLURM_DIR,
                     **extra)


class Slurm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_local_slurm(SLURM_DIR, cls.addClassCleanup, clean_env())

    def srun(self, n, *args, timeout=180):
        return run(["srun", "-n", str(n), "--overcommit", *args], env=slurm_env(),
                   timeout=timeout)

    def test_srun_mpi_pmi2_is_named_as_such(self):
        r = self.srun(2, "--mpi=pmi2", SHIM, "env", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        docs = sorted(json_lines(r.stdout), key=lambda d: d["rank"])
        self.assertEqual([d["rank"] for d in docs], [0, 1], r.stdout)
        for d in docs:
            self.assertEqual(d["source"], "Slurm PMI-2 (srun --mpi=pmi2)")
            self.assertEqual(d["env"]["LOCAL_WORLD_SIZE"], "2")

    def test_world_from_srun(self):
        r = self.srun(2, SHIM, "env", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        docs = sorted(json_lines(r.stdout), key=lambda d: d["rank"])
        self.assertEqual(len(docs), 2, r.stdout)
        for i, d in enumerate(docs):
            self.assertEqual(d["source"], "Slurm")
            env = d["env"]
            self.assertEqual(env["RANK"], str(i))
            self.assertEqual(env["WORLD_SIZE"], "2")
            self.assertEqual(env["LOCAL_RANK"], str(i))
            self.assertEqual(env["LOCAL_WORLD_SIZE"], "2")
            self.assertEqual(env["NODE_RANK"], "0")
            self.assertEqual(env["MASTER_ADDR"], "127.0.0.1")
        self.assertEqual(docs[0]["env"]["MASTER_PORT"], docs[1]["env"]["MASTER_PORT"])
        self.assertTrue(any("SLURM_JOB_ID" in n or "SLURM_PROCID" in n for n in docs[0]["notes"]))

    def test_ddp_under_srun(self):
        r = self.srun(2, SHIM, "--", PYTHON, TRAIN, "--epochs", "10", timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        digests = {line.split()[-1] for line in r.stdout.splitlines() if "weights" in line}
        self.assertEqual(len(digests), 1, r.stdout)
        self.assertEqual(r.stdout.count("weights"), 2, r.stdout)

    def test_exit_code_reaches_srun(self):
        r = self.srun(1, SHIM, "--", "sh", "-c", "exit 9")
        self.assertEqual(r.returncode, 9, r.stderr)


if __name__ == "__main__":
    main()
