// The straggler check's verdict (docs/control-plane.md, "Slow nodes"), on
// rank 0's shim: each look's merged sample (pace_sample.h) is judged
// collective by collective. A collective waited for its last node when
// that node entered it later than the next-to-last by more than
//   - both entrants' clock bounds added (a node is never blamed by less
//     than what the clocks cannot tell apart),
//   - kLateFrac of the group's period (the median time between its
//     collectives): a job's usual jitter and a node a few per cent slower
//     are not named; a 10 % slower step is,
//   - kMinLateS, 10 ms: what the scheduler of a busy node costs a rank
//     that wakes on a core other work holds (a few of Linux's time slices;
//     3 netns nodes sharing 2 cores with 4 busy loops had one rank 6 ms
//     late in half the steps for minutes, 5 s a minute of the job's time,
//     a node named that was as healthy as the others). Steps of a real
//     training job (0.1 s and more) put 5 % of the period at or above it.
// A node whose lateness so summed over a look (kMinOps collectives judged
// at least) is kWaitShare of all the look's lateness and kLateFrac of its
// span (the job waits for it 3 s per minute at least) is slow in that look:
// a node slow steadily or in bursts alike, while a healthy job's waits are
// spread over its nodes. Of a node late in fewer than half the look's
// collectives only what lies beyond each one's floor counts toward the
// span's kLateFrac: a busy core now and then holds a rank that the
// scheduler keeps there more than its floor (3 netns nodes of 2 ranks
// sharing 2 cores with 4 busy loops, kernel 6.18: one rank 12-20 ms late
// in a third of 60 ms steps, look after look, its node 92 % of the
// waiting), where a slow node is late in most steps or, in bursts, by far
// more than the floor. In the share, a collective counts for one period
// at most: one long stall elsewhere (a checkpoint written by rank 0) does
// not outweigh a node late in every step. Slow in `looks` looks in a row,
// it is named, and how long the job waits for it is said in seconds per
// minute. A look that judges enough collectives and finds it not slow
// clears it. A node of several ranks whose late collectives had the same
// rank last (kOneRankShare of them) is that rank's lateness: its own work
// (rank 0's logging, an uneven split) or its one GPU, not its node.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shim/control/pace/pace_sample.h"

namespace aml {

struct SlowNode {
  int shim = -1;
  int rank = -1;          // its rank most often last in its late collectives
  double rank_share = 0;  // of its late collectives, those `rank` entered last
  bool one_rank = false;  // several ranks a node, and the lateness `rank`'s alone
  int streak = 0;         // looks in a row it was slow
  bool named = false;
  // The last look that judged it.
  int late_ops = 0, ops = 0;
  double mean_late_s = 0;     // how late on average, in those it was late
  double wait_per_min_s = 0;  // what the job waited for it, per minute
  double share = 0;           // of all the look's lateness
  int64_t look = -1;
  int64_t named_look = -1;  // the look that first named it (-1: never)
  int named_rank = -1;      // named as that rank's lateness (one_rank), else -1
};

class StragglerJudge {
 public:
  static constexpr double kLateFrac = 0.05;
  static constexpr double kMinLateS = 0.010;  // a busy node's scheduler
  static constexpr int kMinOps = 8;
  static constexpr double kWaitShare = 2.0 / 3;
  static constexpr double kOneRankShare = 0.9;

  // `ranks_per_node`: each node's ranks (one: a rank's lateness is its node's).
  explicit StragglerJudge(int looks = 3, int ranks_per_node = 1)
      : looks_(looks), ranks_per_node_(ranks_per_node) {}

  struct Change {
    int shim = -1;
    bool named = false;  // true: named now; false: no longer slow
    SlowNode node;       // as this look found it
  };
  // `parts`: the shims whose parts a whole look has (the job's, linked).
  // A group's nodes are learned from whole looks only: a look with a part
  // missing judges no collective of a group not yet seen whole.
  std::vector<Change> Look(const PaceSample& s, int parts);
  // A new attempt: sequence numbers start again, and so do the streaks
  // (a node named stays named until a look clears it).
  void NewAttempt();
  // A node retired: it is no longer judged (nor named).
  void Forget(int shim) { nodes_.erase(shim); }

  // Every node late in the last look that judged it, or named.
  const std::map<int, SlowNode>& nodes() const { return nodes_; }
  int64_t looks() const { return looks_done_; }
  int64_t judged() const { return judged_; }  // collectives judged so far
  int looks_needed() const { return looks_; }

 private:
  int looks_;
  int ranks_per_node_;
  std::map<std::string, int64_t> last_seq_;  // per group: judged up to
  std::map<std::string, int> full_;          // per group: its nodes
  std::map<int, SlowNode> nodes_;
  int64_t looks_done_ = 0, judged_ = 0;
};

// "gpu003 (shim 3) is slow: its ranks entered 58 of 60 collectives last,
// 0.410 s late on average (rank 6 last); the job waits 19.7 s per minute
// for it (3 looks in a row)" (a warning: log.h puts "aml-shim: " first)
std::string SlowLine(const SlowNode& n, const std::string& host);
std::string ClearedLine(const SlowNode& n, const std::string& host);
// failure.json's "slow" entry for one named node.
std::string SlowJson(const SlowNode& n, const std::string& host);

}  // namespace aml
