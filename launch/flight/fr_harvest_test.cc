#include "launch/flight/fr_harvest.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "launch/flight/fixture_test_util.h"
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace aml {
namespace {

void Write(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

class Harvest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/aml-fr-harvest-XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    dir_ = tmpl;
  }
  void TearDown() override {
    for (std::thread& t : agents_) t.join();
    std::system(("rm -rf " + dir_).c_str());
  }
  FlightHarvest::Ask AskOf(int rank) {
    FlightHarvest::Ask a;
    a.rank = rank;
    a.files = FlightFilesOf(EnvSnapshot({{"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", dir_ + "/pipe-"},
                                         {"TORCH_FR_DUMP_TEMP_FILE", dir_ + "/dump-"}}),
                            EnvSets{}, rank);
    return a;
  }
  // What the agent does: a FIFO it reads; on a byte, `dump` written whole
  // (temporary file + rename). The FIFO is made here, before Start.
  void Agent(int rank, std::string dump) {
    const std::string pipe = dir_ + "/pipe-" + std::to_string(rank) + ".pipe";
    ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
    const int fd = open(pipe.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const std::string out = dir_ + "/dump-" + std::to_string(rank);
    agents_.emplace_back([fd, out, dump] {
      char b;
      if (read(fd, &b, 1) == 1) {
        Write(out + ".tmp", dump);
        rename((out + ".tmp").c_str(), out.c_str());
      }
      close(fd);
    });
  }
  // Polls until done; the clock is `now` (no real time matters but the agents').
  void Finish(FlightHarvest* h, double now) {
    for (int i = 0; i < 2000 && !h->Poll(now); ++i) usleep(5000);
  }
  std::string dir_;
  std::vector<std::thread> agents_;
};

TEST_F(Harvest, EachRankThatAnswersGivesItsSummary) {
  Agent(0, FlightFixture("gloo-skip-rank0.pickle"));
  Agent(1, FlightFixture("gloo-skip-rank1.pickle"));
  FlightHarvest h;
  h.Start({AskOf(0), AskOf(1)}, 0, 10);
  EXPECT_EQ(h.deadline(), 10);
  Finish(&h, 1);
  ASSERT_TRUE(h.done());
  ASSERT_EQ(h.outcomes().size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const auto& o = h.outcomes()[r];
    ASSERT_TRUE(o.fr) << o.why;
    EXPECT_EQ(o.fr->groups[0].enqueued, r == 0 ? 6 : 5);
    EXPECT_EQ(o.dump, dir_ + "/dump-" + std::to_string(r));
  }
}

TEST_F(Harvest, ARankThatCannotBeAskedIsSaidAtOnce) {
  // No pipe; a pipe nobody reads; a regular file where the pipe should be
  // (never written into); the agent's own line (torch too old).
  ASSERT_EQ(mkfifo((dir_ + "/pipe-1.pipe").c_str(), 0600), 0);
  Write(dir_ + "/pipe-2.pipe", "keep");
  Write(dir_ + "/dump-3.why", "torch 1.13.1 has no flight recorder\n");
  FlightHarvest::Ask ended = AskOf(4);
  ended.running = false;
  FlightHarvest::Ask off;
  off.rank = 5;
  FlightHarvest h;
  h.Start({AskOf(0), AskOf(1), AskOf(2), AskOf(3), ended, off}, 0, 10);
  ASSERT_TRUE(h.done()) << "nothing to wait for";
  const auto& o = h.outcomes();
  EXPECT_NE(o[0].why.find("no flight-recorder pipe"), std::string::npos) << o[0].why;
  EXPECT_EQ(o[1].why, "nothing reads its flight-recorder pipe");
  EXPECT_NE(o[2].why.find("is not a FIFO"), std::string::npos) << o[2].why;
  std::ifstream kept(dir_ + "/pipe-2.pipe");
  std::string k;
  kept >> k;
  EXPECT_EQ(k, "keep");
  EXPECT_EQ(o[3].why, "torch 1.13.1 has no flight recorder");
  EXPECT_EQ(o[4].why, "it had ended");
  EXPECT_NE(o[5].why.find("--flight-recorder off"), std::string::npos);
}

TEST_F(Harvest, ARankThatNeverAnswersIsGivenUpAtTheDeadline) {
  const std::string pipe = dir_ + "/pipe-0.pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  const int reader = open(pipe.c_str(), O_RDWR);  // reads nothing, answers nothing
  Write(dir_ + "/dump-0", "an older dump: not the answer");
  FlightHarvest h;
  h.Start({AskOf(0)}, 100, 10);
  EXPECT_FALSE(h.Poll(105));
  EXPECT_TRUE(h.Poll(110));
  EXPECT_EQ(h.outcomes()[0].why, "no dump within --dump-timeout 10 s");
  close(reader);
}

TEST_F(Harvest, AHugeOrBrokenDumpIsOneLineAndHarmsNothing) {
  // A sparse file past the cap (not read), and a dump that is not a pickle.
  const std::string huge = dir_ + "/dump-0";
  const std::string pipe0 = dir_ + "/pipe-0.pipe", pipe1 = dir_ + "/pipe-1.pipe";
  ASSERT_EQ(mkfifo(pipe0.c_str(), 0600), 0);
  ASSERT_EQ(mkfifo(pipe1.c_str(), 0600), 0);
  const int r0 = open(pipe0.c_str(), O_RDWR), r1 = open(pipe1.c_str(), O_RDWR);
  FlightHarvest h;
  h.Start({AskOf(0), AskOf(1)}, 0, 10);
  const int fd = open(huge.c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_EQ(ftruncate(fd, (80 << 20)), 0);
  close(fd);
  Write(dir_ + "/dump-1", "\x80\x02garbage");
  EXPECT_FALSE(h.Poll(1));
  EXPECT_TRUE(h.Poll(10));
  EXPECT_EQ(h.outcomes()[0].why, "its dump is 80 MiB, over the cap of 64 MiB: not read");
  EXPECT_EQ(h.outcomes()[1].why.rfind("its dump is broken: not a flight-recorder dump: ", 0), 0u)
      << h.outcomes()[1].why;
  EXPECT_EQ(h.outcomes()[1].why.find('\n'), std::string::npos);
  close(r0);
  close(r1);
}

TEST_F(Harvest, ALinkAtTheDumpIsNotFollowed) {
  const std::string pipe = dir_ + "/pipe-0.pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  const int reader = open(pipe.c_str(), O_RDWR);
  Write(dir_ + "/elsewhere", FlightFixture("gloo-skip-rank0.pickle"));
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  ASSERT_EQ(symlink((dir_ + "/elsewhere").c_str(), (dir_ + "/dump-0").c_str()), 0);
  EXPECT_TRUE(h.Poll(10));
  EXPECT_FALSE(h.outcomes()[0].fr);
  close(reader);
}

// Asked for stack traces, aml-shim's agent may write the record without
// them first and keep its mark (dump-N.more) until the one with them is in
// place (fr_agent.py): here rank 0's fixture stands for the first (6
// enqueued), rank 1's for the second (5).
class FirstRecord : public Harvest {
 protected:
  void SetUp() override {
    Harvest::SetUp();
    ASSERT_EQ(mkfifo((dir_ + "/pipe-0.pipe").c_str(), 0600), 0);
    reader_ = open((dir_ + "/pipe-0.pipe").c_str(), O_RDWR);
    ASSERT_GE(reader_, 0);
  }
  void TearDown() override {
    close(reader_);
    Harvest::TearDown();
  }
  void Mark() { Write(dir_ + "/dump-0.more", ""); }
  void Unmark() { ASSERT_EQ(unlink((dir_ + "/dump-0.more").c_str()), 0); }
  void Dump(const std::string& fixture) {  // whole, as the agent writes it
    Write(dir_ + "/dump-0.tmp", FlightFixture(fixture));
    ASSERT_EQ(rename((dir_ + "/dump-0.tmp").c_str(), (dir_ + "/dump-0").c_str()), 0);
  }
  int reader_ = -1;
};

TEST_F(FirstRecord, TheOneWithStackTracesIsWaitedForWhileTheMarkStands) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  Mark();
  Dump("gloo-skip-rank0.pickle");
  EXPECT_FALSE(h.Poll(1));
  Dump("gloo-skip-rank1.pickle");
  EXPECT_FALSE(h.Poll(2));  // (the mark still stands: perhaps another comes)
  Unmark();
  EXPECT_TRUE(h.Poll(3));
  const auto& o = h.outcomes()[0];
  ASSERT_TRUE(o.fr) << o.why;
  EXPECT_EQ(o.fr->groups[0].enqueued, 5);
  EXPECT_EQ(o.fr->no_stacks, "");
  EXPECT_EQ(o.dump, dir_ + "/dump-0");
}

TEST_F(FirstRecord, ADumpReadAfterTheMarkWentIsTheAnswer) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  Mark();
  Dump("gloo-skip-rank0.pickle");
  Dump("gloo-skip-rank1.pickle");
  Unmark();
  EXPECT_TRUE(h.Poll(1));
  ASSERT_TRUE(h.outcomes()[0].fr);
  EXPECT_EQ(h.outcomes()[0].fr->groups[0].enqueued, 5);
  EXPECT_EQ(h.outcomes()[0].fr->no_stacks, "");
}

TEST_F(FirstRecord, TheFirstIsTheAnswerWhenTheOtherIsLateAndSaysSo) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  Mark();
  Dump("gloo-skip-rank0.pickle");
  EXPECT_FALSE(h.Poll(5));
  EXPECT_TRUE(h.Poll(10));
  const auto& o = h.outcomes()[0];
  ASSERT_TRUE(o.fr) << o.why;
  EXPECT_EQ(o.fr->groups[0].enqueued, 6);
  EXPECT_EQ(o.why, "");
  EXPECT_EQ(o.fr->no_stacks, "the dump with them did not come within --dump-timeout 10 s");
}

