// --spares with --preflight nccl --min-busbw: the node's NCCL check before
// another attempt (docs/control-plane.md, "Spares and retirement"). As the
// node's ranks end in a restart round, its GPUs all-reduce among
// themselves once more, in the same worker process as the preflight's
// (nccl_stage.h), and a node whose bus bandwidth fell under the floor is
// unfit: it is retired and a spare takes its place. The check runs on a
// thread of its own (the supervisor's loop and the control plane's links go
// on); its answer is polled.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "shim/base/env_snapshot.h"
#include "shim/preflight/nccl_wire.h"

namespace aml {

class NodeNcclCheck {
 public:
  // `setup`: the node's GPUs (this shim leads its node: it makes the
  // node's id); `worker_env`: what the first child sees (NCCL_* included);
  // the floor in GB/s; the check's whole bound.
  NodeNcclCheck(int node, std::string host, WorkerSetup setup, EnvSnapshot worker_env,
                double min_busbw_gbps, double timeout_s, std::string exe = "");
  ~NodeNcclCheck();
  NodeNcclCheck(const NodeNcclCheck&) = delete;
  NodeNcclCheck& operator=(const NodeNcclCheck&) = delete;

  // Starts the check (when none runs) and says nothing until it ended:
  // then "" when the node is still over the floor, else what it found, in
  // one line; the next call starts a new one (the next round's).
  std::optional<std::string> Poll();

 private:
  void Check();

  int node_;
  std::string host_;
  WorkerSetup setup_;
  EnvSnapshot env_;
  double floor_, timeout_s_;
  std::string exe_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::string found_;  // written by the thread before done_
};

}  // namespace aml
