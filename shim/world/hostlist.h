// Slurm hostlist expressions: "gpu[001-004,007],cpu7", "rack[1-2]-n[01-02]",
// "a[01-03,7],b,c[1-2]-ib". Zero padding of a range's lower bound is kept.
// Also Slurm's tasks-per-node form "2(x3),1".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "shim/base/result.h"

namespace aml {

// Expands `text` into host names, in order. Fails on empty lists, unmatched
// brackets, malformed or reversed ranges, and lists longer than `max_hosts`.
Result<std::vector<std::string>> ExpandHostlist(std::string_view what,
                                                std::string_view text,
                                                size_t max_hosts = 1 << 20);

// Expands "2(x3),1" into {2,2,2,1}; at most `max_nodes` entries.
Result<std::vector<int>> ExpandTasksPerNode(std::string_view what,
                                            std::string_view text,
                                            size_t max_nodes = 1 << 20);

}  // namespace aml
