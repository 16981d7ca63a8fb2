// A job-wide channel that the supervisor serves from its own loop (the
// control plane, shim/control/plane.h): descriptors to watch and a deadline,
// what this node sees (output, its first failure, its ranks' stacks, its end),
// and orders back (collect stacks, stop the job). The supervisor stays the
// one event loop; the link never blocks and never signals a child itself.
#pragma once

#include <poll.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/flight/fr_dump.h"
#include "launch/link_order.h"
#include "launch/metrics/prom_text.h"
#include "launch/record_fence.h"

namespace aml {

class StoreHost;

// This node's first failing rank, as the summary describes it.
struct LocalFailure {
  int rank = 0;
  int exit_code = 0;         // what aml-shim exits with for it
  std::string status;        // "exited with status 7", "killed by signal 9 (SIGKILL)"
  double wall_time = 0;      // CLOCK_REALTIME seconds when it ended
  std::string summary;       // the summary block (failure_report.h)
  std::string failure_json;  // the same as failure.json's object
};

// One rank's stack, read when the job was judged hung.
struct RankStack {
  RankStack() = default;
  RankStack(int r, std::string t, std::string sig)
      : rank(r), text(std::move(t)), signature(std::move(sig)) {}
  int rank = 0;
  std::string text;       // the full dump (or why there is none)
  std::string signature;  // its innermost frames, one line; "" when none
  // Its flight record's summary (launch/flight/fr_dump.h), or why none.
  std::optional<FrSummary> fr;
  std::string fr_why;
  // The node's NCCL RAS line (launch/flight/nccl_ras.h), on its first
  // rank's stack only ("" for none).
  std::string ras;
};

// One rank's flight record, taken when a failure ended the attempt (from
// each rank still running, before it was ended): where it waited.
struct RankRecord {
  int rank = 0;
  std::optional<FrSummary> fr;  // none: fr_why says why
  std::string fr_why;
};

// This node's children all ended (an attempt of the job is over here).
struct NodeOutcome {
  int code = 0;                  // this node's exit code so far
  double first_output_wall = 0;  // CLOCK_REALTIME of its ranks' first output (0: none)
};

// What the node's supervisor (node_machine.h) tells the job and asks of it:
// the job's state machine, through the control plane, or the simulator's.
class JobChannel {
 public:
  virtual ~JobChannel() = default;
  // A child wrote output (called at most once per poll round).
  virtual void OnOutput(double now) = 0;
  // This node's first failure, before its teardown.
  virtual void OnChildFailed(const LocalFailure& f) = 0;
  // The stacks asked for by a CollectStacksOrder, one per child.
  virtual void OnStacks(const std::vector<RankStack>& stacks) = 0;
  // The flight records taken when a failure ended the attempt (one per
  // rank that ran; empty when none was asked): once per attempt.
  virtual void OnRecords(const std::vector<RankRecord>& records) = 0;
  // The straggler check's look `look` (a PaceLookOrder): each running rank's
  // entry times (empty when none could be read, or no rank runs here).
  virtual void OnPace(int64_t look, const std::vector<RankTimes>& times) {
    (void)look;
    (void)times;
  }
  // --warm-restart: this node's ranks of a restart started, `warm` of them
  // from their standbys and `cold` not (once per restart; none on a spare).
  virtual void OnWarmStarts(int warm, int cold) {
    (void)warm;
    (void)cold;
  }
  // Every child of this node ended (in this attempt).
  virtual void OnChildrenDone(const NodeOutcome& o) = 0;
  // aml-shim got terminating signal `sig` (the launcher stops the job), or
  // its launcher is gone (`why` says so; "" for a signal): the other shims
  // stop with it, with status 128+sig; leave, wait no more.
  virtual void OnShimSignalled(int sig, const std::string& why = "") = 0;
  // The supervisor may return: nothing more is owed to the job.
  virtual bool MayExit() const = 0;
  // True when this node prints its own first failure's summary; otherwise
  // one line says where the job's first failure is printed.
  virtual bool PrintsOwnFailure() const = 0;
  // The stamp of what this shim writes into --log-dir (launch/record_fence.h):
  // the root's term it knows of, who it is, and whether it holds the job
  // (the root, with a majority since its last pause: its failure.json is
  // the job's).
  virtual RecordStamp Stamp() const = 0;
  virtual std::optional<LinkOrder> TakeOrder() = 0;
  // --warm-restart: this node's store host (launch/store_host.h; it runs
  // rank 0), lent for the job: before a restart the root asks it to open
  // the next attempt's store.
  virtual void LendStoreHost(StoreHost* host) { (void)host; }
  // --metrics-addr: what the job knows, beside the node's (docs/metrics.md).
  virtual void AppendMetrics(PromText* out, double now) const {
    (void)out;
    (void)now;
  }
};

// The channel over descriptors that the supervisor serves from its loop.
class JobLink : public JobChannel {
 public:
  // Appends the descriptors to watch; OnPoll gets the same ones back.
  virtual void AddPollFds(std::vector<pollfd>* fds) = 0;
  virtual void OnPoll(const pollfd* fds, size_t n, double now) = 0;
  // When OnTimer must run next (CLOCK_MONOTONIC seconds).
  virtual double NextDeadline(double now) const = 0;
  virtual void OnTimer(double now) = 0;
};

}  // namespace aml
