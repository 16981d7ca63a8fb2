#include "shim/base/text_list.h"

#include <sstream>


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

}  // namespace aml
