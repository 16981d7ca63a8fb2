#include "ib/rate.h"

#include <cstdlib>

namespace aml {

std::optional<PortRate> ParsePortRate(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  double gbps = std::strtod(s, &end);
  if (end == s || gbps < 0) return std::nullopt;
  std::string rest = end;
  if (rest.rfind(" Gb/sec", 0) != 0) return std::nullopt;
  PortRate r;
  r.gbps = gbps;
  size_t open = rest.find('(');
  size_t close = rest.find(')', open == std::string::npos ? 0 : open);
  if (open != std::string::npos && close != std::string::npos) {
    std::string inner = rest.substr(open + 1, close - open - 1);  // "4X HDR"
    size_t space = inner.find(' ');
    r.width = inner.substr(0, space);
    if (space != std::string::npos) r.speed = inner.substr(space + 1);
  }
  return r;
}

}  // namespace aml
