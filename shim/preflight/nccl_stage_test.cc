#include "shim/preflight/nccl_stage.h"

#include <gtest/gtest.h>

#include <map>

// The stage against the real worker (the built aml-shim) over the stand-in
// libraries of tests/fakes.
namespace aml {
namespace {

EnvSnapshot WorkerEnv(std::map<std::string, std::string> extra) {
  extra["AML_SHIM_LIBCUDART"] = AML_FAKE_CUDART;
  extra["AML_SHIM_LIBNCCL"] = AML_FAKE_NCCL;
  return EnvSnapshot(std::move(extra));
}

WorkerSetup OneGpu() {
  WorkerSetup s;
  s.bytes = 4096;
  s.iters = 2;
  s.make_node_id = true;
  s.slots = {WorkerSlot{}};
  return s;
}

// One GPU whose ncclCommInitRank never returns.
EnvSnapshot HangingInit() {
  return WorkerEnv({{"FAKE_CUDA_DEVICES", "1"}, {"FAKE_NCCL_HANG_RANK", "0"}, {"RANK", "0"}});
}

Deadline In(int seconds) { return Clock::now() + std::chrono::seconds(seconds); }

TEST(NcclStage, AWorldOfOneGetsReadyAndMeasures) {
  NcclStage stage(0, OneGpu(), WorkerEnv({{"FAKE_CUDA_DEVICES", "1"}}), AML_SHIM_BINARY);
  GpuHello h = stage.Ready(In(20));
  ASSERT_TRUE(h.ready.ok) << h.ready.error;
  EXPECT_EQ(h.gpus, 1);
  EXPECT_EQ(h.ready.pci, std::vector<std::string>{"0000:18:00.0"});
  EXPECT_EQ(h.ready.versions, "NCCL 2.28.9, CUDA runtime 13.0, driver 13.0");
  EXPECT_EQ(h.ready.node_id.size(), 256u);  // a 128-byte id in hex
  EXPECT_TRUE(h.ready.world_id.empty());
  bool interrupted = true;
  WorkerResult r = stage.Run({h.ready.node_id, ""}, In(20), -1, &interrupted);
  EXPECT_FALSE(interrupted);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.node_s, 0);
  EXPECT_EQ(r.world_s, -1);
}

TEST(NcclStage, NoGpuIsReportedAtReady) {
  NcclStage stage(0, OneGpu(), WorkerEnv({}), AML_SHIM_BINARY);
  GpuHello h = stage.Ready(In(20));
  EXPECT_FALSE(h.ready.ok);
  EXPECT_EQ(h.ready.error,
            "no usable GPU: cudaGetDeviceCount: no CUDA-capable device is detected (cudaError 100)");
}

TEST(NcclStage, AHungInitTimesOutNamingThePhase) {
  NcclStage stage(0, OneGpu(), HangingInit(), AML_SHIM_BINARY);
  GpuHello h = stage.Ready(In(20));
  ASSERT_TRUE(h.ready.ok) << h.ready.error;
  bool interrupted = false;
  WorkerResult r = stage.Run({h.ready.node_id, ""}, Clock::now() + std::chrono::milliseconds(500),
                             -1, &interrupted);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.error, "the NCCL worker timed out during node init (--preflight-timeout)");
}

TEST(NcclStage, RankZerosWordInterruptsTheRun) {
  NcclStage stage(0, OneGpu(), HangingInit(), AML_SHIM_BINARY);
  GpuHello h = stage.Ready(In(20));
  ASSERT_TRUE(h.ready.ok) << h.ready.error;
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  Fd rd(p[0]), wr(p[1]);
  ASSERT_EQ(write(wr.get(), "x", 1), 1);
  bool interrupted = false;
  WorkerResult r = stage.Run({h.ready.node_id, ""}, In(60), rd.get(), &interrupted);
  EXPECT_TRUE(interrupted);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind("stopped by rank 0 during ", 0), 0u) << r.error;
}

TEST(NcclStage, AWorkerThatCannotStartIsAnErrorNotAHang) {
  NcclStage stage(0, OneGpu(), WorkerEnv({}), "/nonexistent/aml-shim");
  GpuHello h = stage.Ready(In(20));
  EXPECT_FALSE(h.ready.ok);
  EXPECT_EQ(h.ready.error.rfind("cannot start the NCCL worker: '/nonexistent/aml-shim': ", 0), 0u)
      << h.ready.error;
}

}  // namespace
}  // namespace aml
