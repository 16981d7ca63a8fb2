"""A real multi-node Slurm (scripts/slurm-netns.sh: slurmctld on the bridge,
slurmd in each of 3 network namespaces): sbatch with srun, the per-node
variant, srun --mpi=pmix, and mpirun inside an allocation, each training
PyTorch DDP or checking the world every rank gets, a spare node taking
the place of a node lost under srun, and a new root when rank 0's shim is
lost."""
import json
import os
import re
import signal
import subprocess
import tempfile
import unittest

from harness import (require_namespaces, CKPT, PYTHON, SHIM, SRC, TRAIN, assert_converged, assert_resumed_once,
                     clean_env, finals, free_port, main, require, run, slurp, spawn, wait_for)

SCRIPT = os.path.join(SRC, "scripts", "slurm-netns.sh")
NAME, SUBNET = "amls", "45"


class SlurmNetns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require("srun", "sbatch", "slurmctld", "slurmd", "munged", "ip", PYTHON)
        require_namespaces("--net", "--mount", why="network namespaces")
        cls.addClassCleanup(subprocess.run, [SCRIPT, "down", NAME], capture_output=True)
        r = run([SCRIPT, "up", NAME, "3", SUBNET], timeout=120)
        if r.returncode != 0:
            raise AssertionError("could not start the Slurm cluster:\n" + r.stdout + r.stderr)
        cls.conf = r.stdout.strip()

    def env(self, **extra):
        # The namespaces share /dev/shm and a hostname: no shared-memory BTL.
        return clean_env(SLURM_CONF=self.conf, OMPI_MCA_btl="tcp,self", **extra)

    def test_sbatch_two_nodes_srun_trains(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            job = os.path.join(tmp, "job.sh")
            with open(job, "w") as f:
                f.write(f"#!/bin/sh\nsrun {SHIM} -- {PYTHON} {TRAIN} --epochs 10\n")
            r = run(["sbatch", "-N2", "--ntasks-per-node=2", "--overcommit", "--wait",
                     f"--output={out}", job], env=self.env(), timeout=300)
            text = ""
            if os.path.exists(out):
                with open(out) as f:
                    text = f.read()
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr + text)
            assert_converged(self, text, 4)
            self.assertEqual([int(f[3]) for f in finals(text)], [0, 0, 1, 1])

    def test_one_shim_per_node_fans_out(self):
        r = run(["srun", "-N2", "--ntasks-per-node=1", SHIM, "--nproc-per-node", "2", "--",
                 PYTHON, TRAIN, "--epochs", "10"], env=self.env(), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        assert_converged(self, r.stdout, 4)
        self.assertEqual([int(f[3]) for f in finals(r.stdout)], [0, 0, 1, 1])

    def test_srun_mpi_pmix_world(self):
        # Each rank writes its document to a file: srun forwards long lines
        # from several ranks in interleaved pieces.
        with tempfile.TemporaryDirectory() as tmp:
            r = run(["srun", "-N2", "--ntasks-per-node=2", "--overcommit", "--mpi=pmix", "sh",
                     "-c", f'{SHIM} env --json > {tmp}/doc-$SLURM_PROCID'],
                    env=self.env(), timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            docs = []
            for rank in range(4):
                with open(f"{tmp}/doc-{rank}") as f:
                    docs.append(json.load(f))
        self.assertEqual([d["rank"] for d in docs], [0, 1, 2, 3])
        self.assertEqual([d["node_rank"] for d in docs], [0, 0, 1, 1])
        self.assertEqual({d["source"] for d in docs}, {"PMIx"})
        self.assertEqual({d["env"]["MASTER_ADDR"] for d in docs}, {f"{NAME}1"})

    def test_srun_mpi_pmix_mpi4py_command_and_job_secret(self):
        # Slurm exports no job secret: the preflight's comes from PMIx, and
        # a command that calls MPI_Init afterwards works across the nodes.
        code = ("from mpi4py import MPI; import os; c = MPI.COMM_WORLD; "
                "s = c.allreduce(c.Get_rank() + 1); "
                "os.write(1, f'\\nmpi {c.Get_rank()} {c.Get_size()} {s}\\n'.encode())")
        r = run(["srun", "-N2", "--ntasks-per-node=2", "--overcommit", "--mpi=pmix", SHIM, "-v",
                 "--preflight", "tcp", "--", PYTHON, "-c", code], env=self.env(), timeout=180)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(l for l in r.stdout.splitlines() if l.startswith("mpi ")),
                         [f"mpi {i} 4 10" for i in range(4)])
        self.assertEqual(r.stderr.count("preflight: hellos carry a digest of rank 0's random "
                                        "token (sent over PMIx only)"), 4, r.stderr)

    def test_fail_fast_job_ends_the_other_node_without_kill_on_bad_exit(self):
        # srun's default lets the other tasks run on when one fails: the
        # healthy node's ranks would sleep (or wait in NCCL) until killed.
        script = ("import os, sys, time; r = int(os.environ['RANK']); "
                  "time.sleep(300) if r != 3 else time.sleep(1); "
                  "print('rank 3 gives up', file=sys.stderr, flush=True); sys.exit(3)")
        r = run(["srun", "-N2", "--ntasks-per-node=1", SHIM, "--nproc-per-node", "2",
                 "--fail-fast", "job", "--", PYTHON, "-c", script], env=self.env(), timeout=120)
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 3, text)
        self.assertEqual(text.count("==== job failed ===="), 1, text)
        self.assertIn("aml-shim: first failure: rank 3 (local rank 1, node 1", text)
        self.assertIn("| rank 3 gives up", text)
        self.assertIn("aml-shim: rank 3 failed (exit status 3): the job's first failure; "
                      "rank 0's shim (on", text)

    def test_max_restarts_resumes_under_srun_without_kill_on_bad_exit(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            r = run(["srun", "-N2", "--ntasks-per-node=1", SHIM, "--nproc-per-node", "2",
                     "--max-restarts", "1", "--", PYTHON, CKPT],
                    env=self.env(CKPT_DIR=tmp), timeout=300)
        assert_resumed_once(self, r, shims=2)

    def spare_job(self, victim):
        """3 nodes, one shim each, the third a spare; mid-job the shim whose
        ranks include `victim` is SIGKILLed (its keeper ends its ranks).
        Returns srun's status, the job's output, and an undisturbed run's
        final weights."""
        with tempfile.TemporaryDirectory() as alone:
            r = run([SHIM, "--nproc-per-node", "4", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=alone, FAIL_RANK="-1", EPOCHS="8",
                                  MASTER_PORT=free_port()), timeout=180)
        undisturbed = re.findall(r"final weights ([0-9a-f]{64})", r.stdout)
        self.assertEqual(len(undisturbed), 1, r.stdout + r.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            with open(f"{tmp}/out", "w") as out, open(f"{tmp}/err", "w") as err:
                p = spawn(["srun", "-N3", "--ntasks-per-node=1", SHIM, "--nproc-per-node", "2",
                           "--spares", "1", "--max-restarts", "2", "--", PYTHON, CKPT],
                          env=self.env(CKPT_DIR=tmp, FAIL_RANK="-1", EPOCHS="8"),
                          stdout=out, stderr=err)
            self.addCleanup(lambda: p.poll() is None and os.killpg(p.pid, signal.SIGKILL))
            self.assertTrue(wait_for(lambda: "rank 2 epoch 1 saved" in slurp(f"{tmp}/out"), 180),
                            slurp(f"{tmp}/out") + slurp(f"{tmp}/err"))
            rank = int(slurp(f"{tmp}/pid-0-{victim}"))
            shim = int(slurp(f"/proc/{rank}/stat").rsplit(")", 1)[1].split()[1])
            os.kill(shim, signal.SIGKILL)
            p.wait(timeout=300)
            text = slurp(f"{tmp}/out") + slurp(f"{tmp}/err")
        return p.returncode, text, undisturbed

    def test_a_spare_takes_a_lost_nodes_place_under_srun_without_kill_on_bad_exit(self):
        # The shim that holds NODE_RANK 1 is lost: srun without -K lets the
        # other tasks run, rank 0 finds the shim lost and retires it, the
        # spare takes NODE_RANK 1 (ranks 2 and 3), and the job ends with the
        # weights of an undisturbed run. srun itself exits non-zero: one of
        # its tasks was killed.
        code, text, undisturbed = self.spare_job(victim=2)
        self.assertNotEqual(code, 0, text)
        self.assertIn("lost: the control plane lost rank 1's shim on", text)
        self.assertIn("aml-shim: NODE_RANK 1 moves to rank 2's shim on", text)
        self.assertIn("[rank 2] rank 2 resumed at epoch", text)
        self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", text), undisturbed, text)
        self.assertNotIn("LEFTOVER", text)

    def test_a_new_root_takes_the_job_when_rank_zeros_shim_is_lost_under_srun(self):
        # Rank 0's shim itself (the control plane's root) is lost: its heir
        # takes the job with 2 of the 3 shims (docs/control-plane.md, "A new
        # root"), the spare takes NODE_RANK 0 (ranks 0 and 1) and
        # MASTER_ADDR moves to the spare's node; the job ends with the
        # undisturbed weights.
        code, text, undisturbed = self.spare_job(victim=0)
        self.assertNotEqual(code, 0, text)
        # The heir is the root's first child: whichever shim linked first.
        # (Its link closed, or reset when what was sent to it was unread.)
        self.assertRegex(text, r"aml-shim: rank 0's shim on \S+ was lost \(the control plane "
                               r"lost rank 0's shim \((closed|Connection reset by peer)\)\); "
                               r"rank [12]'s shim on \S+ takes the job as its root: 2 of 3 "
                               r"shims reached it")
        self.assertIn("aml-shim: NODE_RANK 0 moves to rank 2's shim on", text)
        self.assertIn("MASTER_ADDR moves with it", text)
        self.assertIn("[rank 0] rank 0 resumed at epoch", text)
        self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", text), undisturbed, text)
        self.assertNotIn("LEFTOVER", text)

    def test_mpirun_inside_an_allocation(self):
        require("mpirun", "salloc")
        show = 'echo "R $RANK $NODE_RANK $LOCAL_RANK $MASTER_ADDR:$MASTER_PORT"'
        r = run(["salloc", "-N2", "--ntasks-per-node=2", "--overcommit", "mpirun",
                 "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "tcp,self",
                 "--mca", "oob_tcp_if_include", f"198.18.{SUBNET}.0/24",
                 "--mca", "rtc_hwloc_vmhole", "none", "-x", "PMIX_MCA_gds=hash",
                 SHIM, "--", "sh", "-c", show], env=self.env(), timeout=180)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = sorted(l.split()[1:] for l in r.stdout.splitlines() if l.startswith("R "))
        self.assertEqual([(int(a), int(b), int(c)) for a, b, c, _ in rows],
                         [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)], r.stdout)
        self.assertEqual(len({m for *_, m in rows}), 1, r.stdout)


if __name__ == "__main__":
    main()
