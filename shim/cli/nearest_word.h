// The word of a list nearest to one mistyped (an option's name): by edit
// distance (insertions, deletions, substitutions and two letters swapped,
// each one step), for "did you mean".
#pragma once

#include <string>
#include <vector>

namespace aml {

// The steps from `a` to `b`; counting stops past `limit` (limit + 1).
size_t EditDistance(const std::string& a, const std::string& b, size_t limit);

// The nearest of `words` to `typed` when it is close enough to be a typo:
// within a third of its length (one step at least, three at most); "" when
// none is, or when two are equally near.
std::string NearestWord(const std::string& typed, const std::vector<std::string>& words);

}  // namespace aml
