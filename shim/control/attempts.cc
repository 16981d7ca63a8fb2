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

void Attempts::Keep(const AttemptRecord& a) {
  if (list_.empty() || list_.back().number != a.number) list_.push_back(a);
}

void Attempts::Adopt(std::vector<AttemptRecord> list, int n, double wall,
                     std::vector<std::string> nodes) {
  list_ = std::move(list);
  restarts_ = n;
  wall_ = wall;
  nodes_ = std::move(nodes);
}

RestartVerdict Attempts::Open(AttemptRecord a) {
  current_ = std::move(a);
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
  RestartVerdict v = Decide();
  list_.push_back(current_);
  if (!v.restart) return v;
  ++restarts_;
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
