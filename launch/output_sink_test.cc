#include "launch/output_sink.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace aml {
namespace {

class Pipe : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    ASSERT_EQ(pipe(fd_), 0);
  }
  void TearDown() override {
    for (int f : fd_)
      if (f >= 0) close(f);
  }
  std::string ReadAll() {
    fcntl(fd_[0], F_SETFL, O_NONBLOCK);
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd_[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  int fd_[2] = {-1, -1};
};

TEST_F(Pipe, AStalledReaderNeverBlocksAWrite) {
  OutputSink sink(fd_[1], 1 << 20);
  const std::string chunk(256 * 1024, 'x');
  for (int i = 0; i < 40; ++i) sink.Write(chunk);  // 10 MiB, far past the pipe
  EXPECT_TRUE(sink.pending());
  EXPECT_TRUE(sink.full());
  EXPECT_FALSE(sink.broken());
  // The caller's descriptor is left blocking for everyone else sharing it.
  EXPECT_EQ(fcntl(fd_[1], F_GETFL) & O_NONBLOCK, 0);
}

TEST_F(Pipe, QueuedBytesGoOutInOrderOnceTheReaderReads) {
  OutputSink sink(fd_[1], 1 << 20);
  std::string sent;
  for (int i = 0; i < 3000; ++i) {
    std::string line = "line " + std::to_string(i) + "\n";
    sent += line;
    sink.Write(line);
  }
  std::string got;
  while (sink.pending()) {
    got += ReadAll();
    sink.Flush();
  }
  got += ReadAll();
  EXPECT_EQ(got, sent);
  EXPECT_EQ(sink.dropped(), 0u);
}

TEST_F(Pipe, AReaderThatLeftBreaksTheSinkWithEpipe) {
  OutputSink sink(fd_[1], 1 << 20);
  close(fd_[0]);
  fd_[0] = -1;
  sink.Write("hello\n");
  EXPECT_TRUE(sink.broken());
  EXPECT_EQ(sink.error(), EPIPE);
  EXPECT_EQ(sink.dropped(), 6u);
}

TEST_F(Pipe, DropCountsWhatTheReaderNeverTook) {
  OutputSink sink(fd_[1], 1 << 20);
  const std::string chunk(1 << 20, 'y');
  sink.Write(chunk);
  sink.Write(chunk);
  ASSERT_TRUE(sink.pending());
  size_t queued_before = sink.dropped();
  sink.Drop();
  EXPECT_FALSE(sink.pending());
  EXPECT_GT(sink.dropped(), queued_before);
  EXPECT_EQ(sink.dropped() + ReadAll().size(), 2u << 20);
}

TEST(OutputSinkFile, RegularFilesTakeEverything) {
  char path[] = "/tmp/aml-sink-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  {
    OutputSink sink(fd, 16);
    for (int i = 0; i < 100; ++i) sink.Write("0123456789");
    EXPECT_FALSE(sink.pending());
  }
  EXPECT_EQ(lseek(fd, 0, SEEK_END), 1000);
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace aml
