#include "shim/preflight/node_nccl_check.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

// The node's NCCL check before another attempt, against the real worker
// (the built aml-shim) over the stand-in libraries of tests/fakes.
namespace aml {
namespace {

WorkerSetup TwoGpus() {
  WorkerSetup s;
  s.bytes = 1 << 20;
  s.iters = 2;
  for (int i = 0; i < 2; ++i) {
    WorkerSlot slot;
    slot.device = slot.node_rank = i;
    slot.node_size = 2;
    s.slots.push_back(slot);
  }
  return s;
}

EnvSnapshot FakeGpus(const std::string& slow_file) {
  return EnvSnapshot({{"AML_SHIM_LIBCUDART", AML_FAKE_CUDART},
                      {"AML_SHIM_LIBNCCL", AML_FAKE_NCCL},
                      {"FAKE_CUDA_DEVICES", "2"},
                      {"FAKE_NCCL_SLOW_FILE", slow_file},
                      {"FAKE_NCCL_SLOW_MS", "300"}});
}

// Polls as the job's machine does (every 0.1 s) until it answers.
std::string Answer(NodeNcclCheck* check) {
  for (int i = 0; i < 300; ++i) {
    if (auto found = check->Poll()) return *found;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "no answer within 30 s";
}

TEST(NodeNcclCheck, ANodeOverTheFloorIsFitAndOneUnderItSaysBy) {
  NodeNcclCheck fast(1, "gpu001", TwoGpus(), FakeGpus("/nonexistent"), 0.01, 20,
                     AML_SHIM_BINARY);
  EXPECT_EQ(Answer(&fast), "");
  // A node that became slow (each all-reduce 0.3 s: 1 MiB at 0.003 GB/s).
  NodeNcclCheck slow(1, "gpu001", TwoGpus(), FakeGpus("/"), 0.01, 20, AML_SHIM_BINARY);
  const std::string found = Answer(&slow);
  EXPECT_EQ(found.rfind("NCCL node 1 (gpu001): 2 GPUs, all-reduce of 1 MiB in ", 0), 0u)
      << found;
  EXPECT_NE(found.find("-- under --min-busbw 0.01 GB/s"), std::string::npos) << found;
  // Each answer once: the next poll starts the next round's check.
  EXPECT_FALSE(fast.Poll().has_value());
  EXPECT_EQ(Answer(&fast), "");
}

TEST(NodeNcclCheck, NoGpuIsAnAnswerToo) {
  NodeNcclCheck none(0, "gpu001", TwoGpus(),
                     EnvSnapshot({{"AML_SHIM_LIBCUDART", AML_FAKE_CUDART},
                                  {"AML_SHIM_LIBNCCL", AML_FAKE_NCCL}}),
                     0.01, 20, AML_SHIM_BINARY);
  EXPECT_EQ(Answer(&none).rfind("its NCCL check could not start: no usable GPU", 0), 0u);
}

}  // namespace
}  // namespace aml

namespace aml {
namespace {

// scripts/gpu-check.sh on a GPU machine (AML_TEST_REAL_GPU=1): the check
// with the real CUDA runtime and NCCL on the first GPU (one GPU moves
// nothing between GPUs: the floor is not judged, and the node is fit).
TEST(NodeNcclCheck, OnARealGpu) {
  if (!std::getenv("AML_TEST_REAL_GPU")) GTEST_SKIP() << "AML_TEST_REAL_GPU not set";
  WorkerSetup one = TwoGpus();
  one.slots.resize(1);
  one.slots[0].node_size = 1;
  one.bytes = 64 << 20;
  NodeNcclCheck check(0, "this node", one, EnvSnapshot::FromEnvp(environ), 1, 20,
                      AML_SHIM_BINARY);
  EXPECT_EQ(Answer(&check), "");
}

}  // namespace
}  // namespace aml
