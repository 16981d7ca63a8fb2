#include "shim/preflight/nccl_verdict.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(AllReduceBandwidth, MatchesNcclTestsArithmetic) {
  // nccl-tests: algbw = size / time; busbw = algbw * 2(n-1)/n.
  Bandwidth bw = AllReduceBandwidth(uint64_t{8} << 30, 0.050, 8);
  EXPECT_NEAR(bw.algbw_gbps, 171.798691840, 1e-6);
  EXPECT_NEAR(bw.busbw_gbps, 171.798691840 * 14 / 8, 1e-6);
  EXPECT_DOUBLE_EQ(AllReduceBandwidth(1000, 1e-6, 2).busbw_gbps, 1.0);
  EXPECT_DOUBLE_EQ(AllReduceBandwidth(1000, 1e-6, 1).busbw_gbps, 0.0);  // one rank
  EXPECT_DOUBLE_EQ(AllReduceBandwidth(1000, 0, 4).algbw_gbps, 0.0);    // no time: no figure
}

ShimOutcome Shim(int rank, const std::string& host, int node, int gpus, double node_s,
                 double world_s = -1) {
  ShimOutcome o;
  o.rank = rank;
  o.host = host;
  o.node = node;
  o.gpus = gpus;
  o.ok = true;
  o.node_s = node_s;
  o.world_s = world_s;
  return o;
}

TEST(JudgeAllReduce, OneLinePerNodeThenTheJob) {
  const uint64_t bytes = 256u << 20;
  // Per-node launch: one shim of 8 GPUs per node.
  auto v = JudgeAllReduce({Shim(0, "a", 0, 8, 0.001, 0.01), Shim(1, "b", 1, 8, 0.002, 0.011)},
                          bytes, std::nullopt);
  EXPECT_FALSE(v.failed);
  ASSERT_EQ(v.lines.size(), 3u);
  EXPECT_EQ(v.lines[0],
            "preflight nccl: node 0 (a): 8 GPUs, all-reduce of 256 MiB in 1.000 ms: busbw 469.76 "
            "GB/s, algbw 268.44 GB/s");
  EXPECT_NE(v.lines[1].find("node 1 (b): 8 GPUs, all-reduce of 256 MiB in 2.000 ms: busbw 234.88"),
            std::string::npos) << v.lines[1];
  // The job-wide figure takes the slowest rank's time, over all 16 GPUs.
  EXPECT_NE(v.lines[2].find("all 2 nodes, 16 GPUs, all-reduce of 256 MiB in 11.000 ms: busbw 45.76 GB/s, algbw 24.40 GB/s"),
            std::string::npos) << v.lines[2];
}

TEST(JudgeAllReduce, PerProcessShimsOfANodeAreOneNodeTimedByTheSlowest) {
  auto v = JudgeAllReduce({Shim(0, "a", 0, 1, 0.001), Shim(1, "a", 0, 1, 0.004)}, 4000000,
                          std::nullopt);
  ASSERT_EQ(v.lines.size(), 1u);
  EXPECT_EQ(v.lines[0],
            "preflight nccl: node 0 (a): 2 GPUs, all-reduce of 3.8147 MiB in 4.000 ms: busbw 1.00 "
            "GB/s, algbw 1.00 GB/s");
}

TEST(JudgeAllReduce, ANodeUnderTheFloorFailsAndIsNamed) {
  auto v = JudgeAllReduce({Shim(0, "good", 0, 8, 0.001, 0.01), Shim(1, "slow", 1, 8, 0.004, 0.01)},
                          256u << 20, 228.0);
  EXPECT_TRUE(v.failed);
  ASSERT_EQ(v.lines.size(), 3u);
  EXPECT_EQ(v.lines[0].find("under"), std::string::npos) << v.lines[0];
  EXPECT_NE(v.lines[1].find("node 1 (slow): 8 GPUs"), std::string::npos) << v.lines[1];
  EXPECT_NE(v.lines[1].find("busbw 117.44 GB/s, algbw 67.11 GB/s -- under --min-busbw 228 GB/s"),
            std::string::npos) << v.lines[1];
  // The job-wide figure is reported, not judged: it crosses the inter-node
  // fabric, which a per-node floor does not describe.
  EXPECT_EQ(v.lines[2].find("under"), std::string::npos) << v.lines[2];
}

TEST(JudgeAllReduce, OneGpuHasNoBusBandwidthToJudge) {
  auto v = JudgeAllReduce({Shim(0, "a", 0, 1, 0.001)}, 256u << 20, 1000.0);
  EXPECT_FALSE(v.failed);
  ASSERT_EQ(v.lines.size(), 1u);
  EXPECT_NE(v.lines[0].find("1 GPU, all-reduce of 256 MiB in 1.000 ms: algbw 268.44 GB/s (one "
                            "GPU: no bus bandwidth) -- one GPU moves nothing between GPUs: "
                            "--min-busbw not judged"),
            std::string::npos) << v.lines[0];
}

