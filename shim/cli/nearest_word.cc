#include "shim/cli/nearest_word.h"

#include <algorithm>

namespace aml {

// Damerau-Levenshtein (optimal string alignment), three rows.
size_t EditDistance(const std::string& a, const std::string& b, size_t limit) {
  const size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > limit) return limit + 1;
  std::vector<size_t> before(m + 1), prev(m + 1), row(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    row[0] = i;
    size_t least = row[0];
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
      least = std::min(least, row[j]);
    }
    if (least > limit) return limit + 1;
    before.swap(prev);
    prev.swap(row);
  }
  return std::min(prev[m], limit + 1);
}

std::string NearestWord(const std::string& typed, const std::vector<std::string>& words) {
  const size_t limit = std::clamp<size_t>(typed.size() / 3, 1, 3);
  std::string best;
  size_t best_d = limit + 1;
  bool tie = false;
  for (const std::string& w : words) {
    const size_t d = EditDistance(typed, w, limit);
    if (d < best_d) {
      best = w;
      best_d = d;
      tie = false;
    } else if (d == best_d && d <= limit && w != best) {
      tie = true;
    }
  }
  return best_d <= limit && !tie ? best : "";
}

}  // namespace aml
