#include "shim/world/hostlist.h"

#include "shim/base/parse_int.h"
#include "shim/base/range_list.h"

namespace aml {
namespace {

// Splits at commas that are not inside brackets.
Result<std::vector<std::string_view>> SplitTopLevel(std::string_view what,
                                                    std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '[') {
      if (++depth > 1)
        return Error{std::string(what) + "='" + std::string(text) +
                     "' has nested '['"};
    } else if (c == ']') {
      if (--depth < 0)
        return Error{std::string(what) + "='" + std::string(text) +
                     "' has ']' without '['"};
    } else if (c == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0)
    return Error{std::string(what) + "='" + std::string(text) +
                 "' has '[' without a closing ']'"};
  parts.push_back(text.substr(start));
  return parts;
}

std::string Pad(uint64_t n, size_t width) {
  std::string s = std::to_string(n);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// Expands one bracket body "001-004,007" into its strings (shim/base/
// range_list.h), each as wide as its range's first bound when that has a
// leading zero.
Result<std::vector<std::string>> ExpandBracket(std::string_view what, std::string_view all,
                                               std::string_view body, size_t max_hosts) {
  auto fail = [&](const std::string& why) {
    return Error{std::string(what) + "='" + std::string(all) + "' " + why};
  };
  auto ranges = SplitRanges(body);
  if (!ranges.ok()) return fail("has " + ranges.error().message);
  std::vector<std::string> out;
  for (const TextRange& r : *ranges) {
    if (r.last - r.first >= max_hosts || out.size() + (r.last - r.first + 1) > max_hosts)
      return fail("expands to more than " + std::to_string(max_hosts) + " hosts");
    const size_t width = r.lo.size() > 1 && r.lo[0] == '0' ? r.lo.size() : 0;
    for (uint64_t n = r.first; n <= r.last; ++n) out.push_back(Pad(n, width));
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view what,
                                                std::string_view text,
                                                size_t max_hosts) {
  auto fail = [&](const std::string& why) {
    return Error{std::string(what) + "='" + std::string(text) + "' " + why};
  };
  if (text.empty()) return fail("is an empty host list");
  auto parts = SplitTopLevel(what, text);
  if (!parts.ok()) return parts.error();
  std::vector<std::string> hosts;
  for (std::string_view part : *parts) {
    if (part.empty()) return fail("has an empty host name");
    // Cartesian product over every bracket group in the part.
    std::vector<std::string> names{""};
    size_t pos = 0;
    while (pos < part.size()) {
      size_t open = part.find('[', pos);
      std::string_view literal = part.substr(pos, open - pos);
      for (char c : literal)
        if (static_cast<unsigned char>(c) <= ' ' || c == ']')
          return fail("has a malformed host name '" + std::string(part) + "'");
      for (auto& n : names) n.append(literal);
      if (open == std::string_view::npos) break;
      size_t close = part.find(']', open);
      auto values = ExpandBracket(what, text,
                                 part.substr(open + 1, close - open - 1),
                                 max_hosts);
      if (!values.ok()) return values.error();
      if (names.size() * values->size() > max_hosts)
        return fail("expands to more than " + std::to_string(max_hosts) +
                    " hosts");
      std::vector<std::string> next;
      next.reserve(names.size() * values->size());
      for (const auto& n : names)
        for (const auto& v : *values) next.push_back(n + v);
      names.swap(next);
      pos = close + 1;
    }
    if (hosts.size() + names.size() > max_hosts)
      return fail("expands to more than " + std::to_string(max_hosts) +
                  " hosts");
    for (auto& n : names) hosts.push_back(std::move(n));
  }
  return hosts;
}

Result<std::vector<int>> ExpandTasksPerNode(std::string_view what,
                                            std::string_view text,
                                            size_t max_nodes) {
  auto fail = [&]() {
    return Error{std::string(what) + "='" + std::string(text) +
                 "' is not a tasks-per-node list such as '2(x3),1'"};
  };
  if (text.empty()) return fail();
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    int64_t repeat = 1;
    size_t paren = item.find('(');
    if (paren != std::string_view::npos) {
      if (item.size() < paren + 4 || item.substr(paren, 2) != "(x" ||
          item.back() != ')')
        return fail();
      auto r = ParseInt(what, item.substr(paren + 2, item.size() - paren - 3),
                        1, static_cast<int64_t>(max_nodes));
      if (!r.ok()) return fail();
      repeat = *r;
      item = item.substr(0, paren);
    }
    auto n = ParseInt(what, item, 0, 1 << 24);
    if (!n.ok()) return fail();
    if (out.size() + static_cast<size_t>(repeat) > max_nodes) return fail();
    out.insert(out.end(), static_cast<size_t>(repeat), static_cast<int>(*n));
    start = comma + 1;
  }
  return out;
}

}  // namespace aml
