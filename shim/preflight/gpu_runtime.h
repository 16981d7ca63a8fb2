// The CUDA runtime and NCCL, loaded at run time with dlopen (as NCCL's own
// ibvwrap loads libibverbs) so that aml-shim builds and runs on nodes without
// them. Only the few entry points the NCCL preflight uses, with the ABI of
// cuda_runtime_api.h and nccl.h (checked against those headers in
// gpu_runtime_test.cc when they are installed).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "shim/base/dynlib.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

constexpr int kNcclUniqueIdBytes = 128;
struct NcclUniqueId {
  char internal[kNcclUniqueIdBytes];
};

// Values from the headers.
constexpr int kCudaSuccess = 0;
constexpr int kCudaMemcpyHostToDevice = 1;
constexpr int kCudaMemcpyDeviceToHost = 2;
constexpr int kCudaStreamNonBlocking = 1;
constexpr int kNcclSuccess = 0;
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;

struct CudaApi {
  int (*DriverGetVersion)(int*);
  int (*RuntimeGetVersion)(int*);
  int (*GetDeviceCount)(int*);
  int (*SetDevice)(int);
  int (*DeviceGetPCIBusId)(char*, int, int);
  int (*Malloc)(void**, size_t);
  int (*Free)(void*);
  int (*Memcpy)(void*, const void*, size_t, int);
  int (*StreamCreateWithFlags)(void**, unsigned);
  int (*StreamSynchronize)(void*);
  int (*StreamDestroy)(void*);
  const char* (*GetErrorString)(int);
};

struct NcclApi {
  int (*GetVersion)(int*);
  int (*GetUniqueId)(NcclUniqueId*);
  int (*CommInitRank)(void**, int, NcclUniqueId, int);
  int (*CommDestroy)(void*);
  int (*AllReduce)(const void*, void*, size_t, int, int, void*, void*);
  int (*GroupStart)();
  int (*GroupEnd)();
  const char* (*GetErrorString)(int);
};

// What was found on this host. Each part says what it found or why not.
struct GpuRuntime {
  bool cuda_loaded = false, nccl_loaded = false;
  CudaApi cuda{};
  NcclApi nccl{};
  std::string cuda_library, nccl_library;  // the names that loaded
  int runtime_version = 0, driver_version = 0, nccl_version = 0;
  int device_count = 0;
  std::string cuda_problem, gpu_problem, nccl_problem;  // empty when fine

  bool usable() const {
    return cuda_problem.empty() && gpu_problem.empty() && nccl_problem.empty();
  }
  // "NCCL 2.28.9, CUDA runtime 13.0, driver 13.0"
  std::string Versions() const;
  // Every problem, for the error: "no NVIDIA driver (...); NCCL not found (...)"
  std::string Problems() const;
};

// The libraries (shim/base/dynlib.h's rule): AML_SHIM_LIBCUDART /
// AML_SHIM_LIBNCCL when set, else the sonames, then /usr/local/cuda/lib64.
LibrarySpec CudaRuntimeSpec();
LibrarySpec NcclSpec();

// Loads both libraries and counts the GPUs; never fails, see the problems.
GpuRuntime LoadGpuRuntime(const EnvSnapshot& env);

// "13.0" from 13000; "2.28.9" from 22809 (NCCL >= 2.9 encoding).
std::string FormatCudaVersion(int v);
std::string FormatNcclVersion(int v);

// "cudaMalloc: out of memory (cudaError 2)"
std::string CudaError(const GpuRuntime& rt, const char* call, int code);
std::string NcclError(const GpuRuntime& rt, const char* call, int code);

}  // namespace aml
