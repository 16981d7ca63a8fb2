// The messages of the NCCL preflight: between a shim and its worker process
// (setup, ready, phase, go, result) and between a shim and rank 0 (gpu,
// go, result). Text frames: a kind line, then "key=value" lines; values have
// no newline. Decoding checks the kind and every field it reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shim/base/result.h"

namespace aml {

// One GPU that a worker drives: its CUDA device index and its ranks in the
// node's communicator and in the world's.
struct WorkerSlot {
  int device = 0;
  int node_rank = 0, node_size = 1;
  int world_rank = 0, world_size = 1;
};

struct WorkerSetup {
  uint64_t bytes = 0;  // all-reduce size per GPU
  int iters = 10;      // timed iterations after the checked one and warm-up
  bool make_node_id = false;   // this shim leads its node
  bool make_world_id = false;  // rank 0 of a job that spans nodes
  std::vector<WorkerSlot> slots;
};

// The worker has loaded CUDA and NCCL and found its GPUs (or why not).
struct WorkerReady {
  bool ok = false;
  std::string error;
  std::string versions;  // "NCCL 2.28.9, CUDA runtime 13.0, driver 13.0"
  int nccl_version = 0;
  std::vector<std::string> pci;  // per slot
  std::string node_id, world_id;  // hex ncclUniqueId, when asked to make one
};

struct WorkerGo {
  std::string node_id, world_id;  // world_id empty: the job is one node
};

struct WorkerResult {
  bool ok = false;
  bool timed_out = false;  // hung: the others may be waiting on it, or it on them
  std::string error;
  double node_s = -1, world_s = -1;  // seconds per all-reduce; -1: not run
};

// A shim's GPU report to rank 0.
struct GpuHello {
  int node = 0;  // NODE_RANK
  int gpus = 0;
  WorkerReady ready;
};

std::string EncodeSetup(const WorkerSetup& s);
Result<WorkerSetup> DecodeSetup(const std::string& frame);
std::string EncodeReady(const WorkerReady& r);
Result<WorkerReady> DecodeReady(const std::string& frame);
std::string EncodeGo(const WorkerGo& g);
Result<WorkerGo> DecodeGo(const std::string& frame);
std::string EncodeResult(const WorkerResult& r);
Result<WorkerResult> DecodeResult(const std::string& frame);
std::string EncodeGpuHello(const GpuHello& h);
Result<GpuHello> DecodeGpuHello(const std::string& frame);
// "phase\nname=node-init": what the worker is about to do.
std::string EncodePhase(const std::string& name);
// The phase of a phase frame; "" when `frame` is not one.
std::string PhaseOf(const std::string& frame);

}  // namespace aml
