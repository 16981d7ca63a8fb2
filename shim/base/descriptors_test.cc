#include "shim/base/descriptors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(Descriptors, WhatALibraryOpenedIsMarkedCloseOnExecAndNothingElse) {
  int kept[2];
  ASSERT_EQ(pipe(kept), 0);  // open before: left as it is
  const std::vector<int> before = OpenDescriptors();
  EXPECT_TRUE(std::binary_search(before.begin(), before.end(), kept[0]));
  const int opened = open("/dev/null", O_RDONLY);  // as a library would
  ASSERT_GE(opened, 0);
  EXPECT_EQ(CloseOnExecSince(before), 1);
  EXPECT_TRUE(fcntl(opened, F_GETFD) & FD_CLOEXEC);
  EXPECT_FALSE(fcntl(kept[0], F_GETFD) & FD_CLOEXEC);
  EXPECT_EQ(CloseOnExecSince(before), 0) << "already marked";
  close(opened);
  close(kept[0]);
  close(kept[1]);
}

}  // namespace
}  // namespace aml
