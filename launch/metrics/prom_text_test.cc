#include "launch/metrics/prom_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace aml {
namespace {

TEST(PromText, FamiliesSamplesAndEscapedLabels) {
  PromText t;
  t.Family("aml_shim_rank_running", "gauge", "1 while the rank runs");
  t.Sample("aml_shim_rank_running", {{"rank", "3"}, {"host", "a\"b\\c\nd"}}, 1);
  t.Family("aml_shim_restarts_total", "counter", "restarts so far");
  t.Sample("aml_shim_restarts_total", 2);
  EXPECT_EQ(t.str(),
            "# HELP aml_shim_rank_running 1 while the rank runs\n"
            "# TYPE aml_shim_rank_running gauge\n"
            "aml_shim_rank_running{rank=\"3\",host=\"a\\\"b\\\\c\\nd\"} 1\n"
            "# HELP aml_shim_restarts_total restarts so far\n"
            "# TYPE aml_shim_restarts_total counter\n"
            "aml_shim_restarts_total 2\n");
}

TEST(PromText, NumbersAsTheFormatWritesThem) {
  EXPECT_EQ(PromNumber(0), "0");
  EXPECT_EQ(PromNumber(-7), "-7");
  EXPECT_EQ(PromNumber(1.5), "1.5");
  EXPECT_EQ(PromNumber(0.000123), "0.000123");
  EXPECT_EQ(PromNumber(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(PromNumber(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(PromNumber(std::nan("")), "NaN");
}

TEST(PromText, ALabelFromTheJobIsCut) {
  EXPECT_EQ(PromEscape(std::string(2000, 'x')).size(), kMaxLabelValue);
}

}  // namespace
}  // namespace aml
