#include "shim/base/range_list.h"

#include "shim/base/parse_int.h"

namespace aml {

Result<std::vector<TextRange>> SplitRanges(std::string_view text) {
  std::vector<TextRange> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    TextRange r;
    r.lo = item.substr(0, dash);
    r.hi = dash == std::string_view::npos ? r.lo : item.substr(dash + 1);
    if (!IsDigits(r.lo) || !IsDigits(r.hi) || r.lo.size() > 18 || r.hi.size() > 18)
      return Error{"a malformed range '" + std::string(item) + "'"};
    r.first = std::stoull(std::string(r.lo));
    r.last = std::stoull(std::string(r.hi));
    if (r.last < r.first) return Error{"a reversed range '" + std::string(item) + "'"};
    out.push_back(r);
    start = comma + 1;
  }
  return out;
}

Result<std::vector<int>> ExpandRanges(const std::vector<TextRange>& ranges, int64_t limit,
                                      size_t max_count, const std::string& noun) {
  std::vector<int> out;
  for (const TextRange& r : ranges) {
    if (r.last >= static_cast<uint64_t>(limit))
      return Error{"a " + noun + " of " + std::string(r.hi) + ", not below " +
                   std::to_string(limit)};
    if (r.last - r.first >= max_count || out.size() + (r.last - r.first + 1) > max_count)
      return Error{"more than " + std::to_string(max_count) + " " + noun + "s"};
    for (uint64_t n = r.first; n <= r.last; ++n) out.push_back(static_cast<int>(n));
  }
  return out;
}

std::string FormatRanges(const std::vector<int>& sorted) {
  std::string s;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(sorted[i]);
    if (j > i) s += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return s;
}

Result<std::vector<int>> ParseRankRanges(std::string_view text, int limit, size_t max_count) {
  if (text.empty()) return Error{"an empty rank list"};
  auto ranges = SplitRanges(text);
  if (!ranges.ok()) return Error{"ranks '" + std::string(text) + "': " + ranges.error().message};
  for (size_t i = 1; i < ranges->size(); ++i)
    if ((*ranges)[i].first <= (*ranges)[i - 1].last)
      return Error{"ranks '" + std::string(text) + "' are not in increasing order"};
  auto ranks = ExpandRanges(*ranges, limit, max_count, "rank");
  if (!ranks.ok()) return Error{"ranks '" + std::string(text) + "': " + ranks.error().message};
  return ranks;
}

}  // namespace aml
