#include "shim/control/roster.h"

#include <algorithm>
#include <cstdlib>

#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/text_list.h"
#include "shim/control/shim_name.h"

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
  Retirement r{shim, host, reason, attempt, NodeOf(shim), ""};
  retirements_.push_back(r);
  spares_.erase(std::remove(spares_.begin(), spares_.end(), shim), spares_.end());
  if (streak_shim_ == shim) streak_shim_ = -1, streak_ = 0;
  if (r.node < 0) return false;
  holder_[static_cast<size_t>(r.node)] = -1;
  node_of_[static_cast<size_t>(shim)] = -1;
  return true;
}

const Retirement* Roster::SlowRetirement(int node) const {
  for (auto it = retirements_.rbegin(); it != retirements_.rend(); ++it)
    if (it->node == node && it->reason.rfind(kSlowReason, 0) == 0) return &*it;
  return nullptr;
}

bool Roster::GiveBack(int shim, const std::string& why) {
  for (Retirement& r : retirements_) {
    if (r.shim != shim || !r.given_back.empty() || r.reason.rfind(kSlowReason, 0) != 0)
      continue;
    r.given_back = why.empty() ? "given back" : why;
    retired_.erase(shim);
    spares_.insert(std::upper_bound(spares_.begin(), spares_.end(), shim), shim);
    return true;
  }
  return false;
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

// Runs of consecutive shims are written "a-b": a job of 100,000 nodes that
// moved one NODE_RANK is "0-133,99999,135-99998", not 590 KB in every
// restart order that crosses the tree.
std::string Roster::Encode() const { return Runs(holder_); }

std::string Roster::Runs(const std::vector<int>& list) {
  std::string out;
  for (size_t i = 0; i < list.size();) {
    size_t j = i;
    while (list[i] >= 0 && j + 1 < list.size() && list[j + 1] == list[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(list[i]);
    if (j > i) out += "-" + std::to_string(list[j]);
    i = j + 1;
  }
  return out;
}

namespace {

// Each item of the list in turn: f(first, last) for "a-b", f(a, a) for "a",
// f(-1, -1) for a vacant NODE_RANK; false (f not called again) when an item
// is malformed or the list would name more than 2^24 NODE_RANKs.
template <typename F>
bool EachRun(const std::string& holders, F f) {
  if (holders.empty()) return false;
  constexpr long kMax = 1L << 30, kMaxNodes = 1L << 24;
  long count = 0;
  for (size_t start = 0; start <= holders.size();) {
    const size_t comma = std::min(holders.find(',', start), holders.size());
    const std::string item = holders.substr(start, comma - start);
    start = comma + 1;
    if (item == "-1") {
      if (++count > kMaxNodes) return false;
      f(-1L, -1L);
      continue;
    }
    const size_t dash = item.find('-');
    auto number = [&](const std::string& t, long* v) {
      if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 10)
        return false;
      *v = std::strtol(t.c_str(), nullptr, 10);
      return *v <= kMax;
    };
    long a = 0, b = 0;
    if (!number(item.substr(0, dash), &a)) return false;
    if (dash == std::string::npos)
      b = a;
    else if (!number(item.substr(dash + 1), &b) || b < a)
      return false;
    count += b - a + 1;
    if (count > kMaxNodes) return false;
    f(a, b);
  }
  return true;
}

}  // namespace

std::vector<int> Roster::Decode(const std::string& holders) {
  std::vector<int> out;
  const bool ok = EachRun(holders, [&](long a, long b) {
    if (a < 0) return out.push_back(-1);
    for (long v = a; v <= b; ++v) out.push_back(static_cast<int>(v));
  });
  if (!ok) out.clear();
  return out;
}

int Roster::NodeIn(const std::string& holders, int shim) {
  long index = 0, found = -1;
  const bool ok = EachRun(holders, [&](long a, long b) {
    if (found < 0 && a >= 0 && shim >= a && shim <= b) found = index + (shim - a);
    index += a < 0 ? 1 : b - a + 1;
  });
  if (!ok) return -2;
  return static_cast<int>(found);
}

std::string Roster::RetiredJson() const {
  std::string out = "[";
  for (const Retirement& r : retirements_) {
    if (out.size() > 1) out += ",";
    out += "{\"shim\":" + std::to_string(r.shim) +
           ",\"node\":" + (r.node >= 0 ? std::to_string(r.node) : "null") +
           ",\"host\":" + JsonQuote(r.host) + ",\"reason\":" + JsonQuote(r.reason) +
           ",\"attempt\":" + std::to_string(r.attempt) +
           (r.given_back.empty() ? "" : ",\"given_back\":" + JsonQuote(r.given_back)) + "}";
  }
  return out + "]";
}

std::string Roster::RetiredText() const {
  std::string out;
  for (const Retirement& r : retirements_)
    out += "aml-shim:   " +
           (r.node >= 0 ? "NODE_RANK " + std::to_string(r.node) : std::string("a spare")) +
           ", " + ShimName(r.shim, r.host) + ", retired in attempt " + std::to_string(r.attempt) +
           ": " + EscapeControl(r.reason) +
           (r.given_back.empty() ? "" : "; given back as a spare: " + EscapeControl(r.given_back)) +
           "\n";
  return out;
}

std::string Roster::Save() const {
  return "{\"holders\":" + JsonQuote(Encode()) + ",\"spares\":" + JsonQuote(Runs(spares_)) +
         ",\"retired\":" + RetiredJson() + ",\"streak\":[" + std::to_string(streak_shim_) + "," +
         std::to_string(streak_) + "]}";
}

bool Roster::Load(const JsonValue& v) {
  auto str = [&](const char* key) -> const std::string* {
    const JsonValue* x = v.Find(key);
    return x && x->kind == JsonValue::Kind::kString ? &x->text : nullptr;
  };
  auto num = [](const JsonValue* x, long fallback) {
    return x && x->kind == JsonValue::Kind::kNumber ? std::strtol(x->text.c_str(), nullptr, 10)
                                                    : fallback;
  };
  const std::string* holders = str("holders");
  const std::string* spares = str("spares");
  const JsonValue* retired = v.Find("retired");
  const JsonValue* streak = v.Find("streak");
  if (!holders || !spares || !retired || retired->kind != JsonValue::Kind::kArray) return false;
  const std::vector<int> h = Decode(*holders);
  const std::vector<int> sp = spares->empty() ? std::vector<int>{} : Decode(*spares);
  const int shims = static_cast<int>(node_of_.size());
  if (h.size() != holder_.size() || (!spares->empty() && sp.empty())) return false;
  for (int x : h)
    if (x >= shims) return false;
  for (int x : sp)
    if (x < 0 || x >= shims) return false;
  std::vector<Retirement> rs;
  for (const JsonValue& r : retired->items) {
    if (r.kind != JsonValue::Kind::kObject) return false;
    Retirement one;
    one.shim = static_cast<int>(num(r.Find("shim"), -1));
    one.node = static_cast<int>(num(r.Find("node"), -1));
    one.attempt = static_cast<int>(num(r.Find("attempt"), 0));
    const JsonValue* host = r.Find("host");
    const JsonValue* reason = r.Find("reason");
    one.host = host && host->kind == JsonValue::Kind::kString ? host->text : "";
    one.reason = reason && reason->kind == JsonValue::Kind::kString ? reason->text : "";
    const JsonValue* back = r.Find("given_back");
    one.given_back = back && back->kind == JsonValue::Kind::kString ? back->text : "";
    if (one.shim < 0 || one.shim >= shims) return false;
    rs.push_back(std::move(one));
  }
  holder_ = h;
  node_of_.assign(node_of_.size(), -1);
  for (size_t n = 0; n < holder_.size(); ++n)
    if (holder_[n] >= 0) node_of_[static_cast<size_t>(holder_[n])] = static_cast<int>(n);
  spares_ = sp;
  retirements_ = std::move(rs);
  retired_.clear();
  for (const Retirement& r : retirements_)
    if (r.given_back.empty()) retired_.insert(r.shim);
  streak_shim_ = -1;
  streak_ = 0;
  if (streak && streak->kind == JsonValue::Kind::kArray && streak->items.size() == 2) {
    streak_shim_ = static_cast<int>(num(&streak->items[0], -1));
    streak_ = static_cast<int>(num(&streak->items[1], 0));
  }
  return true;
}

}  // namespace aml
