#include "shim/preflight/gpu_runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <type_traits>

// The ABI we call through dlopen, checked against the real headers when the
// CUDA toolkit and NCCL are installed (CMake passes their include directory).
#if defined(AML_CUDA_INCLUDE) && __has_include(<nccl.h>) && __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#include <nccl.h>
#define AML_CHECKED_AGAINST_HEADERS 1
namespace aml {
static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId), "ncclUniqueId size");
static_assert(NCCL_UNIQUE_ID_BYTES == kNcclUniqueIdBytes, "NCCL_UNIQUE_ID_BYTES");
static_assert(sizeof(ncclResult_t) == sizeof(int) && sizeof(cudaError_t) == sizeof(int),
              "result codes are ints");
static_assert(ncclSuccess == kNcclSuccess && ncclFloat32 == kNcclFloat32 && ncclSum == kNcclSum,
              "NCCL enums");
static_assert(cudaSuccess == kCudaSuccess && cudaMemcpyHostToDevice == kCudaMemcpyHostToDevice &&
                  cudaMemcpyDeviceToHost == kCudaMemcpyDeviceToHost &&
                  cudaStreamNonBlocking == kCudaStreamNonBlocking,
              "CUDA enums");
// Our function pointers take the same arguments, handles as void*.
static_assert(std::is_same_v<decltype(&ncclCommInitRank),
                             ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>);
static_assert(std::is_same_v<decltype(&ncclAllReduce),
                             ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t,
                                              ncclRedOp_t, ncclComm_t, cudaStream_t)>);
static_assert(std::is_same_v<decltype(&cudaDeviceGetPCIBusId), cudaError_t (*)(char*, int, int)>);
}  // namespace aml
#endif

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> vars) { return EnvSnapshot(std::move(vars)); }

TEST(GpuRuntimeAbi, CheckedAgainstTheHeadersWhenInstalled) {
#ifdef AML_CHECKED_AGAINST_HEADERS
  SUCCEED() << "checked at compile time against cuda_runtime_api.h and nccl.h";
#else
  GTEST_SKIP() << "CUDA/NCCL headers not installed";
#endif
}

TEST(GpuRuntime, VersionsAreFormattedAsTheirProjectsDo) {
  EXPECT_EQ(FormatCudaVersion(13000), "13.0");
  EXPECT_EQ(FormatCudaVersion(12040), "12.4");
  EXPECT_EQ(FormatNcclVersion(22809), "2.28.9");
  EXPECT_EQ(FormatNcclVersion(21803), "2.18.3");
  EXPECT_EQ(FormatNcclVersion(2708), "2.7.8");  // old encoding, up to 2.8
}

TEST(GpuRuntime, AnExplicitLibraryIsTheOnlyOneTried) {
  EnvSnapshot env = Env({{"AML_SHIM_LIBNCCL", "/opt/nccl/lib/libnccl.so.2"}});
  EXPECT_EQ(LibraryCandidates(NcclSpec(), env),
            std::vector<std::string>{"/opt/nccl/lib/libnccl.so.2"});
  EXPECT_EQ(LibraryCandidates(CudaRuntimeSpec(), EnvSnapshot()).front(), "libcudart.so");
}

TEST(GpuRuntime, MissingLibrariesAreEachNamedWithTheVariableThatFixesThem) {
  GpuRuntime rt = LoadGpuRuntime(Env({{"AML_SHIM_LIBCUDART", "/nonexistent/libcudart.so"},
                                              {"AML_SHIM_LIBNCCL", "/nonexistent/libnccl.so.2"}}));
  EXPECT_FALSE(rt.usable());
  const std::string p = rt.Problems();
  EXPECT_NE(p.find("AML_SHIM_LIBCUDART='/nonexistent/libcudart.so' cannot be loaded: "
                   "/nonexistent/libcudart.so: cannot open"),
            std::string::npos) << p;
  EXPECT_NE(p.find("AML_SHIM_LIBNCCL='/nonexistent/libnccl.so.2' cannot be loaded"),
            std::string::npos) << p;
}

TEST(GpuRuntime, ALibraryThatIsNotCudaSaysWhatItLacks) {
  GpuRuntime rt = LoadGpuRuntime(Env({{"AML_SHIM_LIBCUDART", "libm.so.6"},
                                              {"AML_SHIM_LIBNCCL", AML_FAKE_NCCL}}));
  EXPECT_NE(rt.cuda_problem.find("libm.so.6 is not a CUDA runtime: it lacks cudaDriverGetVersion"),
            std::string::npos) << rt.cuda_problem;
  EXPECT_TRUE(rt.nccl_problem.empty()) << rt.nccl_problem;
  EXPECT_EQ(rt.nccl_version, 22809);
}

// The fakes read FAKE_* from the process environment (they stand in for
// libraries that read the driver, not aml-shim's snapshot).
class FakeEnv {
 public:
  FakeEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~FakeEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

EnvSnapshot Fakes() {
  return Env({{"AML_SHIM_LIBCUDART", AML_FAKE_CUDART}, {"AML_SHIM_LIBNCCL", AML_FAKE_NCCL}});
}

TEST(GpuRuntime, NoDriverAndNoDeviceAreTold) {
  {
    FakeEnv driver("FAKE_CUDA_DRIVER", "0");
    GpuRuntime rt = LoadGpuRuntime(Fakes());
    EXPECT_NE(rt.gpu_problem.find("no NVIDIA driver on this host"), std::string::npos);
    EXPECT_NE(rt.gpu_problem.find("libcuda.so.1 is missing"), std::string::npos);
  }
  FakeEnv none("FAKE_CUDA_DEVICES", "0");
  GpuRuntime rt = LoadGpuRuntime(Fakes());
  EXPECT_EQ(rt.Problems(),
            "no usable GPU: cudaGetDeviceCount: no CUDA-capable device is detected (cudaError 100)");
}

TEST(GpuRuntime, LoadsAndCountsDevices) {
  FakeEnv four("FAKE_CUDA_DEVICES", "4");
  GpuRuntime rt = LoadGpuRuntime(Fakes());
  EXPECT_TRUE(rt.usable()) << rt.Problems();
  EXPECT_EQ(rt.device_count, 4);
  EXPECT_EQ(rt.Versions(), "NCCL 2.28.9, CUDA runtime 13.0, driver 13.0");
  EXPECT_EQ(CudaError(rt, "cudaMalloc", 2), "cudaMalloc: out of memory (cudaError 2)");
}

}  // namespace
}  // namespace aml
