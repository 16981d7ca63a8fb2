#include "shim/base/text_list.h"

#include <sstream>

#include "shim/base/parse_int.h"

namespace aml {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::vector<std::string> SplitFields(const std::string& text, char sep) {
  std::vector<std::string> fields;
  size_t at = 0;
  for (size_t end; (end = text.find(sep, at)) != std::string::npos; at = end + 1)
    fields.push_back(text.substr(at, end - at));
  fields.push_back(text.substr(at));
  return fields;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += (s.empty() ? "" : "\n") + l;
  return s;
}

std::string JoinCapped(const std::vector<std::string>& items, size_t shown,
                       const std::string& separator, const std::string& more_noun) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < shown; ++i) s += (i ? separator : "") + items[i];
  if (items.size() > shown)
    s += " and " + std::to_string(items.size() - shown) + " more" + more_noun;
  return s;
}

std::string RankList(const std::vector<int>& ranks, size_t shown) {
  std::vector<std::string> items;
  for (int r : ranks) items.push_back(std::to_string(r));
  return (ranks.size() == 1 ? "rank " : "ranks ") + JoinCapped(items, shown);
}

std::string CompactRanks(const std::vector<int>& sorted) {
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

Result<std::vector<int>> ParseCompactRanks(const std::string& text, int limit, size_t max_count) {
  std::vector<int> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t dash = item.find('-');
    auto lo = ParseInt("rank", item.substr(0, dash), 0, limit - 1);
    auto hi = dash == std::string::npos ? lo : ParseInt("rank", item.substr(dash + 1), 0, limit - 1);
    if (!lo.ok()) return lo.error();
    if (!hi.ok()) return hi.error();
    if (*hi < *lo || (!out.empty() && *lo <= out.back()))
      return Error{"ranks '" + item + "' are not in increasing order"};
    if (static_cast<size_t>(*hi - *lo) + out.size() >= max_count)
      return Error{"more than " + std::to_string(max_count) + " ranks"};
    for (int64_t r = *lo; r <= *hi; ++r) out.push_back(static_cast<int>(r));
  }
  if (out.empty() || text.back() == ',') return Error{"an empty rank list"};
  return out;
}

}  // namespace aml
