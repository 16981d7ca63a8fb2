// Prometheus' text exposition format, version 0.0.4 (docs/metrics.md): one
// family at a time, its HELP and TYPE lines, then its samples, each label
// value escaped as the format says (backslash, double quote, newline).
// Names are the code's own; label values may come from the job (a host, a
// verdict) and are escaped and cut to kMaxLabelValue bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aml {

inline constexpr size_t kMaxLabelValue = 512;

using PromLabels = std::vector<std::pair<std::string, std::string>>;

class PromText {
 public:
  // `type`: "gauge" or "counter".
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const PromLabels& labels, double value);
  void Sample(std::string_view name, double value) { Sample(name, {}, value); }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// A label value as the format writes it (without the quotes).
std::string PromEscape(std::string_view value);
// A sample's value: integers without a fraction, "+Inf", "-Inf", "NaN".
std::string PromNumber(double v);

}  // namespace aml
