// The job's state machine (job_machine.h): the restart rounds. Rank 0 ends
// a failed attempt everywhere, waits for every shim's word that its ranks
// ended, then restarts (after a back-off) or stops the job; every shim
// obeys (docs/control-plane.md, "Restarts").
#include "shim/control/job_machine.h"
#include "shim/base/log.h"
#include "shim/control/liveness.h"

#include <algorithm>

namespace aml {

// ---- Restarts (rank 0 decides; every shim obeys)

// The attempt failed: end it everywhere and wait for every shim's word, or
// stop the job now when no restart may follow whatever they say.
void JobMachine::EndAttempt(AttemptRecord a, const Msg& stop, StopOrder own, std::string message,
                            bool print_own, double now) {
  if (Over()) return;
  a.shims_ended_well = done_below_ + (own_done_well_ ? 1 : 0);
  a.node_replaced = replaced_;
  // Output not yet known: only what needs no output is decided here.
  RestartVerdict v = attempts_.Open(std::move(a));
  if (!v.restart) {
    FinalStop(stop.Encode(), std::move(own), v.why_not, now);
    return;
  }
  Enter(JobState::kEnding, now);
  attempts_.NewRound();
  attempts_.Plan(Ending{stop.Encode(), std::move(own), std::move(message), print_own});
  ports_->SendDown(Msg("end").Encode());
  Order(EndAttemptOrder{});
  MaybeSendEnded(now);
}

// With --max-restarts, the job's final order carries its attempts: the
// summary's list, failure.json's array, and why no restart followed.
void JobMachine::RecordAttempts(StopOrder* own, const std::string& why_not) const {
  own->slow_json = straggler_.SlowJson(HostFn());
  if (roster_ && !roster_->retirements().empty()) {
    own->retired_json = roster_->RetiredJson();
    own->trailer += "aml-shim: retired nodes (--spares " + std::to_string(c_.spares) + "):\n" +
                    roster_->RetiredText();
  }
  attempts_.Write(own, why_not);
}

void JobMachine::FinalStop(const std::string& stop, StopOrder own, const std::string& why_not,
                           double now) {
  RecordAttempts(&own, why_not);
  if (Over()) return;
  ports_->SendDown(stop);
  Stop(std::move(own), now);
}

// This node's ranks all ended after rank 0 said "end": say so (once).
void JobMachine::MaybeSendEnded(double now) {
  if ((state_ != JobState::kEnding && state_ != JobState::kElecting) || !children_done_ ||
      ended_sent_) {
    checking_ = false;
    return;
  }
  // With spares, whether this node is still fit for another attempt (a
  // check that takes a while answers later: OnTimer asks again).
  std::string unfit;
  if (Spares() && c_.node_check) {
    const std::optional<std::string> checked = c_.node_check();
    checking_ = !checked;
    if (checking_) return;
    unfit = *checked;
  }
  ended_sent_ = true;
  if (root_) {
    NoteEnded(c_.rank, outcome_.first_output_wall, unfit, now);
    return;
  }
  Msg ended("ended");
  ended.Set("shim", c_.rank).Set("host", c_.host).SetNumber("out", outcome_.first_output_wall);
  if (!unfit.empty()) ended.Set("unfit", unfit.substr(0, 1024));
  ports_->SendUp(ended.Encode());
}

void JobMachine::NoteEnded(int shim, double first_output_wall, const std::string& unfit,
                           double now) {
  if ((state_ != JobState::kEnding && state_ != JobState::kElecting) || shim < 0 ||
      shim >= c_.size || !attempts_.NoteEnded(shim, first_output_wall))
    return;
  if (!unfit.empty()) {
    NoteUnfit(shim, unfit, now);
    if (Over()) return;
  }
  if (state_ == JobState::kElecting) return CheckTakeover(now);
  RecheckRound(now);
}

// --warm-restart: this node's ranks of a restart started; rank 0 sums the
// job's (the attempt's record, failure.json's "attempts"), and says it once
// every node's shim said.
void JobMachine::OnWarmStarts(int warm, int cold, double now) {
  (void)now;
  if (Over()) return;
  if (root_) return NoteWarm(c_.rank, warm, cold);
  SayUp(Msg("warm")
            .Set("shim", c_.rank)
            .Set("w", warm)
            .Set("c", cold)
            .Set("a", attempts_.restarts())
            .Encode());
}

void JobMachine::NoteWarm(int shim, int warm, int cold) {
  if (shim < 0 || shim >= c_.size || !attempts_.NoteWarm(shim, warm, cold)) return;
  const int nodes = roster_ ? roster_->nodes() : c_.size;
  if (c_.size < 2 || attempts_.warm_shims() != nodes) return;
  const int all = attempts_.started_warm() + attempts_.started_cold();
  LogInfo("--warm-restart: " + std::to_string(attempts_.started_warm()) + " of the job's " +
          std::to_string(all) + " ranks started from their standbys (every node's shim said)");
}

// Every shim's ranks ended (the lost ones aside, with --spares): restart,
// unless it failed at start.
void JobMachine::RecheckRound(double now) {
  if (state_ != JobState::kEnding || !AllIn(attempts_.ended())) return;
  RestartVerdict v = attempts_.Close(now);
  if (!v.restart) {
    FinalStop(attempts_.plan().stop, std::move(attempts_.plan().own), v.why_not, now);
    return;
  }
  Enter(JobState::kBackingOff, now);
  if (attempts_.backoff_s() <= 0) SendRestart(now);
}

// The back-off is over (or there was none): every shim starts its ranks.
void JobMachine::SendRestart(double now) {
  // No spare for a retired NODE_RANK while a heir lost beyond a cut may
  // yet take the job: wait until every loss of that cut is found.
  if (roster_ && roster_->Vacant() > static_cast<int>(roster_->Spares().size()) &&
      HeirLostAlive(now)) {
    attempts_.WaitUntil(heirs_.CutFoundAt());
    return;
  }
  RestartOrder o = attempts_.TakeRestart();
  o.master_port = ports_->FreePort();
  Msg restart("restart");
  restart.Set("term", term_);
  if (roster_) {
    // A spare for each NODE_RANK retired (docs/control-plane.md, "Spares
    // and retirement"); none left: the job ends (125).
    const std::vector<int> before = [&] {
      std::vector<int> h;
      for (int n = 0; n < roster_->nodes(); ++n) h.push_back(roster_->HolderOf(n));
      return h;
    }();
    if (!roster_->Fill()) {
      std::string vacant;
      for (const Retirement& r : roster_->retirements())
        if (r.node >= 0 && roster_->HolderOf(r.node) < 0)
          vacant += (vacant.empty() ? "" : ", ") + std::string("NODE_RANK ") +
                    std::to_string(r.node) + " (" + ShimName(r.shim, r.host) + ", " + r.reason +
                    ")";
      return StopNoSpare("no spare left for " + vacant, now);
    }
    o.line = RosterLines(before) + o.line;
    o.roster = true;
    o.node_rank = node_ = roster_->NodeOf(c_.rank);
    const int holder0 = roster_->HolderOf(0);
    auto addr = shim_addrs_.find(holder0);
    o.master_addr = holder0 == 0 || addr == shim_addrs_.end() ? "" : addr->second;
    restart.Set("nodes", roster_->Encode()).Set("maddr", o.master_addr);
    NoteAttemptNodes();
  }
  // The attempt's store opened before any rank starts, where this shim
  // runs NODE_RANK 0's ranks (its store host: launch/store_host.h), so
  // that no rank's client reaches the port before it listens.
  if ((!roster_ || roster_->HolderOf(0) == c_.rank)) {
    if (ports_->HostStore(o.master_port)) {
      o.agent_store = true;
      restart.Set("store", 1);
    } else {
      // A port the store host tried (and may hold until it is gone) is
      // not rank 0's: another one (found by test_warm_restart's torch 2.x
      // without libuv: rank 0 could not bind it).
      o.master_port = ports_->FreePort();
    }
  }
  restart.Set("n", o.restart).Set("port", o.master_port).Set("line", o.line);
  ports_->SendDown(restart.Encode());
  ResetRound(now);
  Order(std::move(o));
  // The heir (named anew: the last may be lost, or this shim was it)
  // carries the record of every attempt so far.
  NameHeir();
}

// A new attempt: nothing of the last one counts (its failures, its stacks,
// its silence).
void JobMachine::ResetRound(double now) {
  Enter(JobState::kRunning, now);
  straggler_.NewAttempt();
  ended_sent_ = children_done_ = checking_ = false;
  well_sent_ = replaced_ = false;
  said_up_.clear();
  well_.clear();
  failed_at_ = 0;
  own_failure_.reset();
  fails_.clear();
  reports_.clear();
  ras_lines_.clear();
  reported_.clear();
  records_.Clear();
  hang_silent_s_ = 0;
  ports_->ResetOutput(now);
  attempts_.Began(ports_->WallNow());
  outcome_ = NodeOutcome{};
}

}  // namespace aml
