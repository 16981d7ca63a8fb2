#include "shim/world/hostlist.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

using V = std::vector<std::string>;

TEST(Hostlist, PlainNames) {
  EXPECT_EQ(*ExpandHostlist("L", "a,b,c"), (V{"a", "b", "c"}));
  EXPECT_EQ(*ExpandHostlist("L", "node1"), (V{"node1"}));
}

TEST(Hostlist, RangesKeepZeroPadding) {
  EXPECT_EQ(*ExpandHostlist("L", "gpu[001-004,007],cpu7"),
            (V{"gpu001", "gpu002", "gpu003", "gpu004", "gpu007", "cpu7"}));
  EXPECT_EQ(*ExpandHostlist("L", "n[8-11]"), (V{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(*ExpandHostlist("L", "n[098-101]"), (V{"n098", "n099", "n100", "n101"}));
}

TEST(Hostlist, SuffixAfterBrackets) {
  EXPECT_EQ(*ExpandHostlist("L", "a[01-03,7],b,c[1-2]-ib"),
            (V{"a01", "a02", "a03", "a7", "b", "c1-ib", "c2-ib"}));
}

TEST(Hostlist, SeveralBracketGroupsMultiply) {
  EXPECT_EQ(*ExpandHostlist("L", "rack[1-2]-n[01-02]"),
            (V{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
}

TEST(Hostlist, Errors) {
  struct {
    const char* in;
    const char* msg;
  } cases[] = {
      {"", "SLURM_STEP_NODELIST='' is an empty host list"},
      {"a,,b", "SLURM_STEP_NODELIST='a,,b' has an empty host name"},
      {"a[1-3", "SLURM_STEP_NODELIST='a[1-3' has '[' without a closing ']'"},
      {"a1-3]", "SLURM_STEP_NODELIST='a1-3]' has ']' without '['"},
      {"a[[1]]", "SLURM_STEP_NODELIST='a[[1]]' has nested '['"},
      {"a[3-1]", "SLURM_STEP_NODELIST='a[3-1]' has a reversed range '3-1'"},
      {"a[x-2]", "SLURM_STEP_NODELIST='a[x-2]' has a malformed range 'x-2'"},
      {"a[]", "SLURM_STEP_NODELIST='a[]' has a malformed range ''"},
      {"a[1,]", "SLURM_STEP_NODELIST='a[1,]' has a malformed range ''"},
  };
  for (const auto& c : cases) {
    auto r = ExpandHostlist("SLURM_STEP_NODELIST", c.in);
    ASSERT_FALSE(r.ok()) << c.in;
    EXPECT_EQ(r.error().message, c.msg);
  }
}

TEST(Hostlist, BoundedExpansion) {
  auto r = ExpandHostlist("L", "n[0-99999999]", 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "L='n[0-99999999]' expands to more than 1000 hosts");
  EXPECT_FALSE(ExpandHostlist("L", "a[0-99]b[0-99]", 1000).ok());
}

TEST(TasksPerNode, Expands) {
  EXPECT_EQ(*ExpandTasksPerNode("T", "2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(*ExpandTasksPerNode("T", "4"), (std::vector<int>{4}));
  EXPECT_EQ(*ExpandTasksPerNode("T", "3,2"), (std::vector<int>{3, 2}));
}

TEST(TasksPerNode, Errors) {
  for (const char* bad : {"", "2(x)", "2(3)", "x", "2(x3", "1,,2", "2(x0)"}) {
    auto r = ExpandTasksPerNode("SLURM_STEP_TASKS_PER_NODE", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message, std::string("SLURM_STEP_TASKS_PER_NODE='") + bad +
                                     "' is not a tasks-per-node list such as '2(x3),1'");
  }
}

}  // namespace
}  // namespace aml