TEST(JudgeAllReduce, ErrorsAndStoppedRanksFailWithoutBandwidthForTheirNodes) {
  ShimOutcome bad = Shim(2, "b", 1, 1, -1);
  bad.ok = false;
  bad.error = "node: the node all-reduce gave a wrong result on GPU 0";
  ShimOutcome stopped = Shim(3, "b", 1, 1, -1);
  stopped.ok = false;
  stopped.finished = false;
  auto v = JudgeAllReduce({Shim(0, "a", 0, 1, 0.001), Shim(1, "a", 0, 1, 0.001), bad, stopped},
                          1 << 20, std::nullopt);
  EXPECT_TRUE(v.failed);
  ASSERT_EQ(v.lines.size(), 3u);
  EXPECT_EQ(v.lines[0], "preflight nccl: rank 2 on b: " + bad.error);
  EXPECT_EQ(v.lines[1],
            "preflight nccl: 1 rank had not finished when rank 0 stopped the preflight at the "
            "failure above: rank 3");
  EXPECT_NE(v.lines[2].find("node 0 (a): 2 GPUs"), std::string::npos) << v.lines[2];
}

GpuHello Hello(int node, const std::string& node_id, const std::string& world_id = "",
               int version = 22809) {
  GpuHello h;
  h.node = node;
  h.gpus = 1;
  h.ready.ok = true;
  h.ready.nccl_version = version;
  h.ready.node_id = node_id;
  h.ready.world_id = world_id;
  return h;
}

TEST(JudgeAllReduce, RanksWithTheSameErrorShareOneLine) {
  std::vector<ShimOutcome> shims;
  for (int r = 0; r < 20; ++r) {
    ShimOutcome o = Shim(r, "h" + std::to_string(r / 2), r / 2, 1, -1);
    o.ok = false;
    o.error = r == 7 ? "cudaMalloc: out of memory"
                     : "the NCCL worker timed out during node init (--preflight-timeout)";
    shims.push_back(o);
  }
  auto v = JudgeAllReduce(shims, 1 << 20, std::nullopt);
  EXPECT_TRUE(v.failed);
  ASSERT_EQ(v.lines.size(), 2u);
  EXPECT_EQ(v.lines[0],
            "preflight nccl: ranks 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16 and 3 "
            "more on h0,h1,h2,h3,h4,h5,h6,h7 and 2 more hosts: the NCCL worker timed out during "
            "node init (--preflight-timeout)");
  EXPECT_EQ(v.lines[1], "preflight nccl: rank 7 on h3: cudaMalloc: out of memory");
}

TEST(PlanNcclIds, EachShimGetsItsNodesIdAndTheJobsId) {
  auto go = PlanNcclIds({Hello(0, "n0", "w"), Hello(0, ""), Hello(1, "n1"), Hello(1, "")},
                        {"a", "a", "b", "b"});
  ASSERT_TRUE(go.ok()) << go.error().message;
  ASSERT_EQ(go->size(), 4u);
  EXPECT_EQ((*go)[1].node_id, "n0");
  EXPECT_EQ((*go)[3].node_id, "n1");
  for (const auto& g : *go) EXPECT_EQ(g.world_id, "w");
  // One node: no job-wide communicator.
  auto one = PlanNcclIds({Hello(0, "n0"), Hello(0, "")}, {"a", "a"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[1].world_id, "");
}

TEST(PlanNcclIds, NamesEveryRankWhoseGpusAreNotReady) {
  GpuHello bad = Hello(1, "n1");
  bad.ready.ok = false;
  bad.ready.error = "no usable GPU: cudaGetDeviceCount: no CUDA-capable device is detected";
  auto go = PlanNcclIds({Hello(0, "n0", "w"), bad}, {"a", "b"});
  ASSERT_FALSE(go.ok());
  EXPECT_EQ(go.error().message, "preflight nccl: rank 1 on b: " + bad.ready.error);
}

TEST(PlanNcclIds, DifferentNcclVersionsAreRefusedWithWhoLoadsWhich) {
  auto go = PlanNcclIds({Hello(0, "n0", "w"), Hello(1, "n1", "", 22703)}, {"a", "b"});
  ASSERT_FALSE(go.ok());
  EXPECT_EQ(go.error().message,
            "preflight nccl: the ranks load different NCCL versions (NCCL refuses to mix them): "
            "2.27.3 on 1@b; 2.28.9 on 0@a");
}

TEST(PlanNcclIds, ANodeWithoutLocalRankZeroHasNoId) {
  auto go = PlanNcclIds({Hello(0, "n0", "w"), Hello(1, "")}, {"a", "b"});
  ASSERT_FALSE(go.ok());
  EXPECT_NE(go.error().message.find("node 1 has no NCCL id"), std::string::npos);
}

}  // namespace
}  // namespace aml
