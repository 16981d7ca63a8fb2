#include "shim/base/write_new_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "shim/base/read_no_follow.h"

namespace aml {
namespace {

TEST(WriteNewFile, WritesAllOf0600AndRefusesWhatIsThere) {
  char tmpl[] = "/tmp/aml-write-new-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/f";
  const std::string bytes(200000, 'x');
  ASSERT_TRUE(WriteNewFile(path, bytes).ok());
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, path, 1 << 20), bytes);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // One there already (planted), or a link in its place: refused, untouched.
  Status again = WriteNewFile(path, "y");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("cannot write " + path + ": "), std::string::npos);
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, path, 1 << 20), bytes);
  const std::string link = dir + "/l";
  ASSERT_EQ(symlink(path.c_str(), link.c_str()), 0);
  EXPECT_FALSE(WriteNewFile(link, "y").ok());
  EXPECT_EQ(ReadNoFollow(AT_FDCWD, path, 1 << 20), bytes);
  unlink(link.c_str());
  unlink(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace aml
