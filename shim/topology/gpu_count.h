// How many NVIDIA GPUs this process may use, without CUDA at build time:
// CUDA_VISIBLE_DEVICES when set, else the driver's /proc/driver/nvidia/gpus.
#pragma once

#include <string>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

struct GpuCount {
  int count = 0;
  std::string why;  // "CUDA_VISIBLE_DEVICES=0,1" or "2 entries in /proc/driver/nvidia/gpus"
};

// `proc_root` is "/proc" except in tests.
GpuCount CountVisibleGpus(const EnvSnapshot& env,
                          const std::string& proc_root = "/proc");

// Number of devices CUDA would see for a CUDA_VISIBLE_DEVICES value: entries
// up to the first invalid one ("-1", empty, garbage), as CUDA does.
int CountCudaVisibleDevices(const std::string& value);

}  // namespace aml
