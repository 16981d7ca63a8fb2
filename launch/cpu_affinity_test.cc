#include "launch/cpu_affinity.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(CpuAffinity, UsableIsTheOverlapWithWhatTheContainerAllows) {
  EXPECT_EQ(UsableCpus({0, 1, 2, 48, 49}, {0, 1, 48}), (std::vector<int>{0, 1, 48}));
  EXPECT_TRUE(UsableCpus({48, 49}, {0, 1}).empty());
}

TEST(CpuAffinity, ScopedBindingRestoresTheMask) {
  std::vector<int> before = AllowedCpus();
  ASSERT_FALSE(before.empty());
  {
    ScopedCpuBinding bind({before.front()});
    EXPECT_EQ(AllowedCpus(), std::vector<int>{before.front()});
  }
  EXPECT_EQ(AllowedCpus(), before);
}

}  // namespace
}  // namespace aml
