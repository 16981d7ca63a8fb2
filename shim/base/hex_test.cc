#include "shim/base/hex.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(Hex, RoundTripsAndRejectsJunk) {
  const unsigned char raw[] = {0, 1, 0x7f, 0x80, 0xff};
  std::string h = Hex(raw, sizeof raw);
  EXPECT_EQ(h, "00017f80ff");
  EXPECT_EQ(Unhex(h), std::vector<unsigned char>(raw, raw + sizeof raw));
  EXPECT_TRUE(Unhex("abc").empty());
  EXPECT_TRUE(Unhex("zz").empty());
}

}  // namespace
}  // namespace aml
