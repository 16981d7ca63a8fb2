// NCCL's RAS (reliability, availability, serviceability; NCCL 2.24 on, on
// by default): each node's NCCL answers on a local socket (NCCL_RAS_ADDR,
// localhost:28028) with what it knows of every communicator of the job: its
// ranks, those it cannot reach (missing: dead peers), their errors and how
// many collectives of each kind each rank ran. At a hang's verdict each
// shim asks once (docs/control-plane.md, "Naming the culprit"); what it
// says goes into the roll-call beside the flight records' culprit.
//
// The plain-text protocol, as ncclras speaks it: "CLIENT PROTOCOL 2" ->
// "SERVER PROTOCOL 2"; "TIMEOUT 5" -> "OK"; "SET FORMAT json" -> "OK"
// (NCCL 2.28.7 on; an older one answers an error and the text report is
// read instead); "STATUS" -> the report, then the server closes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "shim/base/result.h"

namespace aml {

struct RasRank {
  int rank = -1;
  std::string host;
  bool error = false;                     // an async error, or aborted
  std::map<std::string, int64_t> counts;  // collectives run, by kind
};

struct RasComm {
  std::string hash;
  int size = 0;
  std::vector<RasRank> ranks;
  std::vector<int> missing;                // ranks RAS cannot reach
  std::map<int, std::string> missing_host;  // where known
};

struct RasReport {
  std::string version;  // NCCL's
  std::vector<RasComm> comms;
  std::string text;     // the text report (an NCCL without JSON): its errors
};

// The report of a JSON answer (bounded: 256 communicators, 65,536 ranks
// each are read); the error is one line.
Result<RasReport> ParseRasJson(const std::string& json);
// The "Errors" section of a text answer, one line ("" when it has none).
std::string RasTextErrors(const std::string& text);

// One line, "aml-shim: NCCL RAS: ...", with the missing ranks, the ranks in
// error and the ranks behind the others in a kind of collective, of each
// communicator that has any; "" when none has.
std::string RasLine(const RasReport& r);

// Asks the RAS socket at `addr` ("host:port") within `timeout_s`: the
// report's line (RasLine), "" for a healthy job; the error says why there
// is no answer (nothing listens: no NCCL on this node).
Result<std::string> AskNcclRas(const std::string& addr, double timeout_s);

// AskNcclRas on a thread of its own (the supervisor's loop never waits):
// Done() says when it answered or gave up.
class NcclRasQuery {
 public:
  ~NcclRasQuery();
  void Start(const std::string& addr, double timeout_s);
  bool Done() const { return !thread_.joinable() || done_.load(); }
  // Once Done(): its line ("" for none), or why there is none.
  std::string line() const;
  std::string why() const;

 private:
  void Join();
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::string line_, why_;
};

}  // namespace aml
