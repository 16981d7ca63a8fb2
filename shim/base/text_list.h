// Small text helpers shared by the reports: lines of a message, and lists
// that name the first few items and count the rest.
#pragma once

#include <string>
#include <vector>


namespace aml {

std::vector<std::string> SplitLines(const std::string& text);
// `text` cut at each `sep`, empty fields kept ("a,,b": "a", "", "b").
std::vector<std::string> SplitFields(const std::string& text, char sep);
std::string JoinLines(const std::vector<std::string>& lines);

// "a, b, c and 4 more<noun>" naming at most `shown` of `items`.
std::string JoinCapped(const std::vector<std::string>& items, size_t shown,
                       const std::string& separator = ", ", const std::string& more_noun = "");

// "rank 3" or "ranks 1, 2, 5 and 3 more", naming at most `shown`.
std::string RankList(const std::vector<int>& ranks, size_t shown = 16);

}  // namespace aml
