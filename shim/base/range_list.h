// One range list, "0-3,8,12-13": the kernel's CPU lists (sysfs cpulist
// files), the brackets of Slurm's host lists ("gpu[001-004,007]"), and the
// rank lists of the wire and of the reports. Split into its ranges as
// written (each user reads the bounds as numbers, or as zero-padded names),
// and formatted back from sorted numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shim/base/result.h"

namespace aml {

struct TextRange {
  std::string_view lo, hi;  // as written ("007"); hi == lo for one number
  uint64_t first = 0, last = 0;
};

// The ranges of `text`, split at each comma: each bound 1 to 18 digits, the
// first no more than the last. An error says what is wrong with which item
// ("a malformed range 'x-2'", "a reversed range '3-1'"); an empty text, or an
// empty item, is malformed.
Result<std::vector<TextRange>> SplitRanges(std::string_view text);

// The numbers of `ranges`, each below `limit`, in the order written, at most
// `max_count` in all (checked before any range is expanded); "" or why not.
Result<std::vector<int>> ExpandRanges(const std::vector<TextRange>& ranges, int64_t limit,
                                      size_t max_count, const std::string& noun);

// Sorted numbers as ranges: "0-3,8,12-13" ("" for none).
std::string FormatRanges(const std::vector<int>& sorted);

// A rank list from the wire (FormatRanges' form): strictly increasing ranks
// below `limit`, at most `max_count`, not empty.
Result<std::vector<int>> ParseRankRanges(std::string_view text, int limit, size_t max_count);

}  // namespace aml
