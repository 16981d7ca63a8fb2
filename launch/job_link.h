// A job-wide channel that the supervisor serves from its own loop (the
// control plane, shim/control/plane.h): descriptors to watch and a deadline,
// what this node sees (output, its first failure, its ranks' stacks, its end),
// and orders back (collect stacks, stop the job). The supervisor stays the
// one event loop; the link never blocks and never signals a child itself.
#pragma once

#include <poll.h>

#include <optional>
#include <string>
#include <vector>

namespace aml {

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
  int rank = 0;
  std::string text;       // the full dump (or why there is none)
  std::string signature;  // its innermost frames, one line; "" when none
};

struct LinkOrder {
  enum class Kind { kCollectStacks, kStop } kind = Kind::kStop;
  // kStop: the exit code every node uses, the one line this node prints (or
  // the whole summary, on the node that prints the job's first failure), and
  // failure.json's object for --log-dir ("" to leave it alone).
  int exit_code = 0;
  std::string message;
  std::string failure_json;
};

class JobLink {
 public:
  virtual ~JobLink() = default;
  // Appends the descriptors to watch; OnPoll gets the same ones back.
  virtual void AddPollFds(std::vector<pollfd>* fds) = 0;
  virtual void OnPoll(const pollfd* fds, size_t n, double now) = 0;
  // When OnTimer must run next (CLOCK_MONOTONIC seconds).
  virtual double NextDeadline(double now) const = 0;
  virtual void OnTimer(double now) = 0;
  // A child wrote output (called at most once per poll round).
  virtual void OnOutput(double now) = 0;
  // This node's first failure, before its teardown.
  virtual void OnChildFailed(const LocalFailure& f) = 0;
  // The stacks asked for by kCollectStacks, one per child.
  virtual void OnStacks(const std::vector<RankStack>& stacks) = 0;
  // Every child of this node ended (`code`: this node's exit code so far).
  virtual void OnChildrenDone(int code) = 0;
  // aml-shim got terminating signal `sig` (the launcher stops the job): the
  // other shims stop with it; leave, wait no more.
  virtual void OnShimSignalled(int sig) = 0;
  // The supervisor may return: nothing more is owed to the job.
  virtual bool MayExit() const = 0;
  // True when this node prints its own first failure's summary; otherwise
  // one line says where the job's first failure is printed.
  virtual bool PrintsOwnFailure() const = 0;
  virtual std::optional<LinkOrder> TakeOrder() = 0;
};

}  // namespace aml
