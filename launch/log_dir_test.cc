#include "launch/log_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "shim/base/json_read.h"

namespace aml {
namespace {

timespec NowRealtime() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class LogDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/aml-logdir-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/logs";
  }
  void TearDown() override { std::system(("rm -rf '" + root_ + "'").c_str()); }
  Result<std::unique_ptr<LogDir>> Open(const std::string& run = "run-1") {
    return LogDir::Open(dir_, {0, 1}, "{\"run\":\"" + run + "\"", NowRealtime());
  }
  std::string root_, dir_;
};

TEST_F(LogDirTest, CreatesTheDirectoryAndEachRanksFiles) {
  auto d = Open();
  ASSERT_TRUE(d.ok()) << d.error().message;
  (*d)->Append(1, true, "boom\n");
  EXPECT_EQ(Slurp(dir_ + "/rank-1.stderr"), "boom\n");
  EXPECT_EQ(Slurp(dir_ + "/rank-0.stdout"), "");
  EXPECT_TRUE((*d)->losses().empty());
}

TEST_F(LogDirTest, TruncatesTheFilesOfAnEarlierRun) {
  {
    auto d = Open();
    ASSERT_TRUE(d.ok());
    (*d)->Append(0, false, "old run\n");
  }
  auto d = Open();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Slurp(dir_ + "/rank-0.stdout"), "");
}

TEST_F(LogDirTest, RefusesAPlantedSymbolicLinkAndLeavesItsTargetAlone) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  std::ofstream(root_ + "/secret") << "keep me";
  ASSERT_EQ(symlink((root_ + "/secret").c_str(), (dir_ + "/rank-0.stdout").c_str()), 0);
  auto d = Open();
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("rank-0.stdout is a symbolic link"), std::string::npos)
      << d.error().message;
  EXPECT_NE(d.error().message.find("--log-dir='" + dir_ + "'"), std::string::npos);
  EXPECT_EQ(Slurp(root_ + "/secret"), "keep me");
}

TEST_F(LogDirTest, RefusesAHardLinkToAnotherFile) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  std::ofstream(root_ + "/secret") << "keep me";
  ASSERT_EQ(link((root_ + "/secret").c_str(), (dir_ + "/rank-1.stderr").c_str()), 0);
  auto d = Open();
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("rank-1.stderr exists and is not a regular file of this user "
                                   "with one link"),
            std::string::npos)
      << d.error().message;
  EXPECT_EQ(Slurp(root_ + "/secret"), "keep me");
}

TEST_F(LogDirTest, RefusesADirectoryThatIsASymbolicLink) {
  ASSERT_EQ(mkdir((root_ + "/real").c_str(), 0755), 0);
  ASSERT_EQ(symlink((root_ + "/real").c_str(), dir_.c_str()), 0);
  auto d = Open();
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("is a symbolic link"), std::string::npos) << d.error().message;
}

TEST_F(LogDirTest, ATrailingSlashOrDotDoesNotFollowTheLinkEither) {
  // "link/" and "link/." resolve the link itself; O_NOFOLLOW alone applies
  // to the last component, so they must not reach open() as written.
  ASSERT_EQ(mkdir((root_ + "/real").c_str(), 0755), 0);
  ASSERT_EQ(symlink((root_ + "/real").c_str(), dir_.c_str()), 0);
  for (const std::string& spelled : {dir_ + "/", dir_ + "/.", dir_ + "/./", dir_ + "//"}) {
    auto d = LogDir::Open(spelled, {0}, "{\"run\":\"r\"", NowRealtime());
    ASSERT_FALSE(d.ok()) << spelled;
    EXPECT_NE(d.error().message.find("--log-dir='" + spelled + "' is a symbolic link"),
              std::string::npos)
        << d.error().message;
  }
  EXPECT_NE(access((root_ + "/real/rank-0.stdout").c_str(), F_OK), 0) << "wrote through the link";
}

