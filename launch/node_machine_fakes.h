// The node machine's test doubles (node_machine_test.cc and
// node_machine_records_test.cc): a process table and a job side that
// record what the machine asks of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/node_machine.h"

namespace aml {
namespace node_test {

inline int Exited(int code) { return code << 8; }

// A process table that records what the machine asks of it.
struct FakeProcs : NodeProcs {
  std::vector<std::pair<size_t, int>> signals;  // (rank, signal)
  std::vector<size_t> aborted;
  int starts = 0, fail_start_at = -1;
  bool stragglers = false, output_open = false, groups_empty = true, probe_running = false;
  int straggler_signals = 0, groups_killed = 0, restarts_begun = 0;

  // --warm-restart: standbys made (by child), ended, whether the ranks'
  // modules are known, and whether a standby refuses its order.
  std::vector<size_t> made, ended_standbys, from_standby;
  bool refuse = false;
  std::string cannot_make;  // why MakeStandby fails ("": it makes one)

  bool Start(size_t child, const RestartOrder*, WarmStart* warm, int* code) override {
    if (starts++ == fail_start_at) {
      *code = 127;
      return false;
    }
    if (warm && warm->from_standby) {
      if (refuse) {
        warm->from_standby = false;
        warm->cold = "it refused";
      } else {
        from_standby.push_back(child);
      }
    }
    return true;
  }
  std::string MakeStandby(size_t child) override {
    if (cannot_make.empty()) made.push_back(child);
    return cannot_make;
  }
  void EndStandby(size_t child) override { ended_standbys.push_back(child); }
  void Signal(size_t child, int sig) override { signals.emplace_back(child, sig); }
  void Abort(size_t child) override { aborted.push_back(child); }
  bool SignalStragglers(int sig) override {
    (void)sig;
    ++straggler_signals;
    return stragglers;
  }
  bool StragglersLeft() override { return stragglers; }
  bool OutputOpen() const override { return output_open; }
  bool GroupsEmpty() override { return groups_empty; }
  void KillGroups() override { ++groups_killed; }
  // The flight records: none by default (done at once), else until `dumps_until`.
  int dumps_started = 0;
  double dumps_until = -1;
  bool probed_while_dumping = false;
  int64_t progress = 0;
  int answered = 0;
  std::vector<RankCpu> starting;  // the starting ranks' CPU time (none: none starts)
  std::vector<RankCpu> StartingCpu() const override { return starting; }
  void StartDumps(double, DumpAsk ask) override {
    ++dumps_started;
    asks.push_back(ask);
  }
  std::vector<DumpAsk> asks;
  bool DumpsDone(double now) override { return now >= dumps_until; }
  int dumps_ended = 0;  // last looks with every rank gone (what is waited for settled)
  void DumpsEnded(double now) override {
    ++dumps_ended;
    DumpsDone(now);
  }
  double DumpsNext(double now) const override { return std::max(now, dumps_until); }
  std::vector<RankTimes> times;
  DumpResult Dumps() override {
    DumpResult r;
    if (!asks.empty() && asks.back() == DumpAsk::kRecords) {
      ++records_taken;
      r.records = {{0, std::nullopt, "no pipe"}};
    }
    r.progress = progress;
    r.answered = answered;
    r.times = times;
    return r;
  }
  void StartProbe() override {
    probe_running = true;
    probed_while_dumping = probed_while_dumping || dumps_until > 0;
  }
  bool ProbeRunning() const override { return probe_running; }
  bool ProbeDone(double now) override { return !probe_running || now >= 10; }
  double ProbeDeadline() const override { return 10; }
  void FinishProbe() override { probe_running = false; }
  LocalFailure Failure(size_t child) override {
    LocalFailure f;
    f.rank = static_cast<int>(child);
    f.exit_code = 7;
    return f;
  }
  std::vector<RankStack> Stacks() override { return {{0, "stack", "sig"}}; }
  int records_taken = 0;
  double FirstOutputWall() const override { return 0; }
  void TermSent(bool) override {}
  void BeginRestart(const RestartOrder&, bool) override { ++restarts_begun; }
  int SignalsOf(int sig) const {
    int n = 0;
    for (const auto& [c, s] : signals) n += s == sig;
    return n;
  }
};

// The job's side: orders to hand out, what it was told.
struct FakeJob : JobChannel {
  std::vector<LinkOrder> orders;
  int failures = 0, stacks = 0, done = 0, signalled = 0, outputs = 0;
  bool may_exit = true;
  void OnOutput(double) override { ++outputs; }
  void OnChildFailed(const LocalFailure&) override { ++failures; }
  void OnStacks(const std::vector<RankStack>&) override { ++stacks; }
  void OnRecords(const std::vector<RankRecord>& r) override { records.push_back(r.size()); }
  std::vector<size_t> records;
  // --warm-restart: each restart's ranks' starts said (warm, cold).
  void OnWarmStarts(int warm, int cold) override { warm_starts.emplace_back(warm, cold); }
  std::vector<std::pair<int, int>> warm_starts;
  // Each look answered: its number and how many ranks' times.
  std::vector<std::pair<int64_t, size_t>> paces;
  void OnPace(int64_t look, const std::vector<RankTimes>& t) override {
    paces.emplace_back(look, t.size());
  }
  void OnChildrenDone(const NodeOutcome&) override { ++done; }
  void OnShimSignalled(int, const std::string&) override { ++signalled; }
  bool MayExit() const override { return may_exit; }
  bool PrintsOwnFailure() const override { return true; }
  RecordStamp Stamp() const override { return {}; }
  std::optional<LinkOrder> TakeOrder() override {
    if (orders.empty()) return std::nullopt;
    LinkOrder o = orders.front();
    orders.erase(orders.begin());
    return o;
  }
};

inline NodeConfig Two() { return NodeConfig{2, 3}; }

// The hang's verdict reaches the node at `now`: collect the stacks.
inline void OrderCollect(NodeMachine* m, FakeJob* job, double now) {
  job->orders.push_back(CollectStacksOrder{});
  m->TakeOrders(now);
}

}  // namespace node_test
}  // namespace aml
