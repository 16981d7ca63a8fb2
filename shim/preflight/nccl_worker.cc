#include "shim/preflight/nccl_worker.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "shim/base/exit_code.h"
#include "shim/preflight/gpu_runtime.h"
#include "shim/base/hex.h"
#include "shim/preflight/nccl_wire.h"
#include "shim/net/tcp.h"

namespace aml {
namespace {

// The all-reduce's data repeats every kPatternPeriod elements: small values
// whose sums over any number of ranks are exact in float32.
constexpr int kPatternPeriod = 8;

struct Gpu {
  WorkerSlot slot;
  std::string pci;
  void* send = nullptr;
  void* recv = nullptr;
  void* stream = nullptr;
};

class Worker {
 public:
  Worker(int fd, const EnvSnapshot& env) : fd_(fd), env_(env) {}

  int Main() {
    auto frame = RecvFrame(fd_, 1 << 20, Far());
    if (!frame.ok()) return 1;
    auto setup = DecodeSetup(*frame);
    WorkerReady ready;
    if (!setup.ok()) {
      ready.error = "bad setup from the shim: " + setup.error().message;
      Send(EncodeReady(ready));
      return 1;
    }
    setup_ = *setup;
    std::string error = Prepare(&ready);
    ready.ok = error.empty();
    ready.error = error;
    Send(EncodeReady(ready));
    if (!ready.ok) return 1;
    auto go_frame = RecvFrame(fd_, 1 << 20, Far());
    if (!go_frame.ok()) return 1;  // the shim gave up: nothing to say
    auto go = DecodeGo(*go_frame);
    WorkerResult result;
    if (!go.ok()) {
      result.error = "bad go from the shim: " + go.error().message;
    } else {
      result.error = Measure(*go, &result);
      result.ok = result.error.empty();
    }
    Send(EncodeResult(result));
    // Stay up (NCCL's proxy threads may still be sending our last chunks to
    // a peer) until the shim has everyone's results and closes the socket.
    AwaitPeerClose(fd_, Far());
    return result.ok ? 0 : 1;
  }

 private:
  static Deadline Far() { return Clock::now() + std::chrono::hours(24); }
  void Send(const std::string& frame) { (void)SendFrame(fd_, frame, Clock::now() + std::chrono::seconds(10)); }
  void Phase(const std::string& name) { Send(EncodePhase(name)); }

  std::string Where(const Gpu& g) const {
    return "GPU " + std::to_string(g.slot.device) + " (" + g.pci + ")";
  }

  // Loads the libraries, checks the devices, makes the ids.
  std::string Prepare(WorkerReady* ready) {
    rt_ = LoadGpuRuntime(env_);
    ready->versions = rt_.Versions();
    ready->nccl_version = rt_.nccl_version;
    if (!rt_.usable()) return rt_.Problems();
    const CudaApi& c = rt_.cuda;
    for (const WorkerSlot& s : setup_.slots) {
      if (s.device >= rt_.device_count) {
        const std::string* cvd = env_.Find("CUDA_VISIBLE_DEVICES");
        return "LOCAL_RANK " + std::to_string(s.node_rank) + " takes GPU " +
               std::to_string(s.device) + ", but CUDA sees " + std::to_string(rt_.device_count) +
               (rt_.device_count == 1 ? " GPU" : " GPUs") +
               (cvd ? " (CUDA_VISIBLE_DEVICES=" + *cvd + ")" : std::string()) +
               ": more processes per node than GPUs";
      }
      Gpu g;
      g.slot = s;
      char pci[64] = {};
      int rc = c.DeviceGetPCIBusId(pci, sizeof pci - 1, s.device);
      g.pci = rc == kCudaSuccess ? pci : "PCI address unknown";
      ready->pci.push_back(g.pci);
      gpus_.push_back(g);
    }
    for (auto [want, out] : {std::pair{setup_.make_node_id, &ready->node_id},
                             std::pair{setup_.make_world_id, &ready->world_id}}) {
      if (!want) continue;
      NcclUniqueId id{};
      int rc = rt_.nccl.GetUniqueId(&id);
      if (rc != kNcclSuccess) return NcclError(rt_, "ncclGetUniqueId", rc);
      *out = Hex(&id, sizeof id);
    }
    return "";
  }

