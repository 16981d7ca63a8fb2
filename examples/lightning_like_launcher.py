#!/usr/bin/env python3
"""A per-node launcher that starts its node's processes as PyTorch Lightning
does with its default cluster environment (LightningEnvironment), for
aml-shim --node-launcher (docs/frameworks.md). Lightning itself is not a
Debian package; this stand-in follows its documented rules:

- Before anything, Lightning picks its cluster environment, in order:
  Slurm (SLURM_NTASKS set, not an interactive session), torchelastic
  (RANK, GROUP_RANK, LOCAL_RANK and LOCAL_WORLD_SIZE all set), Kubeflow,
  LSF, MPI (mpi4py importable and MPI.COMM_WORLD of more than one
  process), and only then its own. Each of the others takes the world from
  its variables and refuses "the product (devices * num_nodes) does not
  match the world size", or joins mpirun's world of one process per node.
  This launcher stops with that environment's name when one would apply.
- Its own environment starts the node's processes only when LOCAL_RANK is
  not set (with LOCAL_RANK it takes itself for one of processes started by
  another launcher, and the job waits for ever for the rest). The job is
  --num-nodes x --devices processes; this node is NODE_RANK (else
  GROUP_RANK); the store is MASTER_ADDR:MASTER_PORT.
  It starts --devices processes of the command, each with LOCAL_RANK,
  RANK = NODE_RANK x devices + LOCAL_RANK and WORLD_SIZE.

    mpirun -np 2 --map-by ppr:1:node aml-shim --node-launcher -- \\
        python3 examples/lightning_like_launcher.py --num-nodes 2 --devices 2 -- \\
        python3 examples/train_ddp.py
"""
import argparse
import os
import subprocess
import sys


def other_environment():
    """The cluster environment Lightning would pick before its own, or None."""
    env = os.environ
    if "SLURM_NTASKS" in env and env.get("SLURM_JOB_NAME") not in ("bash", "interactive"):
        return "SLURMEnvironment (SLURM_NTASKS=%s)" % env["SLURM_NTASKS"]
    elastic = ["RANK", "GROUP_RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"]
    if all(k in env for k in elastic):
        return "TorchElasticEnvironment (%s)" % ", ".join(f"{k}={env[k]}" for k in elastic)
    if "KUBERNETES_PORT" in env and all(k in env for k in ("MASTER_ADDR", "MASTER_PORT",
                                                            "WORLD_SIZE", "RANK")):
        return "KubeflowEnvironment (RANK=%s WORLD_SIZE=%s)" % (env["RANK"], env["WORLD_SIZE"])
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    size = MPI.COMM_WORLD.Get_size()
    if size > 1:
        return "MPIEnvironment (mpi4py: MPI.COMM_WORLD has %d processes)" % size
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-nodes", type=int, required=True)
    p.add_argument("--devices", type=int, required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    taken = other_environment()
    if not taken and "LOCAL_RANK" in os.environ:
        taken = ("LightningEnvironment as one process started by another launcher "
                 "(LOCAL_RANK=%s is set: it starts none of the node's processes)"
                 % os.environ["LOCAL_RANK"])
    if taken:
        sys.exit(f"lightning_like_launcher: Lightning would take {taken} as its cluster "
                 f"environment, not its own with --num-nodes {a.num_nodes} --devices "
                 f"{a.devices}")
    node = int(os.environ.get("NODE_RANK", os.environ.get("GROUP_RANK", "0")))
    world = a.num_nodes * a.devices
    procs = []
    for local in range(a.devices):
        env = dict(os.environ, LOCAL_RANK=str(local), RANK=str(node * a.devices + local),
                   WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(a.devices),
                   MASTER_ADDR=os.environ.get("MASTER_ADDR", "127.0.0.1"),
                   MASTER_PORT=os.environ.get("MASTER_PORT", "29500"))
        procs.append(subprocess.Popen(command, env=env))
    codes = [q.wait() for q in procs]
    bad = [c for c in codes if c != 0]
    sys.exit(bad[0] if bad else 0)


if __name__ == "__main__":
    main()
