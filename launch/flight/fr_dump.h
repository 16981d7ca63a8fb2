// One rank's flight-recorder dump (PyTorch's record of its recent
// collectives, docs/control-plane.md "Naming the culprit"), reduced to what
// names a hang's culprit: for each of the rank's process groups, the last
// collective it entered (enqueued), started and completed, and two of its
// entries: the last it entered and the first it has not completed, each
// with its op, sizes, dtype, state and the caller's frame. The dump is read
// by pickle.h (bounded, nothing executed); the summary is bounded too
// (kMaxGroups groups, short strings): its bytes do not grow with the
// recorder's buffer or the job.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shim/base/json_read.h"
#include "shim/base/result.h"

namespace aml {

// One collective of a group, as the rank entered it.
struct FrOp {
  int64_t seq = -1;   // its sequence number in the group (-1: none)
  std::string op;     // "all_reduce" (the profiling name less "nccl:"/"gloo:")
  std::string sizes;  // the input sizes, "[[1048576]]"
  std::string dtype;  // "Float"
  std::string state;  // "scheduled", "started", "completed"
  std::string frame;  // "<module> (train.py:6)": the first frame outside torch
};

struct FrGroup {
  std::string pg;     // the group's name in the dump ("0")
  std::string desc;   // "default_pg"
  std::string ranks;  // its global ranks, compact ("0-7"; "" when the dump did not say)
  int64_t enqueued = -1, started = -1, completed = -1;  // last sequence numbers
  FrOp last;     // the last it entered (seq == enqueued)
  FrOp pending;  // the first not completed (seq == completed + 1), when other than last
};

struct FrSummary {
  int rank = -1;
  std::string version;  // the dump's format ("2.10")
  std::vector<FrGroup> groups;
  int more_groups = 0;  // past kMaxGroups, only counted
  // Why the record lacks the stack traces asked for (the agent's first
  // record, taken when the one with them came late: fr_harvest.h); "": it
  // has what was asked for.
  std::string no_stacks;
};

// A group's recent completed collectives as the rank entered them (the
// straggler check, shim/control/pace): each one's sequence number and when the
// rank entered it (the recorder's time_created_ns: CLOCK_REALTIME of the
// rank's host), ascending, the last kMaxTimedOps only.
struct FrEntryTimes {
  std::string pg;
  std::vector<std::pair<int64_t, int64_t>> ops;  // (seq, ns)
};

// One rank's entry times, as a look read them.
struct RankTimes {
  int rank = 0;
  std::vector<FrEntryTimes> groups;
};

constexpr size_t kMaxGroups = 16;
constexpr size_t kMaxTimedOps = 64;
constexpr size_t kMaxFrWire = 8 << 10;  // one rank's summary on the wire
constexpr size_t kMaxNoStacks = 200;     // FrSummary::no_stacks
constexpr size_t kMaxFrDump = 64 << 20;  // a dump past this is refused unread

// The summary of `dump` (a pickle) written by the job's `rank`; the error
// is one line (a malformed, foreign or oversized dump).
// With `times`, also each group's entry times (completed collectives: those
// up to its last_completed_collective; point-to-point ones left out).
Result<FrSummary> SummarizeDump(std::string_view dump, int rank,
                                std::vector<FrEntryTimes>* times = nullptr);

// The summary as one compact JSON object, and back (what the control plane
// carries up the tree with the rank's stack). Parsing bounds every string
// and the number of groups again: the bytes come from another host.
// Past `max` bytes the last groups are dropped (and counted) until it fits.
std::string FrSummaryJson(const FrSummary& s, size_t max = kMaxFrWire);
Result<FrSummary> ParseFrSummary(std::string_view json);
Result<FrSummary> FrSummaryFrom(const JsonValue& v);

// In a verdict's words: "all_reduce #12 [[4]] Float", "group 0 (default_pg)"
// (control characters escaped: the strings come from the ranks).
std::string FrOpWords(const FrOp& op);
std::string FrGroupWords(const std::string& pg, const std::string& desc);

}  // namespace aml
