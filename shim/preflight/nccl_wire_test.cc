#include "shim/preflight/nccl_wire.h"

#include <gtest/gtest.h>

#include "shim/base/hex.h"

namespace aml {
namespace {

TEST(NcclWire, SetupRoundTrips) {
  WorkerSetup s;
  s.bytes = 256u << 20;
  s.iters = 7;
  s.make_node_id = true;
  s.slots = {{0, 0, 8, 16, 32}, {1, 1, 8, 17, 32}};
  auto d = DecodeSetup(EncodeSetup(s));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->bytes, s.bytes);
  EXPECT_EQ(d->iters, 7);
  EXPECT_TRUE(d->make_node_id);
  EXPECT_FALSE(d->make_world_id);
  ASSERT_EQ(d->slots.size(), 2u);
  EXPECT_EQ(d->slots[1].device, 1);
  EXPECT_EQ(d->slots[1].world_rank, 17);
  EXPECT_EQ(d->slots[1].world_size, 32);
}

TEST(NcclWire, SetupRejectsRanksOutsideTheirCommunicator) {
  EXPECT_FALSE(DecodeSetup("setup\nbytes=4\niters=1\nslot=0,8,8,0,1").ok());
  EXPECT_FALSE(DecodeSetup("setup\nbytes=4\niters=1\nslot=0,0,1,0,1,9").ok());
  EXPECT_FALSE(DecodeSetup("setup\nbytes=4\niters=1").ok());  // no slot
  EXPECT_FALSE(DecodeSetup("ready\nbytes=4").ok());
}

TEST(NcclWire, ReadyAndGpuHelloCarryIdsAndErrors) {
  WorkerReady r;
  r.ok = true;
  r.versions = "NCCL 2.28.9, CUDA runtime 13.0, driver 13.0";
  r.nccl_version = 22809;
  r.pci = {"0000:07:00.0", "0000:0f:00.0"};
  r.node_id = Hex("\x01\xff", 2);
  GpuHello h{3, 2, r};
  auto d = DecodeGpuHello(EncodeGpuHello(h));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->node, 3);
  EXPECT_EQ(d->gpus, 2);
  EXPECT_TRUE(d->ready.ok);
  EXPECT_EQ(d->ready.node_id, "01ff");
  EXPECT_EQ(d->ready.pci, r.pci);
  EXPECT_EQ(d->ready.nccl_version, 22809);

  WorkerReady bad;
  bad.error = "no GPU\nsecond line";
  auto b = DecodeReady(EncodeReady(bad));
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->ok);
  EXPECT_EQ(b->error, "no GPU second line");  // one line on the wire
  EXPECT_FALSE(DecodeReady("ready\nok=0\nnccl_version=0").ok());  // not ok, no reason
}

TEST(NcclWire, ResultKeepsSecondsAndNeedsThemWhenOk) {
  WorkerResult r;
  r.ok = true;
  r.node_s = 0.00123456789;
  auto d = DecodeResult(EncodeResult(r));
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->node_s, 0.00123456789);
  EXPECT_EQ(d->world_s, -1);
  EXPECT_FALSE(DecodeResult("result\nok=1").ok());
  EXPECT_FALSE(DecodeResult("result\nok=1\nnode_s=fast").ok());
}

TEST(NcclWire, GoNeedsANodeIdAndPhasesAreRecognised) {
  EXPECT_FALSE(DecodeGo("go\nworld_id=ab").ok());
  auto g = DecodeGo(EncodeGo({"aa", "bb"}));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->world_id, "bb");
  EXPECT_EQ(PhaseOf(EncodePhase("world init")), "world init");
  EXPECT_EQ(PhaseOf(EncodeGo({"aa", ""})), "");
}

}  // namespace
}  // namespace aml