TEST_F(LogDirTest, ARelativeDirectoryIsKeptAbsolute) {
  // TORCHELASTIC_ERROR_FILE is built from path(): a rank that changes
  // directory must still write its exception here.
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(chdir(root_.c_str()), 0);
  auto d = LogDir::Open("logs/", {0}, "{\"run\":\"r\"", NowRealtime());
  ASSERT_EQ(chdir(cwd), 0);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ((*d)->path(), dir_);
}

TEST_F(LogDirTest, RefusesAFileInPlaceOfTheDirectory) {
  std::ofstream(dir_) << "x";
  auto d = Open();
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("is not a directory"), std::string::npos) << d.error().message;
}

TEST_F(LogDirTest, RefusesASecondLiveJobOnTheSameFiles) {
  auto first = Open("run-1");
  ASSERT_TRUE(first.ok());
  (*first)->Append(0, false, "first job\n");
  auto second = Open("run-2");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("being written by another running aml-shim job"),
            std::string::npos)
      << second.error().message;
  EXPECT_EQ(Slurp(dir_ + "/rank-0.stdout"), "first job\n");
}

TEST_F(LogDirTest, ASpareTakesOverRankFilesThatALostNodeStillLocks) {
  // A frozen node (its shim lost to the control plane) keeps its lock on
  // rank 0's files; the spare that takes NODE_RANK 0 logs rank 0 anyway.
  auto frozen = Open();
  ASSERT_TRUE(frozen.ok()) << frozen.error().message;
  (*frozen)->Append(0, false, "attempt 1\n");
  auto spare = LogDir::Open(dir_, {}, "{\"run\":\"run-1\"", NowRealtime());
  ASSERT_TRUE(spare.ok()) << spare.error().message;
  Status st = (*spare)->Reassign({0});
  ASSERT_TRUE(st.ok()) << st.error().message;
  (*spare)->Append(0, false, "attempt 2\n");
  EXPECT_EQ(Slurp(dir_ + "/rank-0.stdout"), "attempt 1\nattempt 2\n");
  // A job starting on the same files is still refused.
  EXPECT_FALSE(Open().ok());
}

RecordStamp Root(int term, int shim = 0) { return {term, shim, "root " + std::to_string(shim), true}; }
RecordStamp Part(int term, int shim) { return {term, shim, "part " + std::to_string(shim), false}; }

TEST_F(LogDirTest, AJobThatEndedWellSaysSoOverAnyPartsRecordAndAShimAloneWritesNothing) {
  auto d = Open();
  ASSERT_TRUE(d.ok());
  // A shim alone (no control plane) writes nothing when its job ends well.
  ASSERT_TRUE((*d)->WriteEndedWell(EndedWellJson("run-1"), RecordStamp{}).ok());
  EXPECT_NE(access((dir_ + "/failure.json").c_str(), F_OK), 0);
  // A part cut off on the way wrote its end: the root's word replaces it.
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"exit_code\":125}", Part(1, 3)).ok());
  ASSERT_TRUE((*d)->WriteEndedWell(EndedWellJson("run-1"), Root(1)).ok());
  EXPECT_EQ(Slurp(dir_ + "/failure.json"),
            "{\"run\":\"run-1\",\"exit_code\":0,\"outcome\":\"the job ended well\",\"term\":1,"
            "\"writer\":\"root 0\",\"holder\":true}");
  // A part that wakes after the job ended cannot replace it.
  bool kept = false;
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"exit_code\":125}", Part(1, 3), &kept).ok());
  EXPECT_TRUE(kept);
  // A shim that does not hold the job never writes it.
  ASSERT_EQ(unlink((dir_ + "/failure.json").c_str()), 0);
  ASSERT_TRUE((*d)->WriteEndedWell(EndedWellJson("run-1"), Part(2, 3)).ok());
  EXPECT_NE(access((dir_ + "/failure.json").c_str(), F_OK), 0);
}

