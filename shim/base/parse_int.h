// Strict integer parsing for values read from the environment or the command
// line: decimal digits only (an optional leading '-'), no spaces, in range.
#pragma once

#include <cstdint>
#include <string_view>

#include "shim/base/result.h"

namespace aml {

// Parses `text` as a decimal integer in [min, max]. `what` names the source
// ("OMPI_COMM_WORLD_RANK" or "--master-port") for the error message, which
// reads e.g. "OMPI_COMM_WORLD_RANK='x3' is not an integer".
Result<int64_t> ParseInt(std::string_view what, std::string_view text,
                         int64_t min, int64_t max);

// True when `text` is one or more decimal digits.
bool IsDigits(std::string_view text);

}  // namespace aml
