#include "shim/base/proc_tree.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

namespace aml {
namespace {

std::string Comm(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(f, s);
  return s;
}

TEST(AncestorNamed, FindsTheNearestAncestorByName) {
  // From a child, this test process is the nearest ancestor with its name.
  const pid_t self = getpid();
  const std::string name = Comm(self);
  pid_t child = fork();
  if (child == 0) {
    auto found = AncestorNamed(name);
    _exit(found && *found == self ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(AncestorNamed("no-such-process-name").has_value());
}

}  // namespace
}  // namespace aml
