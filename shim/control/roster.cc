#include "shim/control/roster.h"

#include <algorithm>
#include <cstdlib>

#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/text_list.h"
#include "shim/control/job_machine.h"

namespace aml {

Roster::Roster(int shims, int spares) {
  spares = std::clamp(spares, 0, std::max(0, shims - 1));
  node_of_.assign(static_cast<size_t>(std::max(0, shims)), -1);
  for (int s = 0; s < shims - spares; ++s) {
    holder_.push_back(s);
    node_of_[static_cast<size_t>(s)] = s;
  }
  for (int s = shims - spares; s < shims; ++s) spares_.push_back(s);
}

int Roster::NodeOf(int shim) const {
  return shim >= 0 && static_cast<size_t>(shim) < node_of_.size()
             ? node_of_[static_cast<size_t>(shim)]
             : -1;
}

std::vector<int> Roster::Spares() const { return spares_; }

std::vector<int> Roster::Holders() const {
  std::vector<int> out;
  for (int h : holder_)
    if (h >= 0) out.push_back(h);
  return out;
}

int Roster::Vacant() const {
  return static_cast<int>(std::count(holder_.begin(), holder_.end(), -1));
}

bool Roster::Retire(int shim, const std::string& host, const std::string& reason, int attempt) {
  if (shim < 0 || retired_.count(shim)) return false;
  retired_.insert(shim);
  Retirement r{shim, host, reason, attempt, NodeOf(shim)};
  retirements_.push_back(r);
  spares_.erase(std::remove(spares_.begin(), spares_.end(), shim), spares_.end());
  if (streak_shim_ == shim) streak_shim_ = -1, streak_ = 0;
  if (r.node < 0) return false;
  holder_[static_cast<size_t>(r.node)] = -1;
  node_of_[static_cast<size_t>(shim)] = -1;
  return true;
}

bool Roster::Fill() {
  if (Vacant() > static_cast<int>(spares_.size())) return false;
  for (size_t n = 0; n < holder_.size(); ++n)
    if (holder_[n] < 0) {
      holder_[n] = spares_.front();
      node_of_[static_cast<size_t>(holder_[n])] = static_cast<int>(n);
      spares_.erase(spares_.begin());
    }
  return true;
}

int Roster::NoteFirstFailure(int shim) {
  if (shim < 0) {
    streak_shim_ = -1;
    streak_ = 0;
    return 0;
  }
  if (shim == streak_shim_) {
    ++streak_;
  } else {
    streak_shim_ = shim;
    streak_ = 1;
  }
  return streak_;
}

int Roster::Streak(int shim) const { return shim == streak_shim_ ? streak_ : 0; }

std::string Roster::Encode() const {
  std::string out;
  for (int h : holder_) out += (out.empty() ? "" : ",") + std::to_string(h);
  return out;
}

std::vector<int> Roster::Decode(const std::string& holders) {
  std::vector<int> out;
  size_t start = 0;
  while (!holders.empty() && start <= holders.size()) {
    const size_t comma = std::min(holders.find(',', start), holders.size());
    const std::string item = holders.substr(start, comma - start);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < -1 || v > 1 << 30) return {};
    out.push_back(static_cast<int>(v));
    start = comma + 1;
  }
  return out;
}

int Roster::NodeIn(const std::string& holders, int shim) {
  const std::vector<int> list = Decode(holders);
  if (list.empty()) return -2;
  for (size_t n = 0; n < list.size(); ++n)
    if (list[n] == shim) return static_cast<int>(n);
  return -1;
}

std::string Roster::RetiredJson() const {
  std::string out = "[";
  for (const Retirement& r : retirements_) {
    if (out.size() > 1) out += ",";
    out += "{\"shim\":" + std::to_string(r.shim) +
           ",\"node\":" + (r.node >= 0 ? std::to_string(r.node) : "null") +
           ",\"host\":" + JsonQuote(r.host) + ",\"reason\":" + JsonQuote(r.reason) +
           ",\"attempt\":" + std::to_string(r.attempt) + "}";
  }
  return out + "]";
}

std::string Roster::RetiredText() const {
  std::string out;
  for (const Retirement& r : retirements_)
    out += "aml-shim:   " +
           (r.node >= 0 ? "NODE_RANK " + std::to_string(r.node) : std::string("a spare")) +
           ", " + ShimName(r.shim, r.host) + ", retired in attempt " + std::to_string(r.attempt) +
           ": " + EscapeControl(r.reason) + "\n";
  return out;
}

}  // namespace aml
