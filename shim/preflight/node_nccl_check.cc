#include "shim/preflight/node_nccl_check.h"

#include <chrono>

#include "shim/preflight/nccl_stage.h"
#include "shim/preflight/nccl_verdict.h"

namespace aml {

NodeNcclCheck::NodeNcclCheck(int node, std::string host, WorkerSetup setup,
                             EnvSnapshot worker_env, double min_busbw_gbps, double timeout_s,
                             std::string exe)
    : node_(node),
      host_(std::move(host)),
      setup_(std::move(setup)),
      env_(std::move(worker_env)),
      floor_(min_busbw_gbps),
      timeout_s_(timeout_s),
      exe_(std::move(exe)) {
  setup_.make_node_id = true;  // one shim per node (--spares): it leads its node
  setup_.make_world_id = false;
}

NodeNcclCheck::~NodeNcclCheck() {
  if (thread_.joinable()) thread_.join();  // bounded: the check's own deadline
}

std::optional<std::string> NodeNcclCheck::Poll() {
  if (!thread_.joinable()) {
    done_ = false;
    found_.clear();
    thread_ = std::thread([this] { Check(); });
    return std::nullopt;
  }
  if (!done_) return std::nullopt;
  thread_.join();
  return found_;
}

// The preflight's node stage again, on this node alone: its worker makes
// the node's id and all-reduces across the node's GPUs; the verdict's rule
// judges the floor.
void NodeNcclCheck::Check() {
  const Deadline by =
      Clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s_ * 1000));
  NcclStage stage(node_, setup_, env_, exe_);
  std::string found;
  const GpuHello hello = stage.Ready(by);
  if (!hello.ready.ok) {
    found = "its NCCL check could not start: " + hello.ready.error;
  } else {
    bool interrupted = false;
    const WorkerResult r = stage.Run(WorkerGo{hello.ready.node_id, ""}, by, -1, &interrupted);
    ShimOutcome o;
    o.node = node_;
    o.host = host_;
    o.gpus = static_cast<int>(setup_.slots.size());
    o.ok = r.ok;
    o.node_s = r.node_s;
    if (!r.ok) {
      found = "its NCCL check failed: " + r.error;
    } else if (const NcclVerdict v = JudgeAllReduce({o}, setup_.bytes, floor_); v.failed) {
      // "preflight nccl: node 1 (h): 2 GPUs, ... -- under --min-busbw ...".
      const std::string prefix = "preflight nccl: ";
      for (const std::string& line : v.lines)
        found += (found.empty() ? "" : "; ") +
                 ("NCCL " + (line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line));
    }
  }
  found_ = found;
  done_ = true;
}

}  // namespace aml
