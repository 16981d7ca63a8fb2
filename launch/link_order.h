// The control plane's orders to a node (launch/job_link.h: JobChannel::
// TakeOrder), one type per kind: each carries only what its kind needs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace aml {

// Read every running rank's stack (a hang's roll-call).
struct CollectStacksOrder {};

// End every child (teardown) and wait: the job restarts. With `records`, a
// failure's halt: the running ranks' flight records are taken first
// (--dump-timeout at most), then they are ended.
struct EndAttemptOrder {
  bool records = false;
};

// The straggler check's look `look`: the running ranks' flight records are
// read and their entry times given back (JobChannel::OnPace).
struct PaceLookOrder {
  int64_t look = -1;
};

// Every child ended: start them all again.
struct RestartOrder {
  // The restart (1, 2, ...), the new MASTER_PORT, what to print before the
  // marker line `line` (another node's failure summary, or the roll-call),
  // and whether this node prints its own first failure's summary first.
  int restart = 0, master_port = 0;
  std::string message, line;
  bool print_own_failure = false;
  // With --spares (shim/control/roster.h): this shim's NODE_RANK in the
  // next attempt (-1: it starts no ranks, a spare or retired), and NODE_RANK
  // 0's address when it moved ("": the job's MASTER_ADDR).
  bool roster = false;
  int node_rank = -1;
  std::string master_addr;
  // --warm-restart: the attempt's store is open already, held by the store
  // host of NODE_RANK 0's node (launch/store_host.h): every rank is its
  // client (TORCHELASTIC_USE_AGENT_STORE=True).
  bool agent_store = false;
};

// The job ends.
struct StopOrder {
  // The exit code every node uses, the one line this node prints (or the
  // whole summary, on the node that prints the job's first failure), and
  // failure.json's object for --log-dir ("" to leave it alone).
  int exit_code = 0;
  std::string message;
  std::string failure_json;
  // Printed after the summary (the attempts), and failure.json's "attempts"
  // array ("" for none) with why the job was not restarted.
  std::string trailer, attempts_json, why_not;
  // With --spares: failure.json's "retired" array ("" for none).
  std::string retired_json;
  // With --straggler-check: failure.json's "slow" array, the nodes named
  // slow ("" for none).
  std::string slow_json;
  // This shim writes nothing of the job into --log-dir (a root that stepped
  // down: its heir's side holds the job; shim/control/job_heir.cc).
  bool no_record = false;
  // After a failure: where the other ranks waited, one line printed after
  // the summary, and failure.json's "waited" object ("" for none:
  // launch/flight/waited.h).
  std::string waited_line, waited_json;

  static StopOrder Of(int code, std::string message, std::string failure_json) {
    StopOrder o;
    o.exit_code = code;
    o.message = std::move(message);
    o.failure_json = std::move(failure_json);
    return o;
  }
};

using LinkOrder =
    std::variant<CollectStacksOrder, EndAttemptOrder, PaceLookOrder, RestartOrder, StopOrder>;

}  // namespace aml
