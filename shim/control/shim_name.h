// How every message names a shim: "rank 3's shim on gpu002" (the roster,
// the job machine and the plane alike).
#pragma once

#include <string>

namespace aml {

std::string ShimName(int rank, const std::string& host);

}  // namespace aml