TEST_F(LogDirTest, TheHoldersRecordOrElseTheFirstPartsWinsAndALaterRunReplacesIt) {
  auto d = Open("run-1");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"rank\":1}", Part(1, 1)).ok());
  bool kept = false;
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"rank\":0}", Part(1, 2), &kept).ok());
  EXPECT_TRUE(kept);
  EXPECT_EQ(Slurp(dir_ + "/failure.json"),
            "{\"run\":\"run-1\",\"rank\":1,\"term\":1,\"writer\":\"part 1\",\"holder\":false}");
  // The root's record is the job's, whoever wrote first.
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"attempts\":[]}", Root(1)).ok());
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"rank\":2}", Part(1, 2)).ok());
  EXPECT_EQ(StampOf(Slurp(dir_ + "/failure.json")).writer, "root 0");
  d = Error{"closed"};
  auto next = Open("run-2");
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE((*next)->WriteFailure("{\"run\":\"run-2\",\"rank\":0}\n").ok());
  EXPECT_EQ(Slurp(dir_ + "/failure.json"), "{\"run\":\"run-2\",\"rank\":0}\n");
}

TEST_F(LogDirTest, AnOldRootsRecordNeverReplacesANewerTerms) {
  // Rank 0's shim, cut off for a while, writes after its heir took the job
  // (term 2) and wrote: the newer term's word stands.
  auto d = Open("run-1");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"exit_code\":7}", Root(2, 2)).ok());
  bool kept = false;
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"exit_code\":125}", Root(1), &kept).ok());
  EXPECT_TRUE(kept);
  EXPECT_EQ(StampOf(Slurp(dir_ + "/failure.json")).term, 2);
  EXPECT_NE(Slurp(dir_ + "/failure.json").find("\"exit_code\":7"), std::string::npos);
  // A part of the newer term does not replace the holder's either, and the
  // newer root's own later word does.
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"exit_code\":1}", Part(2, 4), &kept).ok());
  EXPECT_TRUE(kept);
  ASSERT_TRUE((*d)->WriteEndedWell(EndedWellJson("run-1"), Root(2, 2)).ok());
  EXPECT_NE(Slurp(dir_ + "/failure.json").find("\"exit_code\":0"), std::string::npos);
}

TEST_F(LogDirTest, AShimThatLostTheJobWritesItsOwnNodesFileAlone) {
  auto d = Open("run-1");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->WriteNodeRecord(3, "{\"run\":\"run-1\",\"exit_code\":125}").ok());
  EXPECT_EQ(Slurp(dir_ + "/failure.shim-3.json"), "{\"run\":\"run-1\",\"exit_code\":125}");
  EXPECT_NE(access((dir_ + "/failure.json").c_str(), F_OK), 0);
  // A link planted at its name is replaced, not followed.
  const std::string target = root_ + "/target";
  { std::ofstream(target) << "keep"; }
  ASSERT_EQ(symlink(target.c_str(), (dir_ + "/failure.shim-4.json").c_str()), 0);
  ASSERT_TRUE((*d)->WriteNodeRecord(4, "{}").ok());
  EXPECT_EQ(Slurp(target), "keep");
  EXPECT_EQ(Slurp(dir_ + "/failure.shim-4.json"), "{}");
}

TEST_F(LogDirTest, TwoWritersAtOnceLeaveOneWholeRecordOfTheNewestTerm) {
  // Two processes (an old root and a new one) write in a loop at once: the
  // file is always one whole record, and the newer term's stands at the end.
  auto d = Open("run-1");
  ASSERT_TRUE(d.ok());
  const std::string big(200000, 'x');
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int i = 0; i < 200; ++i)
      (void)(*d)->WriteFailure("{\"run\":\"run-1\",\"pad\":\"" + big + "\"}", Root(1));
    _exit(0);
  }
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"i\":" + std::to_string(i) + "}",
                                   Root(2, 2))
                    .ok());
    const std::string now = Slurp(dir_ + "/failure.json");
    ASSERT_TRUE(ParseJson(now).ok()) << now.size();
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(StampOf(Slurp(dir_ + "/failure.json")).term, 2);
}