TEST_F(FirstRecord, TheFirstIsTheAnswerWhenTheOtherFailed) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  Mark();
  Dump("gloo-skip-rank0.pickle");
  EXPECT_FALSE(h.Poll(1));
  Write(dir_ + "/dump-0.why", "torch 2.14.0 could not dump its flight recorder: OSError: full\n");
  EXPECT_TRUE(h.Poll(2));
  ASSERT_TRUE(h.outcomes()[0].fr);
  EXPECT_EQ(h.outcomes()[0].fr->no_stacks, "the dump with them failed: torch 2.14.0 could not dump its "
                                  "flight recorder: OSError: full");
}

// The rank ended (SIGKILLed, a crash) in the agent's dump with stack
// traces: its mark stands and nothing more comes. Before, the record read
// was dropped and the verdict said "no flight record from rank 0: no
// record".
TEST_F(FirstRecord, ARankThatEndedInTheDumpWithThemIsAnsweredByTheFirstAndSaysSo) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  Mark();
  Dump("gloo-skip-rank0.pickle");
  EXPECT_FALSE(h.Poll(1));
  h.Settle();
  EXPECT_TRUE(h.done());
  const auto& o = h.outcomes()[0];
  ASSERT_TRUE(o.fr) << o.why;
  EXPECT_EQ(o.fr->groups[0].enqueued, 6);
  EXPECT_EQ(o.fr->no_stacks, "the rank ended before the dump with them was written");
}

