// A JobMachine's ports for unit tests: every frame it sends, recorded, and
// what it asks of its links, set by the test (job_machine_test.cc,
// job_spares_test.cc, job_heir_test.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shim/control/job_machine.h"

namespace aml {

struct FakePorts : JobPorts {
  std::vector<Msg> up, down;
  double output = 0;
  bool children_done = true, linked = false, flushed = true, parent_closed = false;
  void SendUp(const std::string& f) override { up.push_back(*Msg::Decode(f)); }
  void SendDown(const std::string& f) override { down.push_back(*Msg::Decode(f)); }
  double SubtreeOutput() const override { return output; }
  void ResetOutput(double now) override { output = now; }
  double HangSlackS() const override { return 1; }
  bool ChildrenAllDone() const override { return children_done; }
  bool ChildrenLinked() const override { return linked; }
  bool Flushed() const override { return flushed; }
  bool ParentClosed() const override { return parent_closed; }
  double WallNow() const override { return wall; }
  int FreePort() const override { return 4242; }
  std::vector<int> Below(int shim) const override {
    auto it = below.find(shim);
    return it == below.end() ? std::vector<int>{} : it->second;
  }
  int NameHeir() override {
    ++heirs_named;
    return heir;
  }
  void SendTo(int shim, const std::string& f) override { to.emplace_back(shim, f); }
  std::vector<int> Parents() const override { return parents; }
  std::map<int, std::vector<int>> below;
  double wall = 1000;
  // A new root (job_heir.cc): the heir the links name, how often, the
  // frames sent to one child alone, the tree.
  int heir = -1, heirs_named = 0;
  std::vector<std::pair<int, std::string>> to;  // (shim, frame)
  std::vector<int> parents;
};

// A shim of `size` with one rank, its NODE_RANK its own rank, --grace 2;
// with `spares`, the last ones spares.
inline JobConfig TestConfig(int rank, int size, int max_restarts = 0, int spares = 0) {
  JobConfig c;
  c.rank = rank;
  c.size = size;
  c.node = rank;
  c.host = "h" + std::to_string(rank);
  c.ranks = {rank};
  c.world_ranks = size - spares;
  c.grace_s = 2;
  c.max_restarts = max_restarts;
  c.spares = spares;
  return c;
}

// Frames arrive encoded; the machine reads them decoded.
inline void FromChild(JobMachine* m, const Msg& msg, double now) {
  m->OnFromChild(msg.Encode(), *Msg::Decode(msg.Encode()), now);
}
inline void FromParent(JobMachine* m, const Msg& msg, double now) {
  m->OnFromParent(msg.Encode(), *Msg::Decode(msg.Encode()), now);
}

// The types of the frames sent, in order.
inline std::vector<std::string> Types(const std::vector<Msg>& frames) {
  std::vector<std::string> out;
  for (const Msg& m : frames) out.push_back(m.type());
  return out;
}

// The next order `m` gives, when it is of kind O (else none: that order is
// taken all the same).
template <class O>
std::optional<O> Next(JobMachine* m) {
  auto o = m->TakeOrder();
  if (!o || !std::holds_alternative<O>(*o)) return std::nullopt;
  return std::get<O>(std::move(*o));
}

// The orders `m` gave until now: the last of kind O (none when none was).
template <class O>
std::optional<O> LastOf(JobMachine* m) {
  std::optional<O> last;
  for (auto o = m->TakeOrder(); o; o = m->TakeOrder())
    if (auto* x = std::get_if<O>(&*o)) last = *x;
  return last;
}

// The orders `m` gave until now: the last, when it was a stop (else none).
inline std::optional<StopOrder> LastOrder(JobMachine* m) {
  std::optional<LinkOrder> last;
  for (auto o = m->TakeOrder(); o; o = m->TakeOrder()) last = std::move(o);
  if (!last || !std::holds_alternative<StopOrder>(*last)) return std::nullopt;
  return std::get<StopOrder>(*last);
}

}  // namespace aml
