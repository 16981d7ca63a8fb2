#include "shim/control/shim_name.h"

#include "shim/base/log.h"

namespace aml {

std::string ShimName(int rank, const std::string& host) {
  return "rank " + std::to_string(rank) + "'s shim" +
         (host.empty() ? "" : " on " + EscapeControl(host));
}

}  // namespace aml
