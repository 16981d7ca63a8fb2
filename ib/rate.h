// The kernel's port rate, "200 Gb/sec (4X HDR)", "40 Gb/sec (4X FDR10)",
// "2.5 Gb/sec (1X SDR)", "400 Gb/sec (4X NDR)".
#pragma once

#include <optional>
#include <string>

namespace aml {

struct PortRate {
  double gbps = 0;
  std::string width;  // "4X"
  std::string speed;  // "HDR", "FDR10", ...
};

std::optional<PortRate> ParsePortRate(const std::string& text);

}  // namespace aml
