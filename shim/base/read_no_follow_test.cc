#include "shim/base/read_no_follow.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace aml {
namespace {

TEST(ReadNoFollow, ReadsUpToMaxAndNeverThroughALinkOrAFifo) {
  char tmpl[] = "/tmp/aml-read-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/f") << "0123456789";
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/f", 4), "0123");
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/f", 100), "0123456789");
  ASSERT_EQ(symlink((dir + "/f").c_str(), (dir + "/link").c_str()), 0);
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/link", 100), "");
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/fifo", 100), "");  // no writer: does not block
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/absent", 100), "");
  std::system(("rm -rf '" + dir + "'").c_str());
}

// The cap is a cap, not a buffer: reading a small file under a huge cap
// costs what the file holds; a file whose size says 0 (/proc) is read whole.
TEST(ReadNoFollow, TheBufferFollowsTheFileNotTheCap) {
  const std::string dir = testing::TempDir();
  { std::ofstream(dir + "/small") << "0123456789"; }
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/small", size_t{1} << 50), "0123456789");
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/small", 10), "0123456789");
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/small", 0), "");
  { std::ofstream(dir + "/big") << std::string(100000, 'x'); }
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/big", size_t{1} << 50), std::string(100000, 'x'));
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/big", 70000), std::string(70000, 'x'));
  const std::string status = ReadNoFollow(AT_FDCWD, "/proc/self/status", size_t{1} << 20);
  EXPECT_EQ(status.rfind("Name:", 0), 0u) << status;
  EXPECT_NE(status.find("\nPid:"), std::string::npos);
}

TEST(ReadNoFollow, NeverAFileOfAnotherUser) {
  // A file planted by another user in a directory both can write (a group
  // project's --log-dir): its words are not this job's.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  char tmpl[] = "/tmp/aml-read-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/planted") << "forged";
  ASSERT_EQ(chown((dir + "/planted").c_str(), 65534, 65534), 0);
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/planted", 100), "");
  std::ofstream(dir + "/ours") << "true";
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, dir + "/ours", 100), "true");
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace aml
