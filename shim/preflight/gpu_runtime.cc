#include "shim/preflight/gpu_runtime.h"

#include <vector>

namespace aml {
namespace {

void LoadCuda(const EnvSnapshot& env, GpuRuntime* rt) {
  auto lib = OpenLibrary(CudaRuntimeSpec(), env);
  if (!lib.ok()) {
    rt->cuda_problem = lib.error().message;
    return;
  }
  rt->cuda_library = lib->file();
  CudaApi& c = rt->cuda;
  auto bound = lib->Bind(
      {Sym("cudaDriverGetVersion", &c.DriverGetVersion),
       Sym("cudaRuntimeGetVersion", &c.RuntimeGetVersion),
       Sym("cudaGetDeviceCount", &c.GetDeviceCount), Sym("cudaSetDevice", &c.SetDevice),
       Sym("cudaDeviceGetPCIBusId", &c.DeviceGetPCIBusId), Sym("cudaMalloc", &c.Malloc),
       Sym("cudaFree", &c.Free), Sym("cudaMemcpy", &c.Memcpy),
       Sym("cudaStreamCreateWithFlags", &c.StreamCreateWithFlags),
       Sym("cudaStreamSynchronize", &c.StreamSynchronize),
       Sym("cudaStreamDestroy", &c.StreamDestroy), Sym("cudaGetErrorString", &c.GetErrorString)});
  if (!bound.ok()) {
    rt->cuda_problem = bound.error().message;
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
  auto lib = OpenLibrary(NcclSpec(), env);
  if (!lib.ok()) {
    rt->nccl_problem = lib.error().message;
    return;
  }
  rt->nccl_library = lib->file();
  NcclApi& n = rt->nccl;
  auto bound = lib->Bind({Sym("ncclGetVersion", &n.GetVersion),
                          Sym("ncclGetUniqueId", &n.GetUniqueId),
                          Sym("ncclCommInitRank", &n.CommInitRank),
                          Sym("ncclCommDestroy", &n.CommDestroy),
                          Sym("ncclAllReduce", &n.AllReduce), Sym("ncclGroupStart", &n.GroupStart),
                          Sym("ncclGroupEnd", &n.GroupEnd),
                          Sym("ncclGetErrorString", &n.GetErrorString)});
  if (!bound.ok()) {
    rt->nccl_problem = bound.error().message;
    return;
  }
  rt->nccl_loaded = true;
  n.GetVersion(&rt->nccl_version);
}

}  // namespace

LibrarySpec CudaRuntimeSpec() {
  return LibrarySpec{"a CUDA runtime",
                     "AML_SHIM_LIBCUDART",
                     {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                      "/usr/local/cuda/lib64/libcudart.so"},
                     "e.g. /usr/local/cuda/lib64/libcudart.so",
                     false};
}

LibrarySpec NcclSpec() {
  return LibrarySpec{"NCCL",
                     "AML_SHIM_LIBNCCL",
                     {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"},
                     "e.g. libnccl.so.2 (pip wheels keep it in site-packages/nvidia/nccl/lib)",
                     false};
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
