#include "shim/base/units.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "shim/base/parse_int.h"

namespace aml {

std::string FormatNumber(double x, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = static_cast<double>(bytes);
  int u = 0;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " B";
  return FormatNumber(x, "%g") + " " + units[u];
}

std::string FormatRate(double x) {
  return FormatNumber(x, x == static_cast<double>(static_cast<int64_t>(x)) ? "%.0f" : "%.1f");
}

Result<uint64_t> ParseBytes(const std::string& what, const std::string& text) {
  std::string digits = text;
  uint64_t scale = 1;
  if (!digits.empty()) {
    char last = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    const std::string suffixes = "KMG";
    size_t i = suffixes.find(last);
    if (i != std::string::npos) {
      scale = uint64_t{1} << (10 * (i + 1));
      digits.pop_back();
    }
  }
  constexpr int64_t kMax = int64_t{64} << 30;
  auto n = ParseInt(what, digits, 1, kMax);
  const std::string bad = what + "='" + text + "' is not a size from 4 to 64G (bytes, or with K/M/G)";
  if (!n.ok() || static_cast<uint64_t>(*n) > static_cast<uint64_t>(kMax) / scale) return Error{bad};
  uint64_t bytes = static_cast<uint64_t>(*n) * scale;
  if (bytes < 4) return Error{bad};
  if (bytes % 4) return Error{what + "='" + text + "' is not a multiple of 4 bytes (float32 elements)"};
  return bytes;
}

Result<double> ParseDuration(const std::string& what, const std::string& text, double min_s) {
  constexpr double kMaxS = 7 * 86400;
  auto bad = [&] {
    return Error{what + "='" + text + "' is not a duration from " + FormatRate(min_s) +
                 " s to 7 days (seconds, or with s, m or h: 600, 15s, 10m, 1.5h)"};
  };
  std::string digits = text;
  double unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 's': unit = 1; digits.pop_back(); break;
      case 'm': unit = 60; digits.pop_back(); break;
      case 'h': unit = 3600; digits.pop_back(); break;
      default: break;
    }
  }
  if (digits.empty() || digits.size() > 12) return bad();
  int points = 0;
  for (char c : digits) {
    if (c == '.') ++points;
    else if (c < '0' || c > '9') return bad();
  }
  if (points > 1 || digits == ".") return bad();
  const double s = std::strtod(digits.c_str(), nullptr) * unit;
  if (!(s >= min_s) || s > kMaxS) return bad();
  return s;
}

}  // namespace aml
