#include "launch/warm_slots.h"

#include <limits>

namespace aml {

WarmSlots::Slot& WarmSlots::At(size_t i) {
  if (slots_.size() <= i) slots_.resize(i + 1);
  return slots_[i];
}

void WarmSlots::Due(size_t i, bool rank, double now) {
  Slot& s = At(i);
  if (s.live) return;
  // A spare's slot already due stays due when then: the job's restarts
  // start no rank on it, so none of them is a start-up to keep clear of
  // (each restart of a failing job put it off again, and the spare that
  // took a node's place then started cold).
  if (!rank && s.due >= 0) return;
  s.due = late_ ? now + kAfterS : now;
}

std::vector<size_t> WarmSlots::Ready(double now) {
  std::vector<size_t> out;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.due < 0 || now < s.due) continue;
    s.due = -1;
    out.push_back(i);
  }
  return out;
}

void WarmSlots::Made(size_t i) {
  Slot& s = At(i);
  s.live = true;
  s.due = -1;
  s.gone.clear();
}

void WarmSlots::Gone(size_t i, std::string why) {
  Slot& s = At(i);
  s.live = false;
  s.gone = std::move(why);
}

bool WarmSlots::Take(size_t i, std::string* why) {
  Slot& s = At(i);
  const double due = s.due;
  s.due = -1;
  if (s.live) {
    s.live = false;
    s.gone.clear();
    return true;
  }
  if (!s.gone.empty())
    *why = s.gone;
  else if (due >= 0 && late_)
    *why = "its standby was not started yet (" + std::to_string(static_cast<int>(kAfterS)) +
           " s after the attempt's start: this shim cannot bring a standby back from the idle "
           "scheduling class)";
  else if (due >= 0)
    *why = "its standby was not started yet (the restart came as it was due)";
  else
    *why = "it has no standby";
  s.gone.clear();
  return false;
}

std::vector<size_t> WarmSlots::EndAll() {
  std::vector<size_t> out;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].live) out.push_back(i);
    slots_[i] = Slot{};
  }
  return out;
}

double WarmSlots::NextDeadline() const {
  double next = std::numeric_limits<double>::infinity();
  for (const Slot& s : slots_)
    if (s.due >= 0 && s.due < next) next = s.due;
  return next;
}

}  // namespace aml
