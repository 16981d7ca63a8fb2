// The job's state machine (job_machine.h) with --spares: a new root when
// rank 0's shim is lost (docs/control-plane.md, "A new root"). The root
// names one of its child shims its heir, tells every child which, and
// hands the heir its record (every attempt so far, the roster, the tree,
// the spares' addresses) as the job starts and at every restart. When a
// child of the root loses it, the heir is electing and every other child
// links to the heir; the shims that reach it end their ranks and say so.
// The heir takes the job only with more than half of the shims that
// started (the root, alive on the other side of a cut, has then lost more
// than half and ended its part: never two roots), and not before the old
// root, if alive, must have found the cut (a silent link: kMaxSilenceS
// and a second after the heir and each child found it; a closed one: the
// root's process is gone). The attempt ends with the root's loss, its node
// is retired, and a spare takes NODE_RANK 0 at the restart.
#include <algorithm>

#include "shim/base/log.h"
#include "shim/base/units.h"
#include "launch/failure_report.h"
#include "launch/wait_status.h"
#include "shim/control/job_machine.h"
#include "shim/control/job_record.h"
#include "shim/control/liveness.h"

namespace aml {
namespace {

// The tree travels in the record up to this many shims (its text is about
// 6 bytes a shim; the frame's cap is 1 MiB). Beyond it a new root knows
// only what reaches it: a lost shim's subtree is found by the round.
constexpr int kMaxTreeInRecord = 50000;
// A record past this many bytes (a link's frames are 1 MiB at most) leaves
// out the hosts of each attempt's NODE_RANKs and the tree, then all but
// the last kLeanAttempts attempts: failure.json then names hosts only from
// the takeover on, and the back-off reads the recent attempts alone.
constexpr size_t kMaxRecordBytes = 768 << 10;
constexpr size_t kLeanAttempts = 64;

std::string IntsText(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

std::vector<int> IntsOf(const std::string& text) {
  std::vector<int> out;
  size_t from = 0;
  while (from < text.size()) {
    const size_t comma = std::min(text.find(',', from), text.size());
    out.push_back(std::atoi(text.substr(from, comma - from).c_str()));
    from = comma + 1;
  }
  return out;
}

}  // namespace

bool JobMachine::LostMajority() const {
  return c_.size >= 3 && static_cast<int>(gone_.size()) * 2 > c_.size;
}

std::string JobMachine::MajorityText(int reached) const {
  return std::to_string(reached) + " of the job's " + std::to_string(c_.size) +
         " shims reach " + ShimName(c_.rank, c_.host) + ", not more than half";
}

// ---- The root's side: its record, at its heir

// The root (with --spares, 3 shims or more): names its heir and sends it
// the record.
void JobMachine::NameHeir() {
  if (!roster_ || c_.size < 3) return;
  heir_ = ports_->NameHeir();
  heirs_.Named(heir_);
  SendRecord();
}

void JobMachine::SendRecord() {
  if (!root_ || !roster_ || heir_ < 0) return;
  std::string frame = RecordFrame(false);
  if (frame.size() > kMaxRecordBytes) frame = RecordFrame(true);
  ports_->SendTo(heir_, frame);
}

std::string JobMachine::RecordFrame(bool lean) const {
  Msg m("record");
  m.Set("root", c_.rank).Set("host", c_.host).Set("n", attempts_.restarts()).Set("term", term_);
  m.SetNumber("wall", attempts_.began());
  const std::vector<AttemptRecord>& all = attempts_.list();
  std::vector<AttemptRecord> attempts(
      all.begin() + static_cast<long>(lean && all.size() > kLeanAttempts
                                          ? all.size() - kLeanAttempts
                                          : 0),
      all.end());
  if (lean)
    for (AttemptRecord& a : attempts) a.nodes.clear();
  m.SetRaw("attempts", SaveAttempts(attempts));
  m.SetRaw("roster", roster_->Save());
  // The shims lost so far: the heir waits for none of them.
  m.Set("gone", Roster::Runs(std::vector<int>(gone_.begin(), gone_.end())));
  if (!lean) m.SetRaw("nodes", SaveStrings(attempts_.nodes()));
  // The spares' hosts and addresses (one takes NODE_RANK 0, MASTER_ADDR with it).
  std::vector<std::string> spares;
  for (int s : roster_->Spares()) {
    auto addr = shim_addrs_.find(s);
    spares.push_back(std::to_string(s) + " " + HostOf(s) + " " +
                     (addr == shim_addrs_.end() ? "" : addr->second));
  }
  m.SetRaw("spares", SaveStrings(spares));
  // NODE_RANK 0's holder, when a spare took it: where MASTER_ADDR is (a
  // heir that takes the job keeps it there).
  const int holder0 = roster_->HolderOf(0);
  if (auto addr = shim_addrs_.find(holder0); holder0 > 0 && addr != shim_addrs_.end())
    m.Set("maddr", std::to_string(holder0) + " " + addr->second);
  if (!lean && c_.size <= kMaxTreeInRecord) {
    std::vector<int> tree = parents_.empty() ? ports_->Parents() : parents_;
    if (static_cast<int>(tree.size()) == c_.size) m.Set("tree", IntsText(tree));
  }
  return m.Encode();
}

std::vector<int> JobMachine::BelowOf(int shim) const {
  if (parents_.empty()) return ports_->Below(shim);
  std::vector<int> out;
  for (int s = 0; s < c_.size; ++s)
    for (int a = parents_[static_cast<size_t>(s)], hops = 0; a >= 0 && hops < c_.size;
         a = parents_[static_cast<size_t>(a)], ++hops)
      if (a == shim) {
        out.push_back(s);
        break;
      }
  return out;
}

// ---- The loss of the root, at its children

bool JobMachine::MayTakeOver(bool as_heir) const {
  // A child of the root moves below the heir whatever restarts are left
  // (only its own link may be cut, the root alive: the tree repairs
  // itself); the heir takes the job only with a restart left and the
  // root's record (before, a child whose link was cut after the last
  // restart was cut off, 125: aml-plane-sim, seed 697975115).
  return Spares() && c_.size >= 3 && !root_ && !Over() && state_ != JobState::kDone &&
         !finished_ && (!as_heir || (attempts_.MayRestart() && !election_.record().empty()));
}

void JobMachine::OnRootLost(bool as_heir, bool silent, const std::string& what, double now,
                            bool was_heir) {
  if (!as_heir) {
    // Linked to the heir: say how the root was lost, and go on. While the
    // heir still hears the root, this shim is in the job below the heir
    // (the root's words come through it); once the heir finds the root
    // lost too, it asks this shim to end its ranks ("end" again) for its
    // election. Only the election's outcome ends a shim.
    Msg orphan("orphan");
    orphan.Set("shim", c_.rank).Set("silent", silent ? 1 : 0);
    if (was_heir) orphan.Set("heir", 1);
    ports_->SendUp(orphan.Encode());
    // What it said up in this attempt may be lost with the link (a cut
    // carries nothing, and its close drops what waited): said again (the
    // root keeps each once; before, a node whose "well" was lost so kept
    // the whole job waiting: aml-plane-sim, seed 924537028).
    for (const std::string& said : said_up_) ports_->SendUp(said);
    // Its "ended" is said anew, its node checked again (a node found
    // unfit since must not be taken as fit from the old words).
    if (ended_sent_) {
      ended_sent_ = false;
      MaybeSendEnded(now);
    }
    return;
  }
  if (!LoadRecord(what)) {
    // A record this shim cannot read: cut off, as without a heir.
    root_ = false;
    return OnParentLost("aml-shim: " + EscapeControl(what) +
                            "; its record did not reach this shim: ending this node's ranks\n",
                        now);
  }
  Enter(JobState::kElecting, now);
  election_.Begin(silent, now, kMaxSilenceS + c_.grace_s + kEndingS);
  attempts_.NewRound();
  ended_sent_ = false;
  Order(EndAttemptOrder{});
  ports_->SendDown(Msg("end").Set("again", 1).Encode());
  MaybeSendEnded(now);
}

// The heir: the root's record becomes this shim's; the attempt under way
// ends with the root's loss, and the root's node is retired.
bool JobMachine::LoadRecord(const std::string& what) {
  auto m = Msg::Decode(election_.record());
  if (!m.ok()) return false;
  // Rank 0's shim, or the heir that took the job before it.
  const int old_root = static_cast<int>(m->Int("root", -1));
  if (old_root < 0 || old_root >= c_.size || old_root == c_.rank) return false;
  election_.TakePlaceOf(old_root);
  record_term_ = std::max(1, static_cast<int>(m->Int("term", 1)));
  const JsonValue* attempts = m->Raw("attempts");
  const JsonValue* roster = m->Raw("roster");
  std::vector<AttemptRecord> list;
  Roster r(c_.size, c_.spares);
  if (!attempts || !roster || !LoadAttempts(*attempts, &list) || !r.Load(*roster)) return false;
  root_ = true;
  attempts_.Adopt(std::move(list), static_cast<int>(m->Int("n", attempts_.restarts())),
                  m->Number("wall", attempts_.began()), LoadStrings(m->Raw("nodes")));
  roster_ = std::move(r);
  const std::vector<std::string>& nodes = attempts_.nodes();
  // Each holder's host, as the root knew it (for the record: a shim that
  // does not reach this one is retired under its host, not "").
  for (int n = 0; n < roster_->nodes() && n < static_cast<int>(nodes.size()); ++n) {
    const int h = roster_->HolderOf(n);
    const std::string& host = nodes[static_cast<size_t>(n)];
    if (h >= 0 && host != "rank " + std::to_string(h) + "'s shim") shim_hosts_[h] = host;
  }
  shim_hosts_[old_root] = m->Str("host");
  for (const std::string& line : LoadStrings(m->Raw("spares"))) {
    std::vector<std::string> f;
    for (size_t from = 0; from <= line.size();) {
      const size_t sp = std::min(line.find(' ', from), line.size());
      f.push_back(line.substr(from, sp - from));
      from = sp + 1;
    }
    if (f.empty()) continue;
    const int s = std::atoi(f[0].c_str());
    if (f.size() > 1 && !f[1].empty()) shim_hosts_[s] = f[1];
    if (f.size() > 2 && !f[2].empty()) shim_addrs_[s] = f[2];
  }
  if (const std::string maddr = m->Str("maddr"); !maddr.empty()) {
    const size_t sp = maddr.find(' ');
    if (sp != std::string::npos) shim_addrs_[std::atoi(maddr.c_str())] = maddr.substr(sp + 1);
  }
  parents_ = IntsOf(m->Str("tree"));
  if (static_cast<int>(parents_.size()) != c_.size) parents_.clear();
  if (!parents_.empty()) parents_[static_cast<size_t>(c_.rank)] = -1;
  // The attempt under way: the root's loss is its failure.
  gone_.clear();
  const std::string gone = m->Str("gone");
  if (!gone.empty())
    for (int s : Roster::Decode(gone))
      if (s >= 0 && s < c_.size && s != c_.rank) gone_.insert(s);
  gone_.insert(old_root);
  // The losses the root heard after its record.
  for (const std::string& note : election_.gone_notes()) {
    auto g = Msg::Decode(note);
    if (!g.ok()) continue;
    const int lost = static_cast<int>(g->Int("shim", -1));
    for (int s : Roster::Decode(g->Str("cut")))
      if (s >= 0 && s < c_.size && s != c_.rank && gone_.insert(s).second)
        roster_->Retire(s, HostOf(s), LostReason(lost, s, g->Str("what")),
                        static_cast<int>(g->Int("attempt", attempts_.restarts() + 1)));
  }
  // A loss breaks a node's streak (the attempt under way ends with one).
  roster_->NoteFirstFailure(-1);
  well_.clear();
  fails_.clear();
  const std::string lost = EscapeControl(what);
  roster_->Retire(old_root, HostOf(old_root), "lost: " + lost, attempts_.restarts() + 1);
  replaced_ = true;
  AttemptRecord& current = attempts_.current();
  current = attempts_.New(ports_->WallNow());
  current.exit_code = 125;
  current.what = lost;
  current.node_replaced = true;
  attempts_.Plan(Ending{LostStop(what).Encode(),
                        StopOrder::Of(125, "aml-shim: " + lost + ": ending the job\n", ""),
                        "aml-shim: " + lost + "\n", false});
  return true;
}

// A heir stopped from outside (its launcher's signal, or another shim's
// "bye": mpirun ends every process a few seconds after one is lost) while
// it takes the place of rank 0's shim (`in`: electing), or after it took
// it: it holds the job's record, and failure.json says why the job ended
// (`code`, `line`: the stop's status and its one line).
StopOrder JobMachine::HeirStop(JobState in, int code, std::string line) {
  if (in == JobState::kElecting) {
    attempts_.Keep(attempts_.current());
    line = "aml-shim: " + attempts_.current().what + "; " + ShimName(c_.rank, c_.host) +
           ", its heir, was taking its place when the job was stopped: " + line;
  } else {
    // The attempt under way (or, in a restart round, the one that ended).
    AttemptRecord a = attempts_.New(ports_->WallNow());
    a.exit_code = code;
    a.what = EscapeControl(line);
    if (in == JobState::kEnding || in == JobState::kBackingOff) a = attempts_.current();
    attempts_.Keep(a);
    line = "aml-shim: " + ShimName(election_.lost_root(), HostOf(election_.lost_root())) + " was lost and " +
           ShimName(c_.rank, c_.host) + " took its place; then the job was stopped: " + line;
  }
  StopOrder own = StopOrder::Of(code, line + "\n", StopJson(c_.run_id, code, line));
  RecordAttempts(&own, "not restarted: the job was stopped from outside");
  return own;
}

void JobMachine::NoteOrphan(int shim, bool silent, double now, bool ask) {
  if (shim < 0 || shim >= c_.size || shim == c_.rank || Over()) return;
  if (state_ != JobState::kElecting) {
    // A new root that took the job without it (its election's deadline
    // passed): retired, it is told so, as a shim cut off would be.
    if (HeldByHeir() && gone_.count(shim))
      ports_->SendTo(shim, LostStop(ShimName(shim, HostOf(shim)) + " reached " +
                                    ShimName(c_.rank, c_.host) +
                                    ", the new root, after its election")
                               .Encode());
    return;
  }
  if (silent) election_.Silent(now);
  if (!parents_.empty()) parents_[static_cast<size_t>(shim)] = c_.rank;
  // Its ranks end now, and it says so ("end" again, as to every shim below).
  if (ask) ports_->SendTo(shim, Msg("end").Set("again", 1).Encode());
  CheckTakeover(now);
}

// ---- A root that is not one any more, and the tree repaired under it

void JobMachine::StepDown(const std::string& why, double now) {
  if (Over()) return;
  // Nothing of the job is this shim's to say: not its record, not a verdict.
  root_ = false;
  lost_job_ = true;
  cut_off_ = true;
  StopOrder own = StopOrder::Of(125, "aml-shim: " + why + "\n", "");
  own.no_record = true;
  Stop(std::move(own), now);
}

void JobMachine::NoteMoved(int shim, int parent) {
  if (shim < 0 || shim >= c_.size || parent < 0 || parent >= c_.size) return;
  // The heir moved below the successor: the successor (the first child
  // still the root's) is the heir now, and gets the record.
  if (root_ && shim == heir_) NameHeir();
  if (parents_.empty()) parents_ = ports_->Parents();
  if (static_cast<int>(parents_.size()) != c_.size) return parents_.clear();
  parents_[static_cast<size_t>(shim)] = parent;
}

double JobMachine::ElectionDeadline() const {
  return election_.Deadline(AllIn(attempts_.ended()));
}

void JobMachine::CheckTakeover(double now) {
  if (state_ != JobState::kElecting || now < ElectionDeadline()) return;
  FinishTakeover(now);
}

// Every shim that reached the heir ended its ranks (or the wait is over):
// with more than half of the job's shims the heir is its root, and the
// next attempt starts with a spare in the lost nodes' places; else this
// part of the job ends (125), as a part cut off does.
void JobMachine::FinishTakeover(double now) {
  int reached = 0;
  for (int s = 0; s < c_.size; ++s) {
    if (!Counted(s)) continue;
    if (attempts_.ended().count(s)) {
      ++reached;
      continue;
    }
    gone_.insert(s);
    well_.erase(s);
    roster_->Retire(s, HostOf(s),
                    "lost: it did not reach " + ShimName(c_.rank, c_.host) +
                        ", the new root, within " + FormatRate(election_.until() - entered_) + " s",
                    attempts_.restarts() + 1);
  }
  if (reached * 2 <= c_.size) {
    // The old root, silent, may live beyond a cut and hold the job (with
    // half of the shims or more).
    const int old = election_.lost_root();
    const bool root_holds = election_.root_silent() && (c_.size - reached) * 2 >= c_.size;
    return StopNoMajority("no majority: " + ShimName(old, HostOf(old)) + " was lost and " +
                              MajorityText(reached),
                          root_holds ? ShimName(old, HostOf(old)) + ", the old root," : "", now);
  }
  // The job is this shim's in a term of its own: what the old root may
  // still write is older (launch/record_fence.h).
  term_ = std::max(term_, record_term_ + 1);
  // Printed by the new root before the restart line.
  attempts_.plan().message = "aml-shim: " + ShimName(election_.lost_root(), HostOf(election_.lost_root())) + " was lost (" +
                         attempts_.current().what + "); " + ShimName(c_.rank, c_.host) +
                         " takes the job as its root: " + std::to_string(reached) + " of " +
                         std::to_string(c_.size) + " shims reached it\n";
  Enter(JobState::kEnding, now);
  RecheckRound(now);
}

}  // namespace aml
