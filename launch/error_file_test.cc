#include "launch/error_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace aml {
namespace {

class ErrorFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ErrorDirName("");
    ASSERT_TRUE(MakeErrorDir(dir_));
    // Private, and never made twice: a name already there is refused.
    struct stat st {};
    ASSERT_EQ(lstat(dir_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_FALSE(MakeErrorDir(dir_));
  }
  void TearDown() override {
    RemoveErrorDir(dir_);
    EXPECT_NE(access(dir_.c_str(), F_OK), 0) << "the private directory was left behind";
  }
  void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  std::string dir_;
};

TEST_F(ErrorFile, ReadsTorchsRecordFormat) {
  const std::string path = ErrorFilePath(dir_, 3);
  EXPECT_EQ(path, dir_ + "/rank-3.error.json");
  Write(path, R"({"message": {"message": "ValueError: bad shard", "extraInfo": {"py_callstack": "Traceback:\nValueError: bad shard", "timestamp": "1"}}})");
  auto e = ReadErrorFile(path);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->message, "ValueError: bad shard");
  EXPECT_EQ(e->traceback, "Traceback:\nValueError: bad shard");
}

TEST_F(ErrorFile, ReadsAPlainMessage) {
  Write(ErrorFilePath(dir_, 0), R"({"message": "RuntimeError: oom"})");
  auto e = ReadErrorFile(ErrorFilePath(dir_, 0));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->message, "RuntimeError: oom");
}

TEST_F(ErrorFile, NothingFromAbsentGarbledOrLinkedFiles) {
  EXPECT_FALSE(ReadErrorFile(ErrorFilePath(dir_, 0)).has_value());
  Write(ErrorFilePath(dir_, 1), "not json");
  EXPECT_FALSE(ReadErrorFile(ErrorFilePath(dir_, 1)).has_value());
  Write(dir_ + "/target", R"({"message": "planted"})");
  ASSERT_EQ(symlink((dir_ + "/target").c_str(), ErrorFilePath(dir_, 2).c_str()), 0);
  EXPECT_FALSE(ReadErrorFile(ErrorFilePath(dir_, 2)).has_value());
}

TEST_F(ErrorFile, TheDirectoryGoesWithTheFlightRecordersOwn) {
  // python/ (the agent, with its bytecode) and fr-0/ (an attempt's pipes and dumps) inside:
  // TearDown finds nothing left. A link to a directory is removed, not
  // followed.
  ASSERT_EQ(mkdir((dir_ + "/python").c_str(), 0700), 0);
  Write(dir_ + "/python/sitecustomize.py", "#");
  // The interpreter's bytecode of the agent, a level further down (three
  // runs left it behind under /tmp).
  ASSERT_EQ(mkdir((dir_ + "/python/__pycache__").c_str(), 0700), 0);
  Write(dir_ + "/python/__pycache__/sitecustomize.cpython-311.pyc", "c");
  ASSERT_EQ(mkdir((dir_ + "/fr-0").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo((dir_ + "/fr-0/pipe-rank-0.pipe").c_str(), 0600), 0);
  Write(dir_ + "/fr-0/dump-rank-0", "x");
  const std::string outside = dir_ + "-outside";
  ASSERT_EQ(mkdir(outside.c_str(), 0700), 0);
  Write(outside + "/keep", "k");
  ASSERT_EQ(symlink(outside.c_str(), (dir_ + "/fr-1").c_str()), 0);
  RemoveErrorDir(dir_);
  EXPECT_EQ(access((outside + "/keep").c_str(), F_OK), 0);
  unlink((outside + "/keep").c_str());
  rmdir(outside.c_str());
}

}  // namespace
}  // namespace aml
