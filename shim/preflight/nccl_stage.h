// The shim's side of the NCCL preflight: starts the worker process
// (nccl_worker.h) right away, so that loading CUDA overlaps the TCP check,
// and drives it with deadlines. The worker is killed (SIGKILL) and reaped
// when a deadline passes or the stage is destroyed, so no GPU memory or NCCL
// thread outlives the preflight.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "shim/base/env_snapshot.h"
#include "shim/preflight/nccl_wire.h"
#include "shim/net/tcp.h"

namespace aml {

// What the preflight asks of this shim's GPUs (one worker per shim).
class GpuPreflight {
 public:
  virtual ~GpuPreflight() = default;
  // This shim's GPUs, ready or why not, by `deadline`.
  virtual GpuHello Ready(Deadline deadline) = 0;
  // The all-reduces with the ids rank 0 sent, by `deadline`. Returns early,
  // with `*interrupted` set, when `interrupt_fd` becomes readable: rank 0
  // has its verdict (another rank failed), so waiting on would only hang.
  virtual WorkerResult Run(const WorkerGo& go, Deadline deadline, int interrupt_fd,
                           bool* interrupted) = 0;
};

class NcclStage : public GpuPreflight {
 public:
  // `worker_env` is the environment the job's first child gets (NCCL_* and
  // socket variables included), so NCCL is tested as the job will use it.
  // `exe` runs the worker (`exe __nccl-worker`); empty: this executable.
  NcclStage(int node, const WorkerSetup& setup, const EnvSnapshot& worker_env,
            const std::string& exe = "");
  ~NcclStage() override;
  GpuHello Ready(Deadline deadline) override;
  WorkerResult Run(const WorkerGo& go, Deadline deadline, int interrupt_fd,
                   bool* interrupted) override;

 private:
  // Why the worker stopped talking: its exit status, or the timeout and phase.
  std::string Lost(const std::string& io_error, bool timed_out);
  void Kill();

  int node_;
  int gpus_;
  Fd fd_;
  pid_t pid_ = -1;
  std::string start_error_;
  std::string phase_ = "loading CUDA and NCCL";
};

}  // namespace aml
