// The job machine's roll-call and a failure's flight records (job_machine.h):
// what each node sends up (its ranks' stacks, its records), what rank 0
// gathers, and the verdicts that wait for them (a hang's roll-call, a
// failure's records).
#include "shim/control/job_machine.h"

#include <algorithm>
#include <cstdlib>

#include "launch/failure_report.h"
#include "shim/control/failure_records.h"
#include "shim/control/flight_wire.h"
#include "shim/base/text_list.h"
#include "shim/base/units.h"

namespace aml {
namespace {

constexpr size_t kMaxSignature = 512;
constexpr size_t kMaxRasLine = 1000;  // a node's NCCL RAS line
}  // namespace

void JobMachine::OnStacks(const std::vector<RankStack>& stacks, double now) {
  if (root_) {
    for (const RankStack& s : stacks) {
      const auto lines = SplitLines(s.text);
      RankReport r;
      r.rank = s.rank;
      r.node = node_;  // this attempt's NODE_RANK (--spares: a spare's, once it took one)
      r.host = c_.host;
      r.signature = s.signature.substr(0, kMaxSignature);
      r.why_none = s.signature.empty() && !lines.empty() ? lines[0] : "";
      r.shim = c_.rank;
      if (s.fr) r.fr = ThroughWire(*s.fr);
      r.fr_why = s.fr_why.substr(0, kMaxFrWhy);
      reports_.push_back(std::move(r));
      NoteRas(s.ras);
    }
    reported_.insert(c_.rank);
    if (AllIn(reported_)) FinishCollect(now);
    return;
  }
  std::string list = "[";
  for (const RankStack& s : stacks) {
    if (list.size() > 1) list += ",";
    const auto lines = SplitLines(s.text);
    Msg one("s");
    one.Set("rank", s.rank).Set("sig", s.signature.substr(0, kMaxSignature));
    one.Set("why", s.signature.empty() && !lines.empty() ? lines[0].substr(0, 300) : "");
    SetFlight(&one, s.fr, s.fr_why);
    list += one.Encode();
  }
  list += "]";
  Msg m("stacks");
  m.Set("shim", c_.rank).Set("node", node_).Set("host", c_.host).SetRaw("stacks", list);
  for (const RankStack& s : stacks)
    if (!s.ras.empty()) m.Set("ras", s.ras.substr(0, kMaxRasLine));
  ports_->SendUp(m.Encode());
}

void JobMachine::StartCollect(double now) {
  Enter(JobState::kCollecting, now);
  ports_->SendDown(Msg("collect").Encode());
  Order(CollectStacksOrder{});
}

void JobMachine::NoteStacks(const Msg& m, double now) {
  if (state_ != JobState::kCollecting &&
      !(state_ == JobState::kSignalled && signalled_in_ == JobState::kCollecting))
    return;
  const int shim = static_cast<int>(m.Int("shim"));
  if (shim < 0 || shim == c_.rank || shim >= c_.size || reported_.count(shim)) return;
  reported_.insert(shim);
  const JsonValue* list = m.Raw("stacks");
  if (list && list->kind == JsonValue::Kind::kArray) {
    for (const JsonValue& v : list->items) {
      const JsonValue* r = v.Find("rank");
      const JsonValue* sig = v.Find("sig");
      const JsonValue* why = v.Find("why");
      if (!r || r->kind != JsonValue::Kind::kNumber) continue;
      RankReport rr;
      rr.rank = std::atoi(r->text.c_str());
      rr.node = static_cast<int>(m.Int("node"));
      rr.host = m.Str("host");
      rr.signature = sig ? sig->text : "";
      rr.why_none = why ? why->text : "";
      rr.shim = shim;
      ReadFlight(v, &rr.fr, &rr.fr_why);
      reports_.push_back(std::move(rr));
    }
  }
  NoteRas(m.Str("ras"));
  if (AllIn(reported_)) FinishCollect(now);
}

// ---- A failure's flight records

// Sent once per attempt by every shim that heard the halt (empty when its
// ranks had ended): rank 0's verdict waits for them.
void JobMachine::OnRecords(const std::vector<RankRecord>& records, double now) {
  (void)now;
  if (root_) records_.Own(c_.rank, node_, c_.host, records);
  else ports_->SendUp(FailureRecords::Frame(c_.rank, node_, c_.host, records));
}

void JobMachine::NoteRecords(const Msg& m, double now) {
  (void)now;
  if (state_ != JobState::kDeciding || !records_.asked()) return;  // late: the verdict came
  records_.FromShim(m, c_.size, c_.rank);
}

// The verdict on a rank's failure waits for every shim's records.
bool JobMachine::AwaitsRecords() const { return records_.asked() && !AllIn(records_.in()); }

// A loss while the verdict waits only for records (its window is over):
// the failure came first, and is decided now with the records that came
// (the loss is then a restart round's, or after the job's end).
void JobMachine::DecideBeforeLoss(double now) {
  if (state_ == JobState::kDeciding && AwaitsRecords() && now >= entered_ + kFailWindowS)
    DecideFailure(now);
}

// How long a failing node waits for rank 0's verdict (MayExit), past the
// records' wait.
double JobMachine::VerdictWait() const {
  return kVerdictWaitS + (c_.flight_recorder ? c_.dump_timeout_s + kRecordsSlackS : 0);
}

// A node's NCCL RAS line, kept once (every node's NCCL sees the whole job:
// most say the same), a few at most.
void JobMachine::NoteRas(const std::string& line) {
  if (line.empty() || line.rfind("aml-shim: NCCL RAS", 0) != 0 || ras_lines_.size() >= 3) return;
  std::string one = line.substr(0, kMaxRasLine);
  if (one.back() != '\n') one += "\n";
  if (std::find(ras_lines_.begin(), ras_lines_.end(), one) == ras_lines_.end())
    ras_lines_.push_back(std::move(one));
}

void JobMachine::FinishCollect(double now) {
  // A roll-call under way when the launcher's signal came is still printed:
  // the verdict came first (the signal may have come from the hang itself).
  const bool after_signal =
      state_ == JobState::kSignalled && signalled_in_ == JobState::kCollecting;
  if (state_ != JobState::kCollecting && !after_signal) return;
  HangFacts facts;
  facts.timeout_s = *c_.hang_timeout_s;
  facts.silent_s = hang_silent_s_;
  facts.world_size = c_.world_ranks;
  facts.reports = reports_;
  facts.missing = ShimsNotIn(reported_);
  facts.log_dir = c_.log_dir;
  facts.attempt = attempts_.restarts() + 1;
  facts.ras = ras_lines_;
  if (c_.flight_recorder) facts.culprit = CulpritOf(reports_, c_.world_ranks);
  Msg stop("stop");
  stop.Set("kind", std::string("hang")).Set("code", 124).SetNumber("silent", hang_silent_s_);
  stop.Set("by", c_.host);
  AttemptRecord a = attempts_.New(ports_->WallNow());
  a.exit_code = 124;
  a.hang = true;
  a.what = "the job was hung (no output for " + FormatNumber(hang_silent_s_, "%.0f") + " s)";
  const std::string roll_call = FormatRollCall(facts);
  if (facts.culprit) a.what += "; " + CulpritLine(*facts.culprit).substr(10, std::string::npos);
  if (!a.what.empty() && a.what.back() == '\n') a.what.pop_back();
  if (after_signal) {
    signalled_in_ = JobState::kSignalled;  // once
    attempts_.Keep(a);
    StopOrder own = StopOrder::Of(124, roll_call, HangJson(c_.run_id, facts));
    if (c_.max_restarts > 0) {
      own.trailer = AttemptsText(attempts_.list(), c_.max_restarts,
                                 "not restarted: the launcher stopped the job");
      own.attempts_json = AttemptsJson(attempts_.list());
    }
    Order(std::move(own));
    return;
  }
  // A hang whose culprits are all on one node counts as that node's
  // failure for --retire-after; any other hang breaks the streak.
  if (Spares()) {
    hang_attempt_ = a;
    NoteCulprit(facts.culprit, now);
    hang_attempt_.reset();
    if (Over()) {
      // No spare left for the node it retired: why, then the roll-call.
      if (auto* last = orders_.empty() ? nullptr : std::get_if<StopOrder>(&orders_.back()))
        last->message += roll_call;
      return;
    }
  }
  EndAttempt(std::move(a), stop, StopOrder::Of(124, roll_call, HangJson(c_.run_id, facts)),
             roll_call, false, now);
}

}  // namespace aml
