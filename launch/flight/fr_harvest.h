// A hang's harvest on one node (docs/control-plane.md, "Naming the
// culprit"): each running rank is asked for its flight record through its
// pipe (one byte, never blocking: a pipe nobody reads is said at once), and
// its dump is waited for, --dump-timeout at most. A dump is read only when
// it changed since the ask (a look's, written where a look's go, only by a
// look: fr_env.h), refused unread past kMaxFrDump, and
// summarized (fr_dump.h); a rank that never answers, or answers with a
// broken dump, gets one line saying so. Asked for stack traces, aml-shim's
// agent may first write the record without them (its first dump with them
// can take seconds) and keep a mark (FlightFiles::more) until the one with
// them is written: that first record is kept, and is the answer when the
// second does not come in time (its FrSummary::no_stacks says so). Nothing here
// blocks: Poll looks and returns.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "launch/flight/fr_dump.h"
#include "launch/flight/fr_env.h"

namespace aml {

class FlightHarvest {
 public:
  static constexpr double kPollS = 0.05;  // how often the dumps are looked for

  struct Ask {
    int rank = 0;
    std::optional<FlightFiles> files;  // none: the recorder is off for it
    bool running = true;               // an ended rank is not asked
  };
  struct Outcome {
    int rank = 0;
    std::optional<FrSummary> fr;  // none: why says why
    std::string why;
    std::string dump;             // the dump's path when it came whole ("" else)
    std::vector<FrEntryTimes> times;  // its groups' entry times (with fr)
  };

  // Asks every running rank that has a pipe; `light`: for a look, whose
  // records need no stack traces (the agent leaves them out: cheaper).
  void Start(const std::vector<Ask>& asks, double now, double timeout_s, bool light = false);
  // Reads what came. True when every rank answered or was given up on.
  bool Poll(double now);
  bool done() const { return pending_ == 0; }
  // Every rank asked has ended (after a last Poll): none can write again.
  // A rank still waited for whose first record was read while the agent's
  // mark stood (it ended in the dump with stack traces: SIGKILLed, or a
  // crash) is answered by that record, and says so; one with none, that it
  // ended before its record came.
  void Settle();
  double deadline() const { return deadline_; }
  // One per rank asked, in the order of Start.
  const std::vector<Outcome>& outcomes() const { return outcomes_; }

 private:
  // A record's file as last seen (-1: none).
  struct Seen {
    dev_t dev = 0;
    ino_t ino = 0;
    long long mtime_ns = -1, size = -1;
    // True when `st` is not what was seen, which becomes it.
    bool Update(const struct stat& st);
  };
  struct State {
    FlightFiles files;
    bool pending = false;
    Seen dump, light, exit;  // the dump, a look's, and an exception's (fr_env.h)
    std::string error;  // the last read's
    // The record read while the agent's mark stood (without stack traces,
    // or the last one if the mark went after it was written).
    std::optional<FrSummary> early;
    std::vector<FrEntryTimes> early_times;
  };
  void Look(size_t i, bool last);
  // Reads `path` when it changed since `seen` (true: something was read).
  bool Read(size_t i, const std::string& path, Seen* seen, bool more);
  void TakeEarly(size_t i, std::string note);
  void GiveUp(size_t i, std::string early_note, const std::string& none_why);

  std::vector<Outcome> outcomes_;
  std::vector<State> states_;
  size_t pending_ = 0;
  double deadline_ = 0, timeout_s_ = 0;
  bool light_ = false;
};

// "" when the byte went into `pipe`; else why the rank cannot be asked.
// kAskFull asks for the record with its stack traces, kAskLight without
// (aml-shim's agent reads the byte; torch's own reader takes any byte).
constexpr char kAskFull = '1', kAskLight = 'p';
std::string AskForDump(const std::string& pipe, char what = kAskFull);

}  // namespace aml
