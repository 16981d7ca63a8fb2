// The supervisor (supervisor_table.h): what each child's end was, and the
// node's report of a failure (the summary, --log-dir's files).
#include "launch/supervisor_table.h"

namespace aml {
namespace supervise {

ChildOutcome Supervisor::Outcome(size_t i) const {
  const Child& c = children_[i];
  ChildOutcome o;
  o.run_id = config_.run_id;
  o.rank = c.launch->rank;
  o.local_rank = c.launch->local_rank;
  o.node_rank = node_rank_;
  o.host = config_.host;
  o.argv = c.launch->argv;
  o.wait_status = machine_.status(i);
  o.runtime_s = machine_.ended(i) - machine_.started(i);
  o.stderr_tail = c.err_tail;
  if (!error_dir_.empty()) {
    if (auto recorded = ReadErrorFile(ErrorFilePath(error_dir_, c.launch->rank))) {
      o.exception = recorded->message;
      o.traceback = recorded->traceback;
    }
  }
  return o;
}

// What the job's end says here (aml-shim's exit code is the machine's).
void Supervisor::Report() {
  // The control plane stopped the job with its words (the job's first
  // failure from another node, the hang's roll-call, or one line saying where
  // they are printed), or this node's own first failure is the job's: its
  // summary, then (with --max-restarts) the attempts.
  const std::optional<StopOrder>& stop = machine_.stop();
  const std::optional<size_t> first = machine_.first_failure();
  const bool stop_says = stop && !stop->message.empty();
  if (stop_says || first) {
    std::optional<ChildOutcome> own;
    if (first) own = Outcome(*first);
    err_sink_.Write(stop_says ? stop->message : FormatFailureSummary(*own));
    // Where the other ranks waited: rank 0's verdict says it for the job; a
    // node alone, from its own ranks' records.
    std::string waited_json;
    if (stop) {
      err_sink_.Write(stop->waited_line);
      waited_json = stop->waited_json;
    } else if (!link_ && own) {
      std::vector<RankFlight> records;
      for (const RankRecord& r : machine_.records())
        records.push_back({r.rank, 0, 0, "", r.fr, r.fr_why});
      const Waited w = FindWaited(records, own->rank);
      err_sink_.Write(WaitedLine(own->rank, DescribeStatus(own->wait_status), w));
      waited_json = WaitedJson(own->rank, DescribeStatus(own->wait_status), w);
    }
    std::string json = stop ? stop->failure_json : "";
    if (json.empty() && own) json = FailureJson(*own);
    if (stop) {
      err_sink_.Write(stop->trailer);
      if (json.empty() && (!stop->attempts_json.empty() || !stop->retired_json.empty()))
        json = StopJson(config_.run_id, stop->exit_code, stop->message);
      json = WithAttempts(json, stop->attempts_json, stop->why_not);
      json = WithRetired(json, stop->retired_json);
      json = WithMember(json, "slow", stop->slow_json);
    }
    json = WithMember(json, "waited", waited_json);
    json = WithMember(json, "warm_restart", WarmRestartJson());
    const RecordStamp stamp = link_ ? link_->Stamp() : RecordStamp{};
    if (logs_ && stop && stop->no_record) {
      // This shim lost the job (no majority, or a newer root holds it): its
      // word goes to its own node's file, never to failure.json.
      if (json.empty()) json = StopJson(config_.run_id, stop->exit_code, stop->message);
      Status st = logs_->WriteNodeRecord(stamp.shim, Stamped(json, stamp));
      if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
    } else if (logs_ && !json.empty()) {
      bool kept = false;
      Status st = logs_->WriteFailure(json, stamp, &kept);
      if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
      if (kept && stamp.holder)
        LogInfo("--log-dir: " + logs_->path() + "/failure.json holds a newer root's record of the "
                "job; this shim's (term " + std::to_string(stamp.term) + ") is not written");
    }
  } else if (launcher_gone_) {
    LogInfo("stopped: " + config_.lifeline->What());
  } else if (machine_.shim_signal()) {
    // Stopped from outside (mpirun, Slurm, ^C): say so in one line; the
    // rank that failed first, if any, was on another node.
    std::string line = "stopped: aml-shim received " + SignalName(machine_.shim_signal()) +
                       " and forwarded it to its " + std::to_string(children_.size()) +
                       (children_.size() == 1 ? " child" : " children");
    if (const std::optional<size_t> stopped = machine_.first_stopped())
      line += "; rank " + std::to_string(children_[*stopped].launch->rank) +
              " ended first, with " + DescribeStatus(machine_.status(*stopped));
    LogInfo(line);
  }
  // The job's root saw it end well: its word stands over any record of an
  // old root or of a part cut off on the way (launch/record_fence.h).
  if (logs_ && link_ && machine_.ExitCode() == 0) {
    const RecordStamp stamp = link_->Stamp();
    Status st = logs_->WriteEndedWell(EndedWellJson(config_.run_id), stamp);
    if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
  }
  if (logs_ && !logs_->losses().empty()) {
    std::string all;
    for (const std::string& l : logs_->losses()) all += (all.empty() ? "" : ", ") + l;
    LogWarning("--log-dir " + logs_->path() + " is incomplete: " + all);
  }
}

}  // namespace supervise
}  // namespace aml
