// A stand-in for libcudart.so on machines without a GPU, for end-to-end tests
// of the NCCL preflight: "device" memory is host memory, streams do nothing.
// FAKE_CUDA_DEVICES=N gives N GPUs (default 0: cudaErrorNoDevice);
// FAKE_CUDA_DRIVER=0 plays a host without the NVIDIA driver;
// FAKE_CUDA_CRASH=1 aborts in cudaGetDeviceCount.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int Devices() {
  const char* v = std::getenv("FAKE_CUDA_DEVICES");
  return v ? std::atoi(v) : 0;
}

thread_local int current = 0;

}  // namespace

extern "C" {

int cudaDriverGetVersion(int* v) {
  const char* d = std::getenv("FAKE_CUDA_DRIVER");
  *v = d ? std::atoi(d) : 13000;
  return 0;
}
int cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return 0;
}
int cudaGetDeviceCount(int* n) {
  if (std::getenv("FAKE_CUDA_CRASH")) {  // a driver that crashes, leaving no core file
    rlimit none{0, 0};
    setrlimit(RLIMIT_CORE, &none);
    std::abort();
  }
  *n = Devices() > 0 ? Devices() : 0;
  return *n > 0 ? 0 : 100;  // cudaErrorNoDevice
}
int cudaSetDevice(int d) {
  if (d < 0 || d >= Devices()) return 101;  // cudaErrorInvalidDevice
  current = d;
  return 0;
}
int cudaDeviceGetPCIBusId(char* buf, int len, int d) {
  if (d < 0 || d >= Devices()) return 101;
  std::snprintf(buf, static_cast<size_t>(len), "0000:%02x:00.0", 0x18 + 8 * d);
  return 0;
}
int cudaMalloc(void** p, size_t n) {
  *p = std::malloc(n);
  return *p ? 0 : 2;  // cudaErrorMemoryAllocation
}
int cudaFree(void* p) {
  std::free(p);
  return 0;
}
int cudaMemcpy(void* dst, const void* src, size_t n, int) {
  std::memcpy(dst, src, n);
  return 0;
}
int cudaStreamCreateWithFlags(void** s, unsigned) {
  *s = std::malloc(1);
  return 0;
}
int cudaStreamSynchronize(void*) { return 0; }
int cudaStreamDestroy(void* s) {
  std::free(s);
  return 0;
}
const char* cudaGetErrorString(int e) {
  switch (e) {
    case 0: return "no error";
    case 2: return "out of memory";
    case 100: return "no CUDA-capable device is detected";
    case 101: return "invalid device ordinal";
    default: return "unknown error";
  }
}

}  // extern "C"
