// Numbers as users read and write them: sizes, seconds, rates.
#pragma once

#include <cstdint>
#include <string>

#include "shim/base/result.h"

namespace aml {

// printf-style `format` of one double: FormatNumber(1.5, "%.2f") is "1.50".
std::string FormatNumber(double x, const char* format);

// "256 MiB", "1.5 GiB", "4096 B"
std::string FormatBytes(uint64_t bytes);

// "200" or "12.5": a whole number without decimals, else one.
std::string FormatRate(double x);

// "256M", "1G", "1048576", "64K" (binary multiples); 4 B .. 64 GiB, a
// multiple of 4 (float32 elements). `what` names the option in errors.
Result<uint64_t> ParseBytes(const std::string& what, const std::string& text);

// A duration in seconds: "600", "15s", "10m", "1.5h" (digits and at most one
// decimal point, then s, m or h; no sign, space or exponent); from `min_s` to
// 7 days. `what` names the option or variable in errors.
Result<double> ParseDuration(const std::string& what, const std::string& text, double min_s);

}  // namespace aml
