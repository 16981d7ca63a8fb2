#include "shim/preflight/gpu_runtime.h"

#include <dlfcn.h>

#include <vector>

namespace aml {
namespace {

// Loads the first of `names` that dlopen accepts; `tried` collects why the
// others were refused.
void* OpenFirst(const std::vector<std::string>& names, std::string* loaded, std::string* tried) {
  for (const std::string& name : names) {
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      *loaded = name;
      return lib;
    }
    const char* err = dlerror();
    *tried += (tried->empty() ? "" : "; ") + std::string(err ? err : name.c_str());
  }
  return nullptr;
}

template <class F>
bool Bind(void* lib, const char* symbol, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!*fn) *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
  return *fn != nullptr;
}

void LoadCuda(const EnvSnapshot& env, GpuRuntime* rt) {
  std::string tried;
  void* lib = OpenFirst(CudaRuntimeCandidates(env), &rt->cuda_library, &tried);
  if (!lib) {
    rt->cuda_problem = "the CUDA runtime was not found (" + tried +
                       "); set AML_SHIM_LIBCUDART to the path of libcudart.so";
    return;
  }
  CudaApi& c = rt->cuda;
  std::string missing;
  Bind(lib, "cudaDriverGetVersion", &c.DriverGetVersion, &missing);
  Bind(lib, "cudaRuntimeGetVersion", &c.RuntimeGetVersion, &missing);
  Bind(lib, "cudaGetDeviceCount", &c.GetDeviceCount, &missing);
  Bind(lib, "cudaSetDevice", &c.SetDevice, &missing);
  Bind(lib, "cudaDeviceGetPCIBusId", &c.DeviceGetPCIBusId, &missing);
  Bind(lib, "cudaMalloc", &c.Malloc, &missing);
  Bind(lib, "cudaFree", &c.Free, &missing);
  Bind(lib, "cudaMemcpy", &c.Memcpy, &missing);
  Bind(lib, "cudaStreamCreateWithFlags", &c.StreamCreateWithFlags, &missing);
  Bind(lib, "cudaStreamSynchronize", &c.StreamSynchronize, &missing);
  Bind(lib, "cudaStreamDestroy", &c.StreamDestroy, &missing);
  Bind(lib, "cudaGetErrorString", &c.GetErrorString, &missing);
  if (!missing.empty()) {
    rt->cuda_problem = rt->cuda_library + " is not a CUDA runtime: it lacks " + missing;
    return;
  }
  rt->cuda_loaded = true;
  c.RuntimeGetVersion(&rt->runtime_version);
  c.DriverGetVersion(&rt->driver_version);
  if (rt->driver_version == 0) {
    rt->gpu_problem = "no NVIDIA driver on this host (" + rt->cuda_library +
                      " loaded, but cudaDriverGetVersion says 0: libcuda.so.1 is missing)";
    return;
  }
  int n = 0;
  int rc = c.GetDeviceCount(&n);
  if (rc != kCudaSuccess) {
    rt->gpu_problem = "no usable GPU: " + CudaError(*rt, "cudaGetDeviceCount", rc);
    return;
  }
  rt->device_count = n;
  if (n == 0) rt->gpu_problem = "no GPU: cudaGetDeviceCount says 0";
}

void LoadNccl(const EnvSnapshot& env, GpuRuntime* rt) {
  std::string tried;
  void* lib = OpenFirst(NcclCandidates(env), &rt->nccl_library, &tried);
  if (!lib) {
    rt->nccl_problem = "NCCL was not found (" + tried +
                       "); set AML_SHIM_LIBNCCL to the path of libnccl.so.2 (pip wheels keep "
                       "it in site-packages/nvidia/nccl/lib)";
    return;
  }
  NcclApi& n = rt->nccl;
  std::string missing;
  Bind(lib, "ncclGetVersion", &n.GetVersion, &missing);
  Bind(lib, "ncclGetUniqueId", &n.GetUniqueId, &missing);
  Bind(lib, "ncclCommInitRank", &n.CommInitRank, &missing);
  Bind(lib, "ncclCommDestroy", &n.CommDestroy, &missing);
  Bind(lib, "ncclAllReduce", &n.AllReduce, &missing);
  Bind(lib, "ncclGroupStart", &n.GroupStart, &missing);
  Bind(lib, "ncclGroupEnd", &n.GroupEnd, &missing);
  Bind(lib, "ncclGetErrorString", &n.GetErrorString, &missing);
  if (!missing.empty()) {
    rt->nccl_problem = rt->nccl_library + " is not NCCL: it lacks " + missing;
    return;
  }
  rt->nccl_loaded = true;
  n.GetVersion(&rt->nccl_version);
}

}  // namespace

std::vector<std::string> CudaRuntimeCandidates(const EnvSnapshot& env) {
  if (env.HasNonEmpty("AML_SHIM_LIBCUDART")) return {*env.Find("AML_SHIM_LIBCUDART")};
  return {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
          "/usr/local/cuda/lib64/libcudart.so"};
}

std::vector<std::string> NcclCandidates(const EnvSnapshot& env) {
  if (env.HasNonEmpty("AML_SHIM_LIBNCCL")) return {*env.Find("AML_SHIM_LIBNCCL")};
  return {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"};
}

GpuRuntime LoadGpuRuntime(const EnvSnapshot& env) {
  GpuRuntime rt;
  LoadCuda(env, &rt);
  LoadNccl(env, &rt);
  return rt;
}

std::string FormatCudaVersion(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string FormatNcclVersion(int v) {
  // NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z after.
  int major = v >= 10000 ? v / 10000 : v / 1000;
  int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

std::string GpuRuntime::Versions() const {
  std::string s;
  if (nccl_loaded) s += "NCCL " + FormatNcclVersion(nccl_version);
  if (cuda_loaded) {
    s += (s.empty() ? "" : ", ") + std::string("CUDA runtime ") +
         FormatCudaVersion(runtime_version);
    if (driver_version) s += ", driver " + FormatCudaVersion(driver_version);
  }
  return s;
}

std::string GpuRuntime::Problems() const {
  std::string s;
  for (const std::string* p : {&cuda_problem, &gpu_problem, &nccl_problem})
    if (!p->empty()) s += (s.empty() ? "" : "; ") + *p;
  return s;
}

std::string CudaError(const GpuRuntime& rt, const char* call, int code) {
  const char* what = rt.cuda.GetErrorString ? rt.cuda.GetErrorString(code) : nullptr;
  return std::string(call) + ": " + (what ? what : "error") + " (cudaError " +
         std::to_string(code) + ")";
}

std::string NcclError(const GpuRuntime& rt, const char* call, int code) {
  const char* what = rt.nccl.GetErrorString ? rt.nccl.GetErrorString(code) : nullptr;
  return std::string(call) + ": " + (what ? what : "error") + " (ncclResult " +
         std::to_string(code) + ")";
}

}  // namespace aml
