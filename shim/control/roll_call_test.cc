#include "shim/control/roll_call.h"

#include <gtest/gtest.h>

#include "shim/base/json_read.h"

namespace aml {
namespace {

constexpr char kReduce[] = "all_reduce (distributed_c10d.py:1536) < main (hang.py:20)";
constexpr char kSleep[] = "main (hang.py:18) < <module> (hang.py:30)";

HangFacts FourRanks() {
  HangFacts f;
  f.timeout_s = 15;
  f.silent_s = 16.4;
  f.world_size = 4;
  f.reports = {{3, 1, "b", kReduce, ""}, {0, 0, "a", kReduce, ""},
               {2, 1, "b", kSleep, ""}, {1, 0, "a", kReduce, ""}};
  return f;
}

TEST(RollCall, TheOddRankOutStandsOut) {
  const std::string text = FormatRollCall(FourRanks());
  EXPECT_EQ(text,
            "aml-shim: hung: no rank of the job wrote any output for 16 s (--hang-timeout 15 s); "
            "where each of the 4 ranks that answered was:\n"
            "aml-shim:   3 ranks (0-1,3) [nodes 0, 1, hosts a, b] in " +
                std::string(kReduce) +
                "\n"
                "aml-shim:   rank 2 [node 1, host b] in " +
                kSleep +
                "\n"
                "aml-shim: each Python rank's full stack is its faulthandler dump in its stderr "
                "above (\"Fatal Python error: Aborted\": aml-shim sent SIGABRT to ask for it; "
                "--log-dir would keep every rank's in rank-R.stack); ending the job (exit 124)\n");
  HangFacts kept = FourRanks();
  kept.log_dir = "/scratch/logs";
  const std::string with = FormatRollCall(kept);
  EXPECT_NE(with.find("aml-shim: every rank's full stack is in rank-R.stack under --log-dir "
                      "/scratch/logs on its node; a Python rank's faulthandler dump"),
            std::string::npos)
      << with;
}

TEST(RollCall, ACrowdIsCountedAndTheMissingAreNamed) {
  HangFacts f;
  f.timeout_s = 600;
  f.silent_s = 601;
  for (int r = 0; r < 1024; ++r)
    if (r != 412) f.reports.push_back({r, r / 8, "gpu" + std::to_string(r / 8), kReduce, ""});
  f.reports.push_back({412, 51, "gpu051", kSleep, ""});
  f.reports.push_back({2000, 250, "gpu250", "", "it ended killed by signal 6 (SIGABRT)"});
  f.missing = {"rank 9's shim on gpu009"};
  const std::string text = FormatRollCall(f);
  EXPECT_NE(text.find("1023 ranks (0-411,413-1023) [on 128 node(s)] in all_reduce"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 412 [node 51, host gpu051] in main (hang.py:18)"), std::string::npos);
  EXPECT_NE(text.find("rank 2000 [node 250, host gpu250] no stack: it ended killed"),
            std::string::npos);
  EXPECT_NE(text.find("no stacks from rank 9's shim on gpu009 (gone, or no answer in time)"),
            std::string::npos);
}

TEST(RollCall, HangJsonParsesAndGroups) {
  auto v = ParseJson(HangJson("job-7", FourRanks()));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->Find("run")->text, "job-7");
  const JsonValue* groups = v->Find("hang")->Find("groups");
  ASSERT_EQ(groups->items.size(), 2u);
  EXPECT_EQ(groups->items[0].Find("ranks")->items.size(), 3u);
  EXPECT_EQ(groups->items[1].Find("frames")->text, kSleep);
  EXPECT_EQ(groups->items[1].Find("hosts")->items[0].text, "b");
}

}  // namespace
}  // namespace aml
