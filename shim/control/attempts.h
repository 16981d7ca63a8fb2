// The job's attempts and its restart round (docs/control-plane.md,
// "Restarts"): the restarts so far, the attempt under way (when it began,
// each NODE_RANK's host then), the attempts that ended, and, while a failed
// attempt ends everywhere, which shims said their ranks ended, how the job
// ends should no restart follow, and the back-off's order. The root decides
// with it, by restart_policy.h's rules; every other shim keeps the count
// alone (a restart order's number). It knows nothing of frames, states or
// the tree: the job's state machine (job_machine.h) acts on its answers.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/link_order.h"
#include "launch/restart_policy.h"

namespace aml {

// How a restart round ends the job should no restart follow.
struct Ending {
  std::string stop;     // the stop frame sent down
  StopOrder own;        // and this shim's order then
  std::string message;  // printed before the restart line (the root)
  bool print_own = false;
};

class Attempts {
 public:
  explicit Attempts(int max_restarts) : max_(max_restarts) {}

  int restarts() const { return restarts_; }
  bool MayRestart() const { return restarts_ < max_; }
  // A shim that is not the root: the root's restart order number `n`.
  void Follow(int n) {
    if (n != restarts_) NewAttempt();
    restarts_ = n;
  }
  // --warm-restart: shim `shim` said how its ranks of the attempt under way
  // (a restart's) started: `warm` from their standbys, `cold` not. Once per
  // shim and attempt (false: said before); the attempt's record carries the
  // sums.
  bool NoteWarm(int shim, int warm, int cold);
  int warm_shims() const { return static_cast<int>(warm_said_.size()); }
  int started_warm() const { return started_warm_; }
  int started_cold() const { return started_cold_; }

  // The attempt under way began (CLOCK_REALTIME), and each NODE_RANK's
  // holder's host then (with --spares).
  void Began(double wall) { wall_ = wall; }
  double began() const { return wall_; }
  void SetNodes(std::vector<std::string> nodes) { nodes_ = std::move(nodes); }
  const std::vector<std::string>& nodes() const { return nodes_; }

  // The attempt under way, ended by a failure at `failure_wall`.
  AttemptRecord New(double failure_wall) const;
  // `a` kept in the job's record, once per attempt number.
  void Keep(const AttemptRecord& a);
  const std::vector<AttemptRecord>& list() const { return list_; }
  // A new root: the record its old root handed it (`n` restarts so far,
  // the attempt under way begun at `wall` on `nodes`).
  void Adopt(std::vector<AttemptRecord> list, int n, double wall, std::vector<std::string> nodes);

  // The attempt a restart round ends (or, electing, the root's loss).
  AttemptRecord& current() { return current_; }
  const AttemptRecord& current() const { return current_; }
  // A failed attempt `a` ends: what is decided before its output is known.
  // Not restarted: it is kept in the record.
  RestartVerdict Open(AttemptRecord a);

  // The round: each shim's word that its ranks ended (false: it said so
  // before), the first output among them, and the job's end should no
  // restart follow.
  void NewRound() { ended_.clear(), ended_output_ = 0; }
  void Plan(Ending e) { plan_ = std::move(e); }
  Ending& plan() { return plan_; }
  bool NoteEnded(int shim, double first_output_wall);
  const std::set<int>& ended() const { return ended_; }

  // Every shim's ranks ended: the verdict, with the outputs known; the
  // attempt is kept. Restarted: the count goes up, and the back-off's order
  // waits (backoff_s() from `now`).
  RestartVerdict Close(double now);
  double backoff_s() const { return backoff_s_; }
  double backoff_until() const { return backoff_until_; }
  void WaitUntil(double t) { backoff_until_ = t; }
  // The back-off's order, taken once it is over.
  RestartOrder TakeRestart();

  // With --max-restarts, the job's final order carries the attempts: the
  // summary's list, failure.json's array, and why no restart followed.
  void Write(StopOrder* own, const std::string& why_not) const;

 private:
  // The attempt under way against the one before it (restart_policy.h).
  RestartVerdict Decide() const;
  void StampWarm(AttemptRecord* a) const;
  void NewAttempt();  // the count went up: nothing of the last one is said

  int max_;
  int restarts_ = 0;
  double wall_ = 0;
  std::vector<std::string> nodes_;
  std::vector<AttemptRecord> list_;
  AttemptRecord current_;
  std::set<int> ended_;
  std::set<int> warm_said_;
  int started_warm_ = 0, started_cold_ = 0;
  double ended_output_ = 0;
  Ending plan_;
  std::optional<RestartOrder> backoff_;
  double backoff_until_ = 0, backoff_s_ = 0;
};

}  // namespace aml
