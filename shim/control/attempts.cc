// The job's attempts and its restart round (attempts.h).
#include "shim/control/attempts.h"

#include <algorithm>

namespace aml {

AttemptRecord Attempts::New(double failure_wall) const {
  AttemptRecord a;
  a.number = restarts_ + 1;
  a.failure_wall = failure_wall;
  a.duration_s = std::max(0.0, failure_wall - wall_);
  a.nodes = nodes_;
  return a;
}

bool Attempts::NoteWarm(int shim, int warm, int cold) {
  if (warm < 0 || cold < 0 || !warm_said_.insert(shim).second) return false;
  started_warm_ += warm;
  started_cold_ += cold;
  return true;
}

void Attempts::StampWarm(AttemptRecord* a) const {
  a->warm_shims = warm_shims();
  a->started_warm = started_warm_;
  a->started_cold = started_cold_;
}

void Attempts::NewAttempt() {
  warm_said_.clear();
  started_warm_ = started_cold_ = 0;
}

void Attempts::Keep(const AttemptRecord& a) {
  if (list_.empty() || list_.back().number != a.number) list_.push_back(a);
}

void Attempts::Adopt(std::vector<AttemptRecord> list, int n, double wall,
                     std::vector<std::string> nodes) {
  list_ = std::move(list);
  if (restarts_ != n) NewAttempt();
  restarts_ = n;
  wall_ = wall;
  nodes_ = std::move(nodes);
}

RestartVerdict Attempts::Open(AttemptRecord a) {
  current_ = std::move(a);
  StampWarm(&current_);
  RestartVerdict v = Decide();
  if (!v.restart) list_.push_back(current_);
  return v;
}

bool Attempts::NoteEnded(int shim, double first_output_wall) {
  if (!ended_.insert(shim).second) return false;
  if (first_output_wall > 0 && (ended_output_ == 0 || first_output_wall < ended_output_))
    ended_output_ = first_output_wall;
  return true;
}

RestartVerdict Attempts::Close(double now) {
  current_.first_output_wall = ended_output_;
  current_.outputs_known = true;
  StampWarm(&current_);  // every shim said: each said how its ranks started first
  RestartVerdict v = Decide();
  list_.push_back(current_);
  if (!v.restart) return v;
  ++restarts_;
  NewAttempt();
  RestartOrder o;
  o.restart = restarts_;
  backoff_s_ = BackoffS(list_);
  o.line = RestartLine(current_, restarts_, max_, backoff_s_);
  o.message = plan_.message;
  o.print_own_failure = plan_.print_own;
  backoff_ = std::move(o);
  backoff_until_ = now + backoff_s_;
  return v;
}

RestartVerdict Attempts::Decide() const {
  return DecideRestart(current_, list_.empty() ? nullptr : &list_.back(), restarts_, max_);
}

RestartOrder Attempts::TakeRestart() {
  RestartOrder o = std::move(*backoff_);
  backoff_.reset();
  return o;
}

void Attempts::Write(StopOrder* own, const std::string& why_not) const {
  if (max_ <= 0) return;
  own->trailer = AttemptsText(list_, max_, why_not) + own->trailer;
  own->attempts_json = AttemptsJson(list_);
  own->why_not = why_not;
}

}  // namespace aml