TEST_F(LogDirTest, ALinkPlantedAtTheTemporaryNameNeitherIsFollowedNorBlocksTheReport) {
  auto d = Open("run-1");
  ASSERT_TRUE(d.ok());
  const std::string target = root_ + "/target";
  { std::ofstream(target) << "keep"; }
  // The name the temporary file would have had, were it predictable.
  const std::string planted = dir_ + "/.failure.json." + std::to_string(getpid()) + ".tmp";
  ASSERT_EQ(symlink(target.c_str(), planted.c_str()), 0);
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"rank\":1}\n").ok());
  EXPECT_EQ(Slurp(dir_ + "/failure.json"), "{\"run\":\"run-1\",\"rank\":1}\n");
  EXPECT_EQ(Slurp(target), "keep");
  ASSERT_TRUE((*d)->WriteStack(0, "stack\n").ok());
  EXPECT_EQ(Slurp(dir_ + "/rank-0.stack"), "stack\n");
}

TEST_F(LogDirTest, AFailureJsonOfAnotherUserIsNeverTakenAsThisRuns) {
  // Another user who can write the directory plants failure.json with this
  // run's id (job ids are public): it is replaced by the real report.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  auto d = Open("run-1");
  ASSERT_TRUE(d.ok());
  { std::ofstream(dir_ + "/failure.json") << "{\"run\":\"run-1\",\"rank\":99}\n"; }
  ASSERT_EQ(chown((dir_ + "/failure.json").c_str(), 65534, 65534), 0);
  ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\",\"rank\":1}\n").ok());
  EXPECT_EQ(Slurp(dir_ + "/failure.json"), "{\"run\":\"run-1\",\"rank\":1}\n");
}

TEST_F(LogDirTest, ARunRemovesAnEarlierRunsFailureAndKeepsItsOwn) {
  {
    auto d = Open("run-1");
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE((*d)->WriteFailure("{\"run\":\"run-1\"}\n").ok());
  }
  {
    auto d = Open("run-1");  // another node of run-1, starting late
    ASSERT_TRUE(d.ok());
  }
  EXPECT_EQ(Slurp(dir_ + "/failure.json"), "{\"run\":\"run-1\"}\n");
  auto d = Open("run-2");  // a new run that succeeds: no stale report left
  ASSERT_TRUE(d.ok());
  EXPECT_NE(access((dir_ + "/failure.json").c_str(), F_OK), 0);
}

TEST_F(LogDirTest, AFailedWriteIsReportedAndTheStreamStopsLogging) {
  auto d = Open();
  ASSERT_TRUE(d.ok());
  // /dev/full in place of the log: every write fails with ENOSPC.
  int full = open("/dev/full", O_WRONLY);
  ASSERT_GE(full, 0);
  int log = open((dir_ + "/rank-0.stdout").c_str(), O_WRONLY);
  ASSERT_GE(log, 0);
  // Find the LogDir's descriptor for rank-0.stdout by inode and swap it.
  struct stat want {};
  ASSERT_EQ(fstat(log, &want), 0);
  close(log);
  bool swapped = false;
  for (int fd = 3; fd < 1024 && !swapped; ++fd) {
    struct stat st {};
    if (fstat(fd, &st) == 0 && st.st_ino == want.st_ino && st.st_dev == want.st_dev) {
      swapped = dup2(full, fd) == fd;
    }
  }
  close(full);
  ASSERT_TRUE(swapped);
  (*d)->Append(0, false, "lost\n");
  ASSERT_EQ((*d)->losses().size(), 1u);
  EXPECT_EQ((*d)->losses()[0], "rank-0.stdout (No space left on device)");
}

}  // namespace
}  // namespace aml
