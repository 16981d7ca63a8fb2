"""aml-shim under a real one-node Slurm (slurmctld + slurmd + munged) that
this test starts and stops."""
import os
import socket
import tempfile
import unittest

from harness import (PYTHON, SHIM, SRC, TRAIN, clean_env, free_port, json_lines, main, run,
                     require, skip_here, start_local_slurm)

SLURM_DIR = "/tmp/aml-shim-slurm-test"


def slurm_env(**extra):
    return clean_env(SLURM_CONF=os.path.join(SLURM_DIR, "slurm.conf"), AML_SLURM_DIR=SLURM_DIR,
                     **extra)


class WhatCannotRunHere(unittest.TestCase):
    def test_a_taken_port_is_said_in_one_line_and_nothing_starts(self):
        # As in a chroot beside the machine's own Slurm: slurmctld failed
        # with "line 85 failed: slurmd -f $conf", naming neither why nor a
        # log. Exit 3 (the tests then skip, saying why) before munged or any
        # daemon starts.
        require("slurmctld", "slurmd", "munged")
        with socket.socket() as taken, tempfile.TemporaryDirectory() as d:
            taken.bind(("0.0.0.0", 0))
            taken.listen()
            port = taken.getsockname()[1]
            r = run([os.path.join(SRC, "scripts", "slurm-local.sh"), "start"],
                    env=clean_env(AML_SLURM_DIR=d, AML_SLURMCTLD_PORT=str(port)), timeout=60)
            if r.returncode == 3 and "no cgroup file system" in r.stderr:
                # (A chroot: the script says that first, as it must.)
                skip_here(r.stderr.strip().removeprefix("slurm: cannot run here: "),
                          "a cgroup file system for Slurm")
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertEqual(r.stderr, f"slurm: cannot run here: port {port}, slurmctld's, is "
                             f"taken (python3, pid {os.getpid()}): another Slurm? Stop it, or "
                             "give this one other ports (AML_SLURMCTLD_PORT, AML_SLURMD_PORT)\n")
            self.assertEqual(os.listdir(d), [])


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


    # What a library that reads Slurm first sees (Lightning's SLURMEnvironment,
    # submitit, pyxis's hook): each child's Slurm variables tell the same
    # world as its RANK and WORLD_SIZE (docs/torchrun.md, "Slurm's variables").
    PROBE = ("import json,os; e=os.environ; os.write(1, (json.dumps({k: e.get(k) for k in "
             "['RANK','WORLD_SIZE','LOCAL_RANK','LOCAL_WORLD_SIZE','SLURM_PROCID','SLURM_LOCALID',"
             "'SLURM_NTASKS','SLURM_STEP_NUM_TASKS','SLURM_STEP_TASKS_PER_NODE','SLURM_GTIDS',"
             "'SLURM_NODEID','MASTER_ADDR','MASTER_PORT']}) + chr(10)).encode())")

    def test_each_childs_slurm_variables_tell_its_own_place(self):
        r = self.srun(2, "--ntasks-per-node", "2", SHIM, "--nproc-per-node", "2",
                      "--no-tag-output", "--", PYTHON, "-c", self.PROBE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        docs = sorted(json_lines(r.stdout), key=lambda d: int(d["RANK"]))
        self.assertEqual([int(d["RANK"]) for d in docs], [0, 1, 2, 3], r.stdout)
        for d in docs:
            self.assertEqual(d["SLURM_PROCID"], d["RANK"])
            self.assertEqual(d["SLURM_LOCALID"], d["LOCAL_RANK"])
            self.assertEqual(d["SLURM_NTASKS"], d["WORLD_SIZE"])
            self.assertEqual(d["SLURM_STEP_NUM_TASKS"], "4")
            self.assertEqual(d["SLURM_STEP_TASKS_PER_NODE"], "4")
            self.assertEqual(d["SLURM_GTIDS"], "0,1,2,3")
            self.assertEqual(d["SLURM_NODEID"], "0")

    # pyxis/enroot's PyTorch hook sets RANK, LOCAL_RANK, WORLD_SIZE,
    # MASTER_ADDR and MASTER_PORT from Slurm before aml-shim runs: aml-shim's
    # world wins (the hook's values are the task's, not the children's), and
    # a preset that contradicts Slurm is overwritten with a warning; the
    # master it names is used (docs/world.md, "Preset variables").
    def test_a_container_hooks_preset_variables_lose_to_aml_shims_world(self):
        port = str(free_port())
        hook = ["env", "RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1",
                f"MASTER_PORT={port}"]
        r = self.srun(1, *hook, SHIM, "--nproc-per-node", "2", "--no-tag-output", "--", PYTHON,
                      "-c", self.PROBE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        docs = sorted(json_lines(r.stdout), key=lambda d: int(d["RANK"]))
        self.assertEqual([(d["RANK"], d["WORLD_SIZE"], d["LOCAL_RANK"]) for d in docs],
                         [("0", "2", "0"), ("1", "2", "1")])
        self.assertEqual({d["MASTER_PORT"] for d in docs}, {port})
        self.assertNotIn("warning", r.stderr)
        wrong = ["env", "RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=0"]
        r = self.srun(1, *wrong, SHIM, "--nproc-per-node", "2", "--no-tag-output", "--", PYTHON,
                      "-c", self.PROBE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        docs = sorted(json_lines(r.stdout), key=lambda d: int(d["RANK"]))
        self.assertEqual([d["RANK"] for d in docs], ["0", "1"])
        self.assertIn("aml-shim: warning: torch environment variables (RANK=5, WORLD_SIZE=8",
                      r.stderr)


if __name__ == "__main__":
    main()