  std::string Allocate() {
    const CudaApi& c = rt_.cuda;
    for (Gpu& g : gpus_) {
      int rc = c.SetDevice(g.slot.device);
      if (rc != kCudaSuccess) return Where(g) + ": " + CudaError(rt_, "cudaSetDevice", rc);
      for (void** p : {&g.send, &g.recv}) {
        rc = c.Malloc(p, setup_.bytes);
        if (rc != kCudaSuccess)
          return Where(g) + ": " + CudaError(rt_, "cudaMalloc", rc) + " for " +
                 std::to_string(setup_.bytes) + " bytes (--preflight-bytes; two buffers)";
      }
      rc = c.StreamCreateWithFlags(&g.stream, kCudaStreamNonBlocking);
      if (rc != kCudaSuccess) return Where(g) + ": " + CudaError(rt_, "cudaStreamCreate", rc);
    }
    // pattern_[i] = i % P + 1 (P = kPatternPeriod); rank r sends pattern_ +
    // r % P, so element j holds (r + j) % P + 1: every rank's data differs,
    // and the sums stay exact in float32.
    // Host memory stays one chunk, whatever --preflight-bytes is: the
    // pattern repeats every 8 elements and chunks are multiples of 8.
    const size_t chunk = std::min<uint64_t>(setup_.bytes, kChunkBytes) / sizeof(float);
    pattern_.resize(chunk + 8);
    for (size_t i = 0; i < pattern_.size(); ++i) pattern_[i] = static_cast<float>(i % kPatternPeriod + 1);
    readback_.resize(chunk);
    return "";
  }

  // Fills `dev` (setup_.bytes) with the pattern that starts at `shift`.
  int Fill(void* dev, int shift) {
    for (uint64_t off = 0; off < setup_.bytes; off += kChunkBytes) {
      const uint64_t n = std::min<uint64_t>(kChunkBytes, setup_.bytes - off);
      int rc = rt_.cuda.Memcpy(static_cast<char*>(dev) + off, pattern_.data() + shift, n,
                               kCudaMemcpyHostToDevice);
      if (rc != kCudaSuccess) return rc;
    }
    return kCudaSuccess;
  }

  std::string Sync() {
    for (const Gpu& g : gpus_) {
      rt_.cuda.SetDevice(g.slot.device);
      int rc = rt_.cuda.StreamSynchronize(g.stream);
      if (rc != kCudaSuccess) return Where(g) + ": " + CudaError(rt_, "cudaStreamSynchronize", rc);
    }
    return "";
  }

  std::string AllReduceOnce(const std::vector<void*>& comms) {
    const NcclApi& n = rt_.nccl;
    n.GroupStart();
    for (size_t i = 0; i < gpus_.size(); ++i) {
      int rc = n.AllReduce(gpus_[i].send, gpus_[i].recv, setup_.bytes / sizeof(float),
                           kNcclFloat32, kNcclSum, comms[i], gpus_[i].stream);
      if (rc != kNcclSuccess) {
        n.GroupEnd();
        return Where(gpus_[i]) + ": " + NcclError(rt_, "ncclAllReduce", rc);
      }
    }
    int rc = n.GroupEnd();
    if (rc != kNcclSuccess) return NcclError(rt_, "ncclGroupEnd (all-reduce)", rc);
    return Sync();
  }

  // Every GPU's result against the exact sums for `size` ranks.
  std::string Check(const std::string& what, int size, bool node) {
    float expected[kPatternPeriod];
    for (int k = 0; k < kPatternPeriod; ++k) {
      double sum = 0;
      for (int r = 0; r < size; ++r) sum += (r + k) % kPatternPeriod + 1;
      expected[k] = static_cast<float>(sum);
    }
    for (const Gpu& g : gpus_) {
      rt_.cuda.SetDevice(g.slot.device);
      for (uint64_t off = 0; off < setup_.bytes; off += kChunkBytes) {
        const uint64_t n = std::min<uint64_t>(kChunkBytes, setup_.bytes - off);
        int rc = rt_.cuda.Memcpy(readback_.data(), static_cast<const char*>(g.recv) + off, n,
                                 kCudaMemcpyDeviceToHost);
        if (rc != kCudaSuccess) return Where(g) + ": " + CudaError(rt_, "cudaMemcpy", rc);
        for (size_t i = 0; i < n / sizeof(float); ++i) {
          if (readback_[i] == expected[i % kPatternPeriod]) continue;
          const int rank = node ? g.slot.node_rank : g.slot.world_rank;
          return what + " gave a wrong result on " + Where(g) + " (rank " +
                 std::to_string(rank) + " of " + std::to_string(size) + "): element " +
                 std::to_string(off / sizeof(float) + i) + " is " +
                 std::to_string(readback_[i]) + ", expected " + std::to_string(expected[i % kPatternPeriod]);
        }
      }
    }
    return "";
  }