TEST_F(FirstRecord, ARankThatEndedBeforeAnyRecordSaysSo) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  EXPECT_FALSE(h.Poll(1));
  h.Settle();
  EXPECT_TRUE(h.done());
  EXPECT_FALSE(h.outcomes()[0].fr);
  EXPECT_EQ(h.outcomes()[0].why, "it ended before its record came");
}

// A Gloo rank whose peer died raises and ends at once; aml-shim's agent
// writes its record to <dump>.exit as it ends, perhaps before the failure's
// ask (a fast end: the ask then found the record older than itself and the
// rank ended, and the verdict said it had none: a CI run). A failure's or a
// hang's ask takes it whenever it was written; a look's does not.
TEST_F(FirstRecord, ARecordWrittenAsAnExceptionEndedTheRankIsTakenWheneverWritten) {
  Write(dir_ + "/dump-0.tmp", FlightFixture("gloo-skip-rank0.pickle"));
  ASSERT_EQ(rename((dir_ + "/dump-0.tmp").c_str(), (dir_ + "/dump-0.exit").c_str()), 0);
  FlightHarvest::Ask ended = AskOf(0);
  ended.running = false;  // reaped before the ask
  FlightHarvest h;
  h.Start({ended}, 0, 10);
  EXPECT_TRUE(h.Poll(0));
  ASSERT_TRUE(h.outcomes()[0].fr) << h.outcomes()[0].why;
  EXPECT_EQ(h.outcomes()[0].fr->groups[0].enqueued, 6);
  EXPECT_EQ(h.outcomes()[0].dump, dir_ + "/dump-0.exit");
  // Still running when asked, its record written before the ask.
  FlightHarvest running;
  running.Start({AskOf(0)}, 0, 10);
  EXPECT_TRUE(running.Poll(0));
  ASSERT_TRUE(running.outcomes()[0].fr);
  // A look asks for the look's record alone.
  FlightHarvest look;
  look.Start({ended}, 0, 10, true);
  EXPECT_TRUE(look.done());
  EXPECT_FALSE(look.outcomes()[0].fr);
}

