// The straggler check (docs/control-plane.md, "Slow nodes"), one owner for
// all of it, held by the job's machine: the looks through the tree (their
// timer, each look's order down, this node's part and the children's merged
// and sent up: straggler_looks.h), and at the root the judge of each look
// (shim/control/pace/straggler_judge.h), the lines that name a slow node or
// clear it, failure.json's "slow" and the metrics. The overlay (tree_links.h)
// only carries its "pace" frames and says who its live children are
// (LookLinks); what a node named slow costs it (--retire-slow: the attempt
// ends, a spare takes its place) is the job machine's (job_pace.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/job_link.h"
#include "launch/metrics/prom_text.h"
#include "shim/control/pace/pace_sample.h"
#include "shim/control/pace/straggler_judge.h"
#include "shim/control/straggler_looks.h"
#include "shim/control/wire.h"

namespace aml {

class JobMachine;

class StragglerCheck {
 public:
  // A shim's host, as messages name it.
  using HostOf = std::function<std::string(int shim)>;

  explicit StragglerCheck(int ranks_per_node) : judge_(3, ranks_per_node) {}

  // The overlay's links (once, by TreeLinks): the looks can run.
  // `every_s`: --straggler-check (0: off); `dump_timeout_s`: the records'.
  void Attach(int rank, double every_s, double dump_timeout_s, LookLinks* links,
              JobMachine* machine) {
    looks_.emplace(rank, every_s, dump_timeout_s, links, machine);
  }

  // ---- The looks (straggler_looks.h), while attached.
  void Start(double now) {
    if (looks_) looks_->Start(now);
  }
  void FromParent(const Msg& m, double now) {
    if (looks_) looks_->FromParent(m, now);
  }
  void FromChild(int child, const Msg& m, double now) {
    if (looks_) looks_->FromChild(child, m, now);
  }
  void Own(int64_t look, const std::vector<RankTimes>& times, double now) {
    if (looks_) looks_->Own(look, times, now);
  }
  void OnTimer(double now, bool go) {
    if (looks_) looks_->OnTimer(now, go);
  }
  double NextDeadline(double next, bool go) const {
    return looks_ ? looks_->NextDeadline(next, go) : next;
  }
  int64_t dropped() const { return looks_ ? looks_->dropped() : 0; }
  int64_t sent() const { return looks_ ? looks_->sent() : 0; }

  // ---- The judge, at the root.
  // The job's sample of one look (`live`: the shims whose parts a whole
  // look has): judged and said (with --verbose, a line for the look; a line
  // for each node cleared, and for each node named, after which `named`
  // acts on it: false when the attempt ended, and no more is said).
  using OnNamed = std::function<bool(const SlowNode& node)>;
  void Judge(const PaceSample& s, int live, const HostOf& host_of, const OnNamed& named);
  // A node retired: judged no more. A new attempt: streaks start afresh.
  void Forget(int shim) { judge_.Forget(shim); }
  void NewAttempt() { judge_.NewAttempt(); }
  // failure.json's "slow": every node named and still slow ("" for none).
  std::string SlowJson(const HostOf& host_of) const;
  // --metrics-addr: the looks this shim took part in; at the root
  // (`root`), what was judged and every node late in the last look.
  void AppendMetrics(PromText* out, bool root, const HostOf& host_of) const;
  const StragglerJudge& judge() const { return judge_; }

 private:
  std::optional<StragglerLooks> looks_;
  StragglerJudge judge_;
  bool blind_said_ = false;  // "no collective to compare", once
};

}  // namespace aml
