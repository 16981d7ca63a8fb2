#include "shim/base/parse_int.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(ParseInt, AcceptsDecimal) {
  EXPECT_EQ(*ParseInt("X", "0", 0, 10), 0);
  EXPECT_EQ(*ParseInt("X", "007", 0, 10), 7);
  EXPECT_EQ(*ParseInt("X", "-5", -10, 10), -5);
  EXPECT_EQ(*ParseInt("X", "9223372036854775807", 0, INT64_MAX), INT64_MAX);
  EXPECT_EQ(*ParseInt("X", "-9223372036854775808", INT64_MIN, 0), INT64_MIN);
}

TEST(ParseInt, RejectsNonIntegersNamingTheVariable) {
  for (const char* bad : {"", " 1", "1 ", "+1", "1.0", "0x10", "abc", "-", "1e3"}) {
    auto r = ParseInt("OMPI_COMM_WORLD_RANK", bad, 0, 100);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message,
              std::string("OMPI_COMM_WORLD_RANK='") + bad + "' is not an integer");
  }
}

TEST(ParseInt, RejectsOutOfRange) {
  auto r = ParseInt("--master-port", "70000", 1, 65535);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "--master-port='70000' is out of range (expected 1..65535)");
  EXPECT_FALSE(ParseInt("X", "9223372036854775808", 0, INT64_MAX).ok());
  EXPECT_FALSE(ParseInt("X", "99999999999999999999999", 0, INT64_MAX).ok());
  EXPECT_FALSE(ParseInt("X", "-1", 0, 10).ok());
}

}  // namespace
}  // namespace aml
