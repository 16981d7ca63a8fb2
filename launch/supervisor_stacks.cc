// The supervisor (supervisor_table.h): a hang's stacks from every rank (the readers from outside, then
// SIGABRT), the ranks' flight records, and the node's metrics.
#include "launch/supervisor_table.h"

namespace aml {
namespace supervise {

// ---- Stacks (a hang's roll-call)

// The readers from outside, while every rank still stands where it hung.
// Their output is read by this loop (Poll), which meanwhile goes on
// forwarding signals, reading the ranks' output and serving the plane.
void Supervisor::StartProbe() {
  std::vector<pid_t> pids;
  for (size_t i = 0; i < children_.size(); ++i)
    if (machine_.running(i)) pids.push_back(children_[i].pid);
  probe_.Start(pids, kProbeS);
}

void Supervisor::StartDumps(double now, DumpAsk ask) {
  dump_ask_ = ask;
  const bool verdict = ask == DumpAsk::kVerdict;
  std::vector<FlightHarvest::Ask> asks;
  for (size_t i = 0; i < children_.size() && node_rank_ >= 0; ++i) {
    const Child& c = children_[i];
    if (!c.launch) continue;
    asks.push_back({c.launch->rank, flight_ ? c.fr : std::nullopt, machine_.running(i)});
  }
  harvest_.Start(asks, now, config_.dump_timeout_s, ask == DumpAsk::kLook);
  // NCCL's RAS socket, where this node's NCCL keeps one (NCCL 2.24 on).
  if (verdict && flight_ && !asks.empty() && !launches_.empty()) {
    const EnvSnapshot& env = *launches_[0].base_env;
    if (env.GetOr("NCCL_RAS_ENABLE", "1") != "0")
      ras_.Start(env.GetOr("NCCL_RAS_ADDR", "localhost:28028"), kRasTimeoutS);
  }
}

// What came (node_machine.h): a failure's records, each kept in --log-dir as
// for a hang; a look's progress and entry times; a verdict's come with the
// stacks.
DumpResult Supervisor::Dumps() {
  DumpResult r;
  if (dump_ask_ == DumpAsk::kRecords) {
    if (node_rank_ < 0) return r;  // a spare's: no ranks of the job here
    for (const FlightHarvest::Outcome& o : harvest_.outcomes()) {
      r.records.push_back({o.rank, o.fr, o.why});
      if (!o.fr) LogVerbose("rank " + std::to_string(o.rank) + ": no flight record: " + o.why);
      KeepDump(o);
    }
  } else if (dump_ask_ == DumpAsk::kLook) {
    for (const FlightHarvest::Outcome& o : harvest_.outcomes()) {
      if (!o.fr) continue;
      ++r.answered;
      for (Child& c : children_)
        if (c.launch && c.launch->rank == o.rank)
          for (const FrGroup& g : o.fr->groups) c.entered = std::max(c.entered, g.enqueued);
      for (const FrGroup& g : o.fr->groups) r.progress += std::max<int64_t>(0, g.completed);
      if (!o.times.empty()) r.times.push_back({o.rank, o.times});
    }
  }
  return r;
}

// A rank is starting while its flight-recorder pipe is not there (torch,
// or aml-shim's agent, makes it as its process group is up) and its agent
// said nothing but that it is still starting: an agent's other word (torch
// without a recorder, a dump that failed) comes once the group is up. With
// its pipe there, it is still starting until a look's record shows it
// entered a collective (it builds its model, torch imports lazily: on a
// busy node, 30 s and more before DDP's first broadcast; a record not read
// yet, as when its recorder's thread got no core in time, counts as none).
std::vector<NodeProcs::RankCpu> Supervisor::StartingCpu() const {
  std::vector<RankCpu> starting;
  for (size_t i = 0; i < children_.size(); ++i) {
    const Child& c = children_[i];
    if (!flight_ || !c.fr || !machine_.running(i)) continue;
    struct stat st {};
    const bool piped = lstat(c.fr->pipe.c_str(), &st) == 0 || errno != ENOENT;
    if (piped && c.entered > 0) continue;
    const std::string why = ReadNoFollow(AT_FDCWD, c.fr->why, sizeof kStillStartingWhy);
    if (!piped && !why.empty() && why.rfind(kStillStartingWhy, 0) != 0) continue;
    if (auto cpu = ProcCpuSeconds(c.pid)) starting.push_back({i, *cpu});
  }
  return starting;
}

void Supervisor::FinishProbe() {
  if (!probe_.running()) return;
  for (ProbedStack& s : probe_.Finish())
    for (Child& c : children_)
      if (c.pid == s.pid) c.probed = std::move(s);
}

void Supervisor::DrainStderr(Child& c) {
  while (c.err.fd >= 0) {
    pollfd p{c.err.fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) break;
    ReadStream(c.err, Now());
  }
}

// faulthandler (PYTHONFAULTHANDLER=1) printed every thread's stack on
// SIGABRT, to the rank's stderr, which aml-shim reads.
std::vector<RankStack> Supervisor::Stacks() {
  std::vector<RankStack> stacks;
  // A spare, or a node retired (--spares), runs no ranks in this attempt:
  // it reports none (the ranks it ran before are another node's now).
  if (node_rank_ < 0) return stacks;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (!c.launch) continue;  // never started
    DrainStderr(c);
    RankStack r;
    r.rank = c.launch->rank;
    auto dump = ParseFaulthandlerDump(c.err_tail);
    if (!c.probed.frames.empty()) {
      // py-spy or the native frames; faulthandler's dump follows, if any.
      r.text = c.probed.tool + ":\n" + c.probed.text + (dump ? "\n" + dump->text : "");
      r.signature = StackSignature(c.probed.frames);
    } else if (dump) {
      r.text = dump->text;
      r.signature = StackSignature(dump->main_thread);
      // No Python frame left: the rank was ending by an exception as
      // SIGABRT came (its collective raised when a rank of another node was
      // ended first): where it was is its traceback.
      const std::vector<StackFrame> raised =
          dump->main_thread.empty()
              ? ParseLastTraceback(std::string_view(c.err_tail).substr(
                    0, c.err_tail.rfind("Fatal Python error")))
              : std::vector<StackFrame>{};
      if (!raised.empty()) {
        r.signature = StackSignature(raised);
        r.text = "its last traceback (it was ending by an exception as SIGABRT came):\n" +
                 r.text;
      }
      if (r.signature.empty()) r.signature = "no Python frame in its main thread";
    } else if (!c.probed.tool.empty() || !c.probed.text.empty()) {
      r.text = "no stack: " + (c.probed.tool.empty() ? "" : c.probed.tool + " printed no frame of "
                                                           "the main thread: ") +
               c.probed.text;
    } else if (machine_.ended_before_collect(i)) {
      r.text = "no stack: it had already ended (" + DescribeStatus(machine_.status(i)) + ")\n";
    } else if (machine_.running(i)) {
      r.text = "no stack: the rank did not end within " +
               FormatNumber(NodeMachine::kCollectS, "%.0f") +
               " s of SIGABRT (blocked in the kernel, or it handles SIGABRT)\n";
    } else {
      r.text = "no Python stack: it ended " + DescribeStatus(machine_.status(i)) +
               " without a faulthandler dump (not Python, or PYTHONFAULTHANDLER was "
               "turned off)\n";
    }
    if (logs_) {
      Status st = logs_->WriteStack(r.rank, r.text);
      if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
    }
    KeepFlightRecord(&r);
    stacks.push_back(std::move(r));
  }
  if (!stacks.empty() && ras_.Done()) {
    stacks[0].ras = ras_.line();
    if (!ras_.why().empty()) LogVerbose("NCCL RAS: " + ras_.why());
  }
  return stacks;
}

// The rank's flight record, as the harvest left it; its dump kept in
// --log-dir as torchfrtrace reads it (FlightRecordName).
void Supervisor::KeepFlightRecord(RankStack* r) {
  for (const FlightHarvest::Outcome& o : harvest_.outcomes()) {
    if (o.rank != r->rank) continue;
    r->fr = o.fr;
    r->fr_why = o.why;
    return KeepDump(o);
  }
}

void Supervisor::KeepDump(const FlightHarvest::Outcome& o) {
  if (!logs_ || o.dump.empty()) return;
  const std::string dump = ReadNoFollow(AT_FDCWD, o.dump, kMaxFrDump);
  Status st = logs_->KeepFile(FlightRecordName(machine_.restarts() + 1, o.rank), dump);
  if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
}

// ---- Metrics (--metrics-addr, docs/metrics.md)

// This node's, then the job's as its control plane knows it. No secret and
// nothing from the environment: names, counts, states, the ranks' statuses.
std::string Supervisor::MetricsText() const {
  PromText t;
  const double now = Now();
  t.Family("aml_shim_info", "gauge", "1, labelled with this shim's host, NODE_RANK and version");
  t.Sample("aml_shim_info", {{"host", config_.host}, {"node_rank", std::to_string(node_rank_)},
                             {"version", kVersion}}, 1);
  t.Family("aml_shim_node_state", "gauge", "1 for the state this node's supervisor is in");
  t.Sample("aml_shim_node_state", {{"state", NodeStateName(machine_.state())}}, 1);
  t.Family("aml_shim_attempt", "gauge", "the attempt this node runs (1, then 2 after a restart)");
  t.Sample("aml_shim_attempt", machine_.restarts() + 1);
  t.Family("aml_shim_rank_running", "gauge", "1 while the rank runs in this attempt");
  std::vector<std::pair<int, double>> codes;
  for (size_t i = 0; i < children_.size(); ++i) {
    if (!children_[i].launch || node_rank_ < 0) continue;
    const std::string rank = std::to_string(children_[i].launch->rank);
    t.Sample("aml_shim_rank_running", {{"rank", rank}}, machine_.running(i) ? 1 : 0);
    if (!machine_.running(i) && machine_.ended(i) > 0)
      codes.emplace_back(children_[i].launch->rank, ExitCodeFor(machine_.status(i)));
  }
  t.Family("aml_shim_rank_exit_code", "gauge",
           "the exit code aml-shim gives for the rank's end in this attempt (absent while it runs)");
  for (const auto& [rank, code] : codes)
    t.Sample("aml_shim_rank_exit_code", {{"rank", std::to_string(rank)}}, code);
  t.Family("aml_shim_output_age_seconds", "gauge", "seconds since a rank of this node last wrote");
  t.Sample("aml_shim_output_age_seconds", std::max(0.0, now - machine_.last_output()));
  // The last look at the ranks' flight records (with the recorder).
  t.Family("aml_shim_rank_collectives_completed", "gauge",
           "the last collective the rank completed in each process group, at the last look at "
           "its flight record");
  for (const FlightHarvest::Outcome& o : harvest_.outcomes())
    if (o.fr)
      for (const FrGroup& g : o.fr->groups)
        t.Sample("aml_shim_rank_collectives_completed",
                 {{"rank", std::to_string(o.rank)}, {"group", g.pg}, {"desc", g.desc}},
                 static_cast<double>(std::max<int64_t>(0, g.completed)));
  if (warm_.on()) {
    t.Family("aml_shim_warm_standby_resident_bytes", "gauge",
             "resident memory of the standby interpreter of the node's local rank (--warm-restart; "
             "absent while it has none)");
    for (const auto& [slot, bytes] : warm_.Resident())
      t.Sample("aml_shim_warm_standby_resident_bytes", {{"local_rank", std::to_string(slot)}},
               bytes);
  }
  if (link_) link_->AppendMetrics(&t, now);
  return t.str();
}

// ---- Restarts (--max-restarts)

}  // namespace supervise
}  // namespace aml
