#include "shim/control/tree_links.h"

#include <algorithm>
#include <limits>

#include "shim/base/log.h"
#include "shim/base/units.h"

namespace aml {
namespace {

// A frame's type read from its first field, without decoding the rest
// (Msg puts "t" first).
bool FrameIs(const std::string& frame, const char* type) {
  return frame.rfind(std::string("{\"t\":\"") + type + "\"", 0) == 0;
}

}  // namespace

TreeLinks::TreeLinks(const JobConfig& job, LinkIo* io, double beat_s, double startup_s)
    : job_(job), io_(io), beat_s_(beat_s), startup_s_(startup_s), machine_(job, this) {
  // The straggler check is the job machine's; its frames travel here.
  machine_.straggler().Attach(job.rank, job.pace_every_s, job.dump_timeout_s, this, &machine_);
}

void TreeLinks::SetParent(int rank, const std::string& addr) {
  parent_ = rank;
  parent_addr_ = addr;
  to_parent_.Reset();
  parent_root_ = RootClock();
}

void TreeLinks::AddChild(int rank, const std::string& host, const std::string& addr,
                         double now) {
  // A rank that asks again after its link broke takes its place anew.
  children_.erase(std::remove_if(children_.begin(), children_.end(),
                                 [&](const Child& c) { return c.rank == rank; }),
                  children_.end());
  Child c;
  c.rank = rank;
  c.host = host;
  c.addr = addr;
  c.live.Start(now);
  // A shim linked anew while the job runs (to the root's heir) brings no
  // output by linking: its beats will say when its part last wrote.
  c.output = go_ ? SubtreeOutput() : now;
  children_.push_back(std::move(c));
}

TreeLinks::Child* TreeLinks::Find(int rank) {
  for (Child& c : children_)
    if (c.rank == rank) return &c;
  return nullptr;
}

bool TreeLinks::Keeps(int child) const {
  for (const Child& c : children_)
    if (c.rank == child) return !c.done && !c.gone;
  return false;
}

std::vector<int> TreeLinks::children() const {
  std::vector<int> out;
  for (const Child& c : children_) out.push_back(c.rank);
  return out;
}

void TreeLinks::Start(double now) {
  go_ = true;
  my_output_ = now;
  next_beat_ = now + beat_s_;
  go_at_ = now;
  machine_.straggler().Start(now);
  for (Child& c : children_) {
    c.live.Start(now);
    c.output = now;
  }
  if (parent_ >= 0) parent_live_.Start(now);
  machine_.Start(now);
}

// ---- Frames

// Beats and the join's words are the overlay's; the rest is the job's.
void TreeLinks::OnChildFrame(int rank, const std::string& frame, double now) {
  Woke(now);
  Child* c = Find(rank);
  if (!c || c->done || c->gone) return;
  auto m = Msg::Decode(frame);
  if (!m.ok()) return Lose(*c, "sent a garbled message (" + m.error().message + ")", false, now);
  c->live.Heard(now);
  const std::string& t = m->type();
  ++frames_[t];
  // A child that fell silent and is heard again was late, not gone (nor
  // moving below the heir).
  if (!c->left) c->relink_until = -1;
  if (t == "beat") {
    const double age = m->Number("age", 0);
    if (age >= 0) c->output = std::max(c->output, now - age);
    const double allowance = m->Number("al", -1);
    if (allowance >= kMinSilenceS && allowance <= kMaxSilenceS) c->their_allowance = allowance;
    const double startup = m->Number("su", -1);
    if (startup >= 0 && startup <= kMaxSilenceS) c->their_startup_until = now + startup;
    c->beat_sent = m->Number("ts", -1);
    c->beat_ts = c->beat_sent;
    c->beat_came = io_->WallNow();
    return;
  }
  if (t == "pace") {
    machine_.straggler().FromChild(rank, *m, now);
    return;
  }
  if (t == "left") {
    // It found this shim (the root) lost and left for the heir: alive, its
    // close that follows is no death (job_heir.cc). The heir itself holds
    // the job's election then: this root, frozen or descheduled past its
    // heir's allowance (or cut from it for as long), steps down.
    c->left = true;
    if (machine_.root() && rank == machine_.heir()) {
      const int heir = machine_.heir();
      StepDown(now, "no majority: " + ShimName(heir, machine_.HostName(heir)) +
                        ", this shim's heir, found it silent and holds the job's election (this "
                        "shim was frozen, descheduled or cut off from it for longer than its "
                        "allowance): this shim steps down and writes no record of the job");
    }
    return;
  }
  if (t == "orphan" && !machine_.root()) {
    // A child of the root that lost it linked here (the root's heir) while
    // this shim still hears the root: it stays in the job below this one
    // (the root's words reach it through here, its words go up), and the
    // root is told so. Should this shim find the root lost too, it counts
    // in the election (LoseParent).
    if (m->Int("heir", 0) == 1 && rank == heir_ && rank != job_.rank) {
      // The heir itself, its own link to the root failed while this shim,
      // the root's successor, still heard the root: its place is this
      // shim's (its record follows), as the root says too once it hears.
      heir_ = job_.rank;
      heir_addr_.clear();
      handed_from_ = rank;
      LogVerbose("control plane: the root's heir, " + ShimName(rank, c->host) +
                 ", lost its own link to the root and linked below this shim, its successor: "
                 "this shim is the root's heir now");
    }
    adopted_.push_back(frame);
    SendUp(Msg("moved").Set("shim", rank).Set("via", job_.rank).Encode());
    return;
  }
  if (t == "record" || t == "gone") {
    // Only from the heir that handed this shim its place (above).
    if (rank != handed_from_) return;
    return t == "record" ? machine_.OnRecord(frame) : machine_.OnGone(frame);
  }
  if (t == "moved") {
    const int shim = static_cast<int>(m->Int("shim", -1));
    if (!machine_.root()) return SendUp(frame);
    Child* moved = shim == rank ? nullptr : Find(shim);
    const int via = static_cast<int>(m->Int("via", rank));
    if (!moved) return;
    if (moved->gone) {
      // Found lost before its word came (its link to this shim fell
      // silent first): retired already, so it is stopped where it is.
      io_->Send(rank, Msg("drop").Set("shim", shim).Encode());
      return;
    }
    // Below the heir now: not lost, and no link of this shim's. What this
    // root said down in this attempt may have been lost on the cut link (a
    // restart, a halt): it goes again, through the heir, to that shim alone
    // (each shim takes a word it had once: JobMachine::OnFromParent).
    for (const std::string& said : said_down_)
      io_->Send(rank, Msg("to").Set("shim", shim).Set("f", said).Encode());
    moved->moved = moved->done = true;
    moved->relink_until = -1;
    departed_output_ = std::max(departed_output_, moved->output);
    // (The heir moved: the job machine names its successor the heir.)
    machine_.NoteMoved(shim, via);
    if (shim == next_ && machine_.heir() >= 0 && Keeps(machine_.heir())) SayHeir(machine_.heir());
    return;
  }
  if (t == "up") {
    if (job_.rank == 0) up_.insert(static_cast<int>(m->Int("rank")));
    else SendUp(frame);
    return;
  }
  if (LeavesInOrder(*m)) {
    // Done, or stopped by its launcher: it closes, and is not lost.
    c->done = true;
    departed_output_ = std::max(departed_output_, c->output);
    if (go_) departed_output_ = std::max(departed_output_, now);
  }
  if (wake_.held()) {
    // Woken from a pause: the job hears it once this root heard its links
    // anew (wake_gate.h).
    wake_.Hold([this, frame, msg = *m](double at) { machine_.OnFromChild(frame, msg, at); });
    return;
  }
  machine_.OnFromChild(frame, *m, now);
}

void TreeLinks::ToJob(double now, std::function<void(JobMachine&, double)> call) {
  Woke(now);
  if (!wake_.held()) return call(machine_, now);
  wake_.Hold([this, call = std::move(call)](double at) { call(machine_, at); });
}

// A root whose loop ran nothing for WakeGate::kGapS was paused (wake_gate.h).
void TreeLinks::Woke(double now) {
  // (With --spares alone: without them no heir can hold the job, and the
  // root's word stays the job's whatever it missed.)
  if (!wake_.Ran(now, io_->WallNow(), go_ && machine_.root() && job_.size >= 3 && job_.spares > 0))
    return;
  LogVerbose("control plane: this shim, the job's root, ran nothing for " +
          FormatNumber(wake_.paused_s(), "%.1f") +
          " s (stopped or descheduled): it hears its links anew before it acts on the job");
}

// Whether a woken root heard enough to act: more than half of the job's
// shims since its backlog was read (each child with the shims below it),
// or every child it still has when it lost none since it woke (its other
// children ended in order: the job's end).
bool TreeLinks::Settled() const {
  int heard = 1;
  bool all = true;
  for (const Child& c : children_) {
    if (c.done || c.gone) continue;
    if (!wake_.Fresh(c.live.last_heard, c.beat_ts)) {
      all = false;
      continue;
    }
    heard += 1 + static_cast<int>(Below(c.rank).size());
  }
  return (all && !wake_.lost()) || heard * 2 > job_.size;
}

void TreeLinks::OnParentFrame(const std::string& frame, double now) {
  if (parent_ < 0 || parent_lost_) return;
  auto m = Msg::Decode(frame);
  if (!m.ok()) return LoseParent("it sent a garbled message", true, now);
  parent_live_.Heard(now);
  const std::string& t = m->type();
  ++frames_[t];
  if (t == "beat") {
    // NTP's four times (shim/control/pace/clock_offset.h), and the parent's
    // clock against the root's.
    const double sent = m->Number("t1", -1);
    if (sent > 0) to_parent_.Exchange(sent, m->Number("t2"), m->Number("t3"), io_->WallNow());
    if (m->Int("rk", 0) == 1) parent_root_ = RootClock{true, m->Number("ro"), m->Number("rb")};
    return;
  }
  if (t == "pace") {
    machine_.straggler().FromParent(*m, now);
    return;
  }
  if (t == "go") {
    if (go_) return;  // a heir's welcome to a shim linked anew
    go_ = true;
    SendDown(frame);
    return;
  }
  if (t == "heir") {
    // The root named its heir (job_heir.cc); the heir gets its record too.
    heir_ = static_cast<int>(m->Int("shim", -1));
    heir_addr_ = m->Str("addr");
    next_ = static_cast<int>(m->Int("next", -1));
    next_addr_ = m->Str("naddr");
    handed_from_ = -1;    // (the root's own record comes now)
    relinked_heir_ = -1;  // a heir that names its own holds the job
    LogVerbose("control plane: the root's heir is " + ShimName(heir_, "") + " at " +
               EscapeControl(heir_addr_));
    return;
  }
  if (t == "record") {
    machine_.OnRecord(frame);
    return;
  }
  if (t == "to") {
    // The root's words of this attempt for a child that moved here (the
    // cut link may have lost them): for it alone.
    const int shim = static_cast<int>(m->Int("shim", -1));
    if (Keeps(shim)) io_->Send(shim, m->Str("f"));
    return;
  }
  if (t == "gone") {
    machine_.OnGone(frame);
    return;
  }
  if (t == "abort") {
    abort_ = m->Str("why");
    SendDown(frame);
    return;
  }
  if (t == "yield") {
    // The root stepped down (its heir holds the job's election): as if its
    // link had closed, this shim links to the heir (StepDown).
    return LoseParent("it stepped down: its heir found it silent", false, now);
  }
  if (t == "drop") {
    // The root had found this child of its lost before the child linked
    // here: it is stopped, as a shim cut off from a root that holds the job.
    const int shim = static_cast<int>(m->Int("shim", -1));
    Child* c = Find(shim);
    if (!c || c->done || c->gone) return;
    io_->Send(shim, LostStop("the control plane lost " + ShimName(shim, c->host) +
                             "'s link to rank 0's shim, which holds the job still")
                        .Encode());
    return;
  }
  if (LeavesInOrder(*m)) parent_lost_ = true;  // it goes; not a loss to report
  machine_.OnFromParent(frame, *m, now);
}

// ---- Time

// A beat up says how long ago the subtree wrote and when it left; a beat
// down to each child answers its last (NTP's t1, t2, t3) and says this
// shim's clock against the root's.
void TreeLinks::Beat(double now) {
  next_beat_ = now + beat_s_;
  if (parent_ >= 0 && !parent_lost_)
    io_->Send(parent_, Msg("beat")
                           .SetNumber("age", now - SubtreeOutput())
                           .SetNumber("ts", io_->WallNow())
                           // When this shim would find its parent silent:
                           // the root waits that long (and a relink) for a
                           // silent child before it counts it lost.
                           .SetNumber("al", parent_live_.Allowance(now, 0))
                           .SetNumber("su", std::max(0.0, go_at_ + startup_s_ - now))
                           .Encode());
  io_->SentDown(Msg("beat").Encode());  // (one beat down, whatever each child's says)
  const RootClock mine = root_clock();
  for (Child& c : children_) {
    if (c.done || c.gone) continue;
    Msg beat("beat");
    if (c.beat_sent > 0) {
      beat.SetNumber("t1", c.beat_sent).SetNumber("t2", c.beat_came);
      beat.SetNumber("t3", io_->WallNow());
      c.beat_sent = -1;  // each of its beats answered once
    }
    if (mine.known) beat.Set("rk", 1).SetNumber("ro", mine.offset).SetNumber("rb", mine.bound);
    io_->Send(c.rank, beat.Encode());
  }
}

RootClock TreeLinks::root_clock() const {
  if (machine_.root()) return RootClock{true, 0, 0};
  if (parent_ < 0 || parent_lost_) return RootClock();
  return ComposeRootClock(to_parent_, parent_root_);
}

// ---- The straggler check's looks (straggler_looks.h)

std::vector<int> TreeLinks::LiveChildren() const {
  std::vector<int> kids;
  for (const Child& c : children_)
    if (!c.done && !c.gone) kids.push_back(c.rank);
  return kids;
}

void TreeLinks::OnOwnPace(int64_t look, const std::vector<RankTimes>& times, double now) {
  machine_.straggler().Own(look, times, now);
}

double TreeLinks::NextDeadline(double now) const {
  double next = std::min(now + 3600, next_beat_);
  const double startup_until = go_at_ + startup_s_;
  for (const Child& c : children_)
    if (!c.done && !c.gone && go_)
      next = std::min(next, c.relink_until >= 0 ? c.relink_until
                                                 : c.live.LostAt(now, startup_until));
  if (parent_ >= 0 && !parent_lost_ && go_)
    next = std::min(next, parent_live_.LostAt(now, startup_until));
  // The allowances shrink when start-up is over: look again then.
  if (go_ && startup_until > now) next = std::min(next, startup_until);
  if (wake_.held()) next = std::min(next, wake_.Deadline());
  else if (go_) next = std::min(next, machine_.NextDeadline(now));
  next = machine_.straggler().NextDeadline(next, go_);
  return std::max(next, now);
}

void TreeLinks::OnTimer(double now) {
  Woke(now);
  if (wake_.held() && Settled()) {
    wake_.Release(now);
  } else if (wake_.held() && now >= wake_.Deadline()) {
    wake_.Drop();
    StepDown(now, "no majority: this shim, the job's root, ran nothing for " +
                      FormatNumber(wake_.paused_s(), "%.1f") +
                      " s (stopped or descheduled), and heard from no more than half of the "
                      "job's shims within " + FormatNumber(WakeGate::kConfirmS, "%g") +
                      " s of waking: its heir may hold the job; this shim steps down and "
                      "writes no record of the job");
  }
  const double startup_until = go_at_ + startup_s_;
  // Stopped or descheduled since its links were read: its own pause is no
  // one's silence (what came meanwhile is read in the next round).
  const bool fresh = polled_at_ < 0 || now - polled_at_ <= kPollGapS;
  for (Child& c : children_) {
    if (c.done || c.gone || !go_ || !fresh) continue;
    if (c.relink_until >= 0) {
      if (now < c.relink_until) continue;
      if (c.left)
        Lose(c, c.relink_why + "; it left for the heir, which did not say it came", true, now);
      else
        Lose(c, "silent for " + FormatNumber(now - c.live.last_heard, "%.1f") +
                    " s, and not below the heir either",
             true, now);
    } else if (now >= c.live.LostAt(now, startup_until)) {
      const double until = AwaitMoveUntil(c);
      if (now < until) {
        // It may be alive with only this link cut: it finds this shim
        // silent too, and links to the heir (which says so: "moved"), or,
        // the heir, to the successor.
        c.relink_until = until;
        c.relink_why = "";
        if (c.rank == machine_.heir()) machine_.NoteHeirSilent(now);
      } else {
        Lose(c, "silent for " + FormatNumber(now - c.live.last_heard, "%.1f") + " s", true, now);
      }
    }
  }
  if (parent_ >= 0 && !parent_lost_ && go_ && fresh &&
      now >= parent_live_.LostAt(now, startup_until))
    LoseParent("silent for " + FormatNumber(now - parent_live_.last_heard, "%.1f") + " s", true,
               now);
  if (now >= next_beat_) Beat(now);
  if (go_ && !wake_.held()) machine_.OnTimer(now);
  machine_.straggler().OnTimer(now, go_);
}

// ---- JobPorts

void TreeLinks::SendUp(const std::string& frame) {
  // (Each loss passed up is kept: a heir hears it again, LoseParent.)
  if (FrameIs(frame, "lost")) lost_up_.push_back(frame);
  if (parent_ >= 0 && !parent_lost_) io_->Send(parent_, frame);
}

// The root's heir: its first child still linked (where it listens, as its
// hello said: the root's first or a new root's alike); every child is told
// which (the heir and the others alike).
int TreeLinks::NameHeir() {
  if (parent_ >= 0) return -1;
  for (const Child& c : children_)
    if (!c.done && !c.gone && !c.addr.empty()) return SayHeir(c.rank);
  next_ = -1;
  return -1;
}

// The successor: the next child still linked (the one NameHeir names
// should the heir leave the root's children).
int TreeLinks::SayHeir(int heir) {
  const Child* h = Find(heir);
  if (!h) return -1;
  next_ = -1;
  next_addr_.clear();
  for (const Child& c : children_)
    if (!c.done && !c.gone && !c.addr.empty() && c.rank != heir) {
      next_ = c.rank;
      next_addr_ = c.addr;
      break;
    }
  Msg frame("heir");
  frame.Set("shim", heir).Set("addr", h->addr);
  if (next_ >= 0) frame.Set("next", next_).Set("naddr", next_addr_);
  const std::string encoded = frame.Encode();
  for (const Child& c : children_)
    if (!c.done && !c.gone) io_->Send(c.rank, encoded);
  return heir;
}

void TreeLinks::SendTo(int shim, const std::string& frame) {
  if (Keeps(shim)) io_->Send(shim, frame);
}

void TreeLinks::SendDown(const std::string& frame) {
  io_->SentDown(frame);
  // The root keeps the words of the attempt under way, from its restart
  // on, for a child that moves below the heir after a cut ("moved").
  if (machine_.root()) {
    if (FrameIs(frame, "restart")) said_down_.clear();
    for (const char* type : {"restart", "halt", "end", "collect", "finish", "stop"})
      if (FrameIs(frame, type)) said_down_.push_back(frame);
  }
  for (const Child& c : children_)
    if (!c.done && !c.gone) io_->Send(c.rank, frame);
}

double TreeLinks::SubtreeOutput() const {
  double t = std::max(my_output_, departed_output_);
  for (const Child& c : children_)
    if (!c.done && !c.gone) t = std::max(t, c.output);
  return t;
}

void TreeLinks::ResetOutput(double now) {
  my_output_ = departed_output_ = now;
  for (Child& c : children_) c.output = now;
}

bool TreeLinks::ChildrenAllDone() const {
  for (const Child& c : children_)
    if (!c.done && !c.gone) return false;
  return true;
}

bool TreeLinks::ChildrenLinked() const {
  for (const Child& c : children_)
    if (!c.done && !c.gone && io_->Open(c.rank)) return true;
  return false;
}

bool TreeLinks::Flushed() const {
  if (parent_ >= 0 && !parent_lost_ && io_->Pending(parent_)) return false;
  for (const Child& c : children_)
    if (!c.done && !c.gone && io_->Pending(c.rank)) return false;
  return true;
}

}  // namespace aml
