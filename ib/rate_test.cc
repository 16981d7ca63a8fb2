#include "ib/rate.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(PortRate, KernelForms) {
  auto hdr = ParsePortRate("200 Gb/sec (4X HDR)");
  ASSERT_TRUE(hdr);
  EXPECT_DOUBLE_EQ(hdr->gbps, 200);
  EXPECT_EQ(hdr->width, "4X");
  EXPECT_EQ(hdr->speed, "HDR");
  auto fdr10 = ParsePortRate("40 Gb/sec (4X FDR10)");
  ASSERT_TRUE(fdr10);
  EXPECT_DOUBLE_EQ(fdr10->gbps, 40);
  EXPECT_EQ(fdr10->speed, "FDR10");
  auto sdr = ParsePortRate("2.5 Gb/sec (1X SDR)");
  ASSERT_TRUE(sdr);
  EXPECT_DOUBLE_EQ(sdr->gbps, 2.5);
  EXPECT_EQ(ParsePortRate("400 Gb/sec (4X NDR)")->gbps, 400);
  EXPECT_EQ(ParsePortRate("56 Gb/sec (4X FDR)")->speed, "FDR");
}

TEST(PortRate, Malformed) {
  EXPECT_FALSE(ParsePortRate(""));
  EXPECT_FALSE(ParsePortRate("fast"));
  EXPECT_FALSE(ParsePortRate("200 Mb/sec"));
}

}  // namespace
}  // namespace aml
