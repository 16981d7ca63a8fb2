#include "shim/control/wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace aml {
namespace {

std::pair<FrameLink, FrameLink> Pair(size_t max_frame, size_t max_queue = 8 << 20) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  return {FrameLink(Fd(sv[0]), max_frame, max_queue), FrameLink(Fd(sv[1]), max_frame, max_queue)};
}

TEST(Wire, MessagesRoundTripWithAnyBytes) {
  Msg m("fail");
  m.Set("rank", 412).Set("host", std::string("gpu 051\n\"x\"")).SetNumber("time", 1.5);
  auto back = Msg::Decode(m.Encode());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->type(), "fail");
  EXPECT_EQ(back->Int("rank"), 412);
  EXPECT_EQ(back->Str("host"), "gpu 051\n\"x\"");
  EXPECT_EQ(back->Number("time"), 1.5);
  // A wall-clock time keeps its milliseconds.
  EXPECT_EQ(Msg::Decode(Msg("x").SetNumber("when", 1795438158.251).Encode())->Number("when"),
            1795438158.251);
  EXPECT_EQ(back->Int("absent", 7), 7);
  EXPECT_EQ(back->Str("rank"), "");  // a number is not a string
  EXPECT_FALSE(Msg::Decode("[1]").ok());
  EXPECT_FALSE(Msg::Decode("{\"rank\":1}").ok());
  EXPECT_FALSE(Msg::Decode("{\"t\":\"x\"").ok());
}

TEST(Wire, APeersLastWordsAreReadAfterAWriteToItFailed) {
  // It said "left" and closed; this side wrote to it before reading.
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  FrameLink a{Fd(sv[0]), 1 << 20};
  {
    FrameLink b{Fd(sv[1]), 1 << 20};
    b.Send("left");
  }
  a.Send("beat");
  EXPECT_TRUE(a.broken());
  std::vector<std::string> got;
  a.Read(&got);
  EXPECT_EQ(got, std::vector<std::string>{"left"});
  EXPECT_EQ(a.why(), "closed");
}

TEST(Wire, FramesArriveWholeAndInOrder) {
  auto [a, b] = Pair(1 << 20);
  a.Send("one");
  a.Send(std::string(100000, 'x'));
  a.Send("");
  std::vector<std::string> got;
  for (int i = 0; i < 100 && got.size() < 3; ++i) {
    a.Flush();
    b.Read(&got);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "one");
  EXPECT_EQ(got[1].size(), 100000u);
  EXPECT_EQ(got[2], "");
  EXPECT_FALSE(b.broken());
}

TEST(Wire, AnOversizedFrameBreaksTheLinkAtOnce) {
  auto [a, b] = Pair(16);
  a.Send(std::string(17, 'x'));
  std::vector<std::string> got;
  b.Read(&got);
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(b.broken());
  EXPECT_EQ(b.why(), "sent a frame of 17 bytes (cap 16)");
}

TEST(Wire, APeerThatTakesNothingBreaksTheLinkNotTheSender) {
  auto [a, b] = Pair(1 << 20, 1 << 20);
  for (int i = 0; i < 200 && !a.broken(); ++i) a.Send(std::string(64 << 10, 'x'));
  EXPECT_TRUE(a.broken());
  EXPECT_NE(a.why().find("does not take what is sent to it"), std::string::npos);
}

TEST(Wire, AClosedPeerIsSeen) {
  auto [a, b] = Pair(1 << 20);
  a.Send("last");
  { FrameLink gone = std::move(a); }
  std::vector<std::string> got;
  b.Read(&got);
  ASSERT_EQ(got.size(), 1u);  // what it said before it closed still counts
  EXPECT_TRUE(b.broken());
  EXPECT_EQ(b.why(), "closed");
}

}  // namespace
}  // namespace aml
