#include "shim/base/units.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(Bytes, ParseAndFormat) {
  EXPECT_EQ(*ParseBytes("--preflight-bytes", "256M"), 256u << 20);
  EXPECT_EQ(*ParseBytes("--preflight-bytes", "1g"), 1u << 30);
  EXPECT_EQ(*ParseBytes("--preflight-bytes", "4096"), 4096u);
  EXPECT_EQ(*ParseBytes("--preflight-bytes", "64G"), uint64_t{64} << 30);
  EXPECT_EQ(ParseBytes("--preflight-bytes", "65G").error().message,
            "--preflight-bytes='65G' is not a size from 4 to 64G (bytes, or with K/M/G)");
  EXPECT_FALSE(ParseBytes("--preflight-bytes", "2").ok());
  EXPECT_FALSE(ParseBytes("--preflight-bytes", "M").ok());
  EXPECT_FALSE(ParseBytes("--preflight-bytes", "1.5G").ok());
  EXPECT_EQ(ParseBytes("--preflight-bytes", "1001").error().message,
            "--preflight-bytes='1001' is not a multiple of 4 bytes (float32 elements)");
  EXPECT_EQ(FormatBytes(256u << 20), "256 MiB");
  EXPECT_EQ(FormatBytes(3u << 29), "1.5 GiB");
  EXPECT_EQ(FormatBytes(4096), "4 KiB");
  EXPECT_EQ(FormatBytes(1000), "1000 B");
}

TEST(Units, Durations) {
  EXPECT_EQ(*ParseDuration("--hang-timeout", "600", 1), 600);
  EXPECT_EQ(*ParseDuration("--hang-timeout", "15s", 1), 15);
  EXPECT_EQ(*ParseDuration("--hang-timeout", "10m", 1), 600);
  EXPECT_EQ(*ParseDuration("--hang-timeout", "1.5h", 1), 5400);
  for (const char* bad : {"", "s", "-5", " 5", "0x10", "1e3", "5d", "1..2", ".", "0.5", "8d", "nan"})
    EXPECT_FALSE(ParseDuration("--hang-timeout", bad, 1).ok()) << bad;
  EXPECT_EQ(ParseDuration("AML_SHIM_HANG_TIMEOUT", "5x", 1).error().message,
            "AML_SHIM_HANG_TIMEOUT='5x' is not a duration from 1 s to 7 days (seconds, or with "
            "s, m or h: 600, 15s, 10m, 1.5h)");
}

TEST(Units, Rates) {
  EXPECT_EQ(FormatRate(200), "200");
  EXPECT_EQ(FormatRate(12.5), "12.5");
}

}  // namespace
}  // namespace aml
