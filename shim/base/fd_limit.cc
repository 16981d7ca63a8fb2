#include "shim/base/fd_limit.h"

namespace aml {
namespace {

bool g_raised = false;
rlimit g_original{};
rlimit g_raised_to{};

}  // namespace

void RaiseFdLimit() {
  rlimit l{};
  if (g_raised || getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur >= l.rlim_max) return;
  rlimit up = l;
  up.rlim_cur = l.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &up) != 0) return;
  g_original = l;
  g_raised_to = up;
  g_raised = true;
}

rlim_t FdLimit() {
  rlimit l{};
  return getrlimit(RLIMIT_NOFILE, &l) == 0 ? l.rlim_cur : 0;
}

OriginalFdLimit::OriginalFdLimit() {
  if (g_raised) lowered_ = setrlimit(RLIMIT_NOFILE, &g_original) == 0;
}

OriginalFdLimit::~OriginalFdLimit() {
  if (lowered_) setrlimit(RLIMIT_NOFILE, &g_raised_to);
}

}  // namespace aml
