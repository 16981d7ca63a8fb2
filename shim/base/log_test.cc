#include "shim/base/log.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(EscapeControl, ANewlineInAValueCannotForgeALine) {
  EXPECT_EQ(EscapeControl("MASTER_ADDR='a\naml-shim: all good'"),
            "MASTER_ADDR='a\\naml-shim: all good'");
  EXPECT_EQ(EscapeControl(std::string("tab\tcr\rnul" "\0" "bell\x07" "del\x7f", 20)),
            "tab\\tcr\\rnul\\x00bell\\x07del\\x7f");
  EXPECT_EQ(EscapeControl("ünïcode stays"), "ünïcode stays");
}

std::string g_seen;
void Capture(const std::string& line) { g_seen += line; }

TEST(Log, EveryLineIsEscapedAndEndsOnce) {
  SetLogSink(Capture);
  LogError("bad value 'x\ny'");
  SetLogSink(nullptr);
  EXPECT_EQ(g_seen, "aml-shim: bad value 'x\\ny'\n");
}

}  // namespace
}  // namespace aml
