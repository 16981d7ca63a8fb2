#include "shim/base/parse_int.h"

#include <string>

namespace aml {

bool IsDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  return true;
}

Result<int64_t> ParseInt(std::string_view what, std::string_view text,
                         int64_t min, int64_t max) {
  auto fail = [&](const std::string& why) {
    return Error{std::string(what) + "='" + std::string(text) + "' " + why};
  };
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && digits[0] == '-') {
    negative = true;
    digits.remove_prefix(1);
  }
  if (!IsDigits(digits)) return fail("is not an integer");
  // Accumulate as a negative number so that INT64_MIN fits; stop at overflow.
  int64_t value = 0;
  for (char c : digits) {
    int d = c - '0';
    if (value < (INT64_MIN + d) / 10) return fail("is out of range");
    value = value * 10 - d;
  }
  if (!negative) {
    if (value == INT64_MIN) return fail("is out of range");
    value = -value;
  }
  if (value < min || value > max) {
    return fail("is out of range (expected " + std::to_string(min) + ".." +
                std::to_string(max) + ")");
  }
  return value;
}

}  // namespace aml
