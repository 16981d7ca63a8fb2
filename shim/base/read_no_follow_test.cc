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
