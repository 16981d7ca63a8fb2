#include "shim/control/pace_relay.h"

namespace aml {

void PaceRelay::Begin(int64_t look, const std::vector<int>& children, double deadline) {
  active_ = true;
  own_ = false;
  deadline_ = deadline;
  waiting_ = std::set<int>(children.begin(), children.end());
  merged_ = PaceSample();
  merged_.look = look;
}

void PaceRelay::Own(int64_t look, const PaceSample& part) {
  if (!active_ || look != merged_.look || own_) {
    ++dropped_;
    return;
  }
  own_ = true;
  MergePace(&merged_, part);
}

void PaceRelay::FromChild(int child, int64_t look, const PaceSample& part) {
  if (!active_ || look != merged_.look || !waiting_.erase(child)) {
    ++dropped_;
    return;
  }
  MergePace(&merged_, part);
}

bool PaceRelay::Ready(double now, const std::function<bool(int)>& keeps) const {
  if (!active_) return false;
  if (now >= deadline_) return true;
  if (!own_) return false;
  for (int c : waiting_)
    if (keeps(c)) return false;
  return true;
}

PaceSample PaceRelay::Take() {
  active_ = false;
  waiting_.clear();
  return std::move(merged_);
}

}  // namespace aml