  // One communicator: init, a checked all-reduce, warm-up, timed iterations,
  // a second check. Returns seconds per all-reduce through `seconds`.
  std::string RunComm(const std::string& kind, const std::string& id_hex, bool node,
                      double* seconds) {
    const CudaApi& c = rt_.cuda;
    const NcclApi& n = rt_.nccl;
    std::vector<unsigned char> raw = Unhex(id_hex);
    if (raw.size() != sizeof(NcclUniqueId)) return kind + ": malformed NCCL unique id";
    NcclUniqueId id;
    std::memcpy(&id, raw.data(), sizeof id);
    const int size = node ? gpus_[0].slot.node_size : gpus_[0].slot.world_size;
    Phase(kind + " init");
    std::vector<void*> comms(gpus_.size(), nullptr);
    n.GroupStart();
    for (size_t i = 0; i < gpus_.size(); ++i) {
      c.SetDevice(gpus_[i].slot.device);
      const int rank = node ? gpus_[i].slot.node_rank : gpus_[i].slot.world_rank;
      int rc = n.CommInitRank(&comms[i], size, id, rank);
      if (rc != kNcclSuccess) {
        n.GroupEnd();
        return kind + ": " + Where(gpus_[i]) + ": " + NcclError(rt_, "ncclCommInitRank", rc);
      }
    }
    int rc = n.GroupEnd();
    if (rc != kNcclSuccess) return kind + ": " + NcclError(rt_, "ncclCommInitRank", rc);
    Phase(kind + " all-reduce");
    for (const Gpu& g : gpus_) {
      const int rank = node ? g.slot.node_rank : g.slot.world_rank;
      c.SetDevice(g.slot.device);
      int r1 = Fill(g.send, rank % kPatternPeriod);
      // The receive buffer starts as other data, so an all-reduce that
      // writes nothing fails the check even for one rank.
      int r2 = Fill(g.recv, (rank + kPatternPeriod / 2) % kPatternPeriod);
      if (r1 != kCudaSuccess || r2 != kCudaSuccess)
        return Where(g) + ": " + CudaError(rt_, "cudaMemcpy", r1 != kCudaSuccess ? r1 : r2);
    }
    const std::string what = "the " + kind + " all-reduce";
    std::string e = AllReduceOnce(comms);
    if (e.empty()) e = Check(what, size, node);
    for (int i = 0; e.empty() && i < kWarmup; ++i) e = AllReduceOnce(comms);
    if (!e.empty()) return kind + ": " + e;
    const auto t0 = Clock::now();
    for (int i = 0; e.empty() && i < setup_.iters; ++i) e = AllReduceOnce(comms);
    const auto t1 = Clock::now();
    if (e.empty()) e = Check(what + " (after the timed iterations)", size, node);
    if (!e.empty()) return kind + ": " + e;
    *seconds = std::chrono::duration<double>(t1 - t0).count() / setup_.iters;
    // The communicators are left to the process's end: ncclCommDestroy may
    // wait for peers, and the shim ends the worker once all ranks are done.
    return "";
  }

  std::string Measure(const WorkerGo& go, WorkerResult* result) {
    Phase("allocate");
    std::string e = Allocate();
    if (e.empty()) e = RunComm("node", go.node_id, true, &result->node_s);
    if (e.empty() && !go.world_id.empty())
      e = RunComm("world", go.world_id, false, &result->world_s);
    for (const Gpu& g : gpus_) {
      rt_.cuda.SetDevice(g.slot.device);
      if (g.stream) rt_.cuda.StreamDestroy(g.stream);
      if (g.send) rt_.cuda.Free(g.send);
      if (g.recv) rt_.cuda.Free(g.recv);
    }
    return e;
  }

  static constexpr int kWarmup = 2;
  static constexpr uint64_t kChunkBytes = uint64_t{64} << 20;  // a multiple of 8 floats
  int fd_;
  const EnvSnapshot& env_;
  WorkerSetup setup_;
  GpuRuntime rt_;
  std::vector<Gpu> gpus_;
  std::vector<float> pattern_, readback_;
};

}  // namespace

int NcclWorkerMain(int fd, pid_t shim, const EnvSnapshot& env) {
  // Killed with its shim, however the shim ends (SIGKILL from mpirun
  // included). The shim may have died before this line: then the parent is
  // already someone else.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != shim) return kExitShimFailure;
  return Worker(fd, env).Main();
}

}  // namespace aml
