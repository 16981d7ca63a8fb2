// The NCCL preflight's worker: a process of its own (`aml-shim
// __nccl-worker`, started by NcclStage) so that CUDA and NCCL never live in
// the shim. Its GPU memory and CUDA contexts are gone before the job starts,
// and a hung ncclCommInitRank or a driver crash costs only the worker, which
// the shim kills at the deadline.
//
// On `fd` (a socket to the shim) it reads a setup, loads the CUDA runtime and
// NCCL, checks its GPUs, makes the unique ids it was asked for and answers
// ready; then, given the ids, it runs an all-reduce on the node's
// communicator and, for a job of several nodes, on the world's: one checked
// for correctness, warm-up, then timed iterations. It names each phase before
// starting it so that a timeout can say where it hung.
#pragma once

#include <sys/types.h>

#include "shim/base/env_snapshot.h"

namespace aml {

constexpr char kNcclWorkerArg[] = "__nccl-worker";
constexpr int kNcclWorkerFd = 3;

// `shim` is the pid of the shim that started it: the worker dies with it
// (PR_SET_PDEATHSIG), so no GPU is held by a worker whose shim was killed.
int NcclWorkerMain(int fd, pid_t shim, const EnvSnapshot& env);

}  // namespace aml