TEST_F(FirstRecord, AnExceptionsRecordWrittenAfterTheAskIsTheAnswer) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  EXPECT_FALSE(h.Poll(1));
  Write(dir_ + "/dump-0.tmp", FlightFixture("gloo-skip-rank1.pickle"));
  ASSERT_EQ(rename((dir_ + "/dump-0.tmp").c_str(), (dir_ + "/dump-0.exit").c_str()), 0);
  EXPECT_TRUE(h.Poll(2));
  ASSERT_TRUE(h.outcomes()[0].fr);
  EXPECT_EQ(h.outcomes()[0].fr->groups[0].enqueued, 5);
}

TEST_F(FirstRecord, ALookThatAskedForNoStackTracesTakesTheFirstDumpAtOnce) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10, /*light=*/true);
  Mark();  // (a mark left from another ask)
  Dump("gloo-skip-rank0.pickle");
  EXPECT_TRUE(h.Poll(1));
  ASSERT_TRUE(h.outcomes()[0].fr);
  EXPECT_EQ(h.outcomes()[0].fr->no_stacks, "");
}

// A look's record, asked for with no stack traces, the agent writes to
// <dump>.light: a look takes it; a hang's ask (stack traces wanted) never
// does, even one written after it was asked (a look's the agent wrote late
// on a busy node: test_culprit.py in CI took it for rank 0's answer).
TEST_F(FirstRecord, ALookTakesTheRecordWrittenForLooks) {
  Write(dir_ + "/dump-0.light", FlightFixture("gloo-skip-rank1.pickle"));  // an older look's
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10, /*light=*/true);
  EXPECT_FALSE(h.Poll(1)) << "a record older than the ask is not its answer";
  Write(dir_ + "/dump-0.tmp", FlightFixture("gloo-skip-rank0.pickle"));
  ASSERT_EQ(rename((dir_ + "/dump-0.tmp").c_str(), (dir_ + "/dump-0.light").c_str()), 0);
  EXPECT_TRUE(h.Poll(2));
  const auto& o = h.outcomes()[0];
  ASSERT_TRUE(o.fr) << o.why;
  EXPECT_EQ(o.fr->groups[0].enqueued, 6);
  EXPECT_EQ(o.dump, dir_ + "/dump-0.light");
}

TEST_F(FirstRecord, AHangsAskNeverTakesALooksRecord) {
  FlightHarvest h;
  h.Start({AskOf(0)}, 0, 10);
  Write(dir_ + "/dump-0.light", FlightFixture("gloo-skip-rank0.pickle"));  // written late
  EXPECT_FALSE(h.Poll(1));
  Dump("gloo-skip-rank1.pickle");  // the answer
  EXPECT_TRUE(h.Poll(2));
  ASSERT_TRUE(h.outcomes()[0].fr);
  EXPECT_EQ(h.outcomes()[0].fr->groups[0].enqueued, 5);
  EXPECT_EQ(h.outcomes()[0].dump, dir_ + "/dump-0");
  FlightHarvest late;
  late.Start({AskOf(0)}, 0, 10);
  Write(dir_ + "/dump-0.light", FlightFixture("gloo-skip-rank1.pickle"));
  EXPECT_TRUE(late.Poll(10));
  EXPECT_FALSE(late.outcomes()[0].fr);
  EXPECT_EQ(late.outcomes()[0].why, "no dump within --dump-timeout 10 s");
}

}  // namespace
}  // namespace aml
