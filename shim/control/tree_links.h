// The running part of the control plane's overlay (docs/control-plane.md,
// "The job's state machine"): a shim's links in the tree once each is
// proven, whatever carries them. It notes every frame as a sign of life
// (liveness.h) and loses a link that closes or stays silent, beats up and
// down, carries the subtree's last output in its beats, relays the join's
// words (up, go, abort), and hands the job's words to the state machine
// (job_machine.h), which it serves as its JobPorts. The real overlay
// (plane.h) puts it over TCP links; the simulator (shim/sim) over
// simulated ones: the same code either way.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shim/control/pace/clock_offset.h"
#include "shim/base/clock.h"
#include "shim/control/job_machine.h"
#include "shim/control/liveness.h"
#include "shim/control/straggler_looks.h"
#include "shim/control/wake_gate.h"

namespace aml {

// How long the root awaits a child that said it left (for the heir) under
// the heir, once its own link to it failed: the relink's connection and
// proof (5 s each, plane_join.cc) and the heir's word up ("moved"). A child
// that fell silent (its "left" may be lost on a cut link) is awaited as
// long, from when the child itself would find the root silent (its beats
// say its allowance): a link cut between the root and one child moves the
// child below the heir, it is not a lost node.
constexpr double kRelinkS = 12;

// The root's heir that finds the root silent asks the root's successor (the
// child it names after the heir) how long ago it last heard the root: within
// this, the root lives and only the heir's own link to it failed, so the
// heir moves below the successor and stays in the job (a frozen root's
// silence is as old at the successor as at the heir: kMinSilenceS or more).
constexpr double kRootHeardS = kMinSilenceS / 2;

// What carries the links: frames to a peer (a shim, by rank) and the
// state of its link.
class LinkIo {
 public:
  virtual ~LinkIo() = default;
  virtual void Send(int peer, const std::string& frame) = 0;
  virtual bool Open(int peer) const = 0;     // not closed or broken
  virtual bool Pending(int peer) const = 0;  // frames wait to be written
  virtual double WallNow() const = 0;        // CLOCK_REALTIME
  virtual int FreePort() const = 0;          // the next attempt's MASTER_PORT
  // --warm-restart: the next attempt's store opened on `port` by this
  // node's store host (launch/store_host.h); false: rank 0 hosts it.
  virtual bool HostStore(int port) {
    (void)port;
    return false;
  }
  // Rank 0: the shims below `shim` in the tree its planner made.
  virtual std::vector<int> Below(int shim) const = 0;
  // A frame sent down to every child (once, whatever their number: the
  // simulator records rank 0's verdicts by it).
  virtual void SentDown(const std::string& frame) { (void)frame; }
  // --spares, a new root (job_heir.cc): each shim's parent as the join
  // placed it (the root's planner; empty elsewhere), and a link to the heir
  // in place of the parent lost: true once the heir took it as its child.
  virtual std::vector<int> Parents() const { return {}; }
  virtual bool Relink(int heir, const std::string& addr, double now) {
    (void)heir, (void)addr, (void)now;
    return false;
  }
  // The heir: how long ago `shim` (the root's successor, listening at
  // `addr`) last heard its parent, the root, as its answer to a hello that
  // only asks says; -1: no answer, or it hears no root.
  virtual double RootHeardAgo(int shim, const std::string& addr, double now) {
    (void)shim, (void)addr, (void)now;
    return -1;
  }
};

class TreeLinks : private JobPorts, private LookLinks {
 public:
  // `startup_s`: the first seconds after go, when a silent link is given
  // kMaxSilenceS (PlaneConfig::startup_s).
  TreeLinks(const JobConfig& job, LinkIo* io, double beat_s, double startup_s);

  JobMachine& machine() { return machine_; }
  const JobMachine& machine() const { return machine_; }

  // The tree, as the join made it (and a new root remakes it). `addr`:
  // where the child listens for children of its own (door.h's
  // ListenAddress): a heir is named by it.
  void SetParent(int rank, const std::string& addr);
  void AddChild(int rank, const std::string& host, const std::string& addr, double now);
  void set_depth(int depth) { depth_ = depth; }
  int depth() const { return depth_; }
  // The join: go said (by rank 0's word, or at rank 0 every shim up), and
  // the job started (Start); `abort` is rank 0's word when the join failed.
  bool go() const { return go_; }
  bool all_up() const { return static_cast<int>(up_.size()) == job_.size - 1; }
  const std::string& abort() const { return abort_; }
  void Start(double now);

  // What the links bring.
  void OnChildFrame(int rank, const std::string& frame, double now);
  void OnParentFrame(const std::string& frame, double now);
  void OnChildClosed(int rank, const std::string& why, double now);
  void OnParentClosed(const std::string& why, double now);
  void OnOutput(double now) { my_output_ = now; }

  int heir() const { return heir_; }
  // A child still part of the job (not done, not lost); the parent lost or gone.
  bool Keeps(int child) const;
  bool parent_lost() const { return parent_lost_; }
  int parent() const { return parent_; }
  // When the parent was last heard (-1: no parent, or lost).
  double parent_heard_at() const {
    return parent_ >= 0 && !parent_lost_ ? parent_live_.last_heard : -1;
  }
  // The answer to a heir's ask (RootHeardAgo): how long ago this shim, a
  // child of the root, last heard it; -1 when it is no child of the root
  // any more (it lost it, or moved below the heir); the root names its heir
  // to its children alone.
  double RootHeardAgo(double now) const {
    return heir_ >= 0 && relinked_heir_ < 0 && parent_heard_at() >= 0
               ? std::max(0.0, now - parent_heard_at())
               : -1;
  }
  // The root's successor the root named with its heir (-1: none).
  int successor() const { return next_; }
  std::vector<int> children() const;  // every child ever added

  double NextDeadline(double now) const;
  // The real loop read its links (plane.cc, each round before OnTimer). A
  // round whose timers run long after its read (the process was stopped or
  // descheduled in between) judges no link silent: what came meanwhile is
  // read first, in the next round (the simulator reads its backlog first).
  void OnPolled(double now) { polled_at_ = now; }
  static constexpr double kPollGapS = kDescheduledS;
  void OnTimer(double now);

  void SendUp(const std::string& frame) override;
  void SendDown(const std::string& frame) override;
  const std::set<int>& ups() const { return up_; }

  // The straggler check (docs/control-plane.md, "Slow nodes"): this node's
  // part of a look (its ranks' entry times, as the node machine read them),
  // this shim's clock against the root's (from the beats), and how many
  // parts came after their look went up.
  void OnOwnPace(int64_t look, const std::vector<RankTimes>& times, double now);
  RootClock root_clock() const;
  int64_t pace_dropped() const { return machine_.straggler().dropped(); }
  int64_t pace_looks() const { return machine_.straggler().sent(); }
  // Frames handled after the join, by type (-v; the simulator's "frames").
  const std::map<std::string, long>& frames() const { return frames_; }

 private:
  struct Child {
    int rank = -1;
    std::string host, addr;
    Liveness live;
    // Its last beat: when it left (its clock) and came (ours); -1: none.
    double beat_sent = -1, beat_came = -1;
    double beat_ts = -1;  // its last beat's send time (its clock), kept (wake_gate.h)
    double output = 0;   // its subtree's last output (our clock)
    bool done = false;   // left in order (done, or stopped by its launcher)
    bool gone = false;   // lost
    bool left = false;   // it said it left for the root's heir (alive)
    // The root: a child that said it left and whose link then failed is
    // awaited under the heir until then (-1: not awaited), and why its
    // link failed; it moved there (the heir said so): still in the job.
    double relink_until = -1;
    std::string relink_why;
    bool moved = false;
    // What its beats say of its own allowance for this shim (liveness.h):
    // once its start-up is over (our clock: `their_startup_until`), and
    // after it (`their_allowance`); until its first beat, the most.
    double their_allowance = kMaxSilenceS;
    double their_startup_until = 0;
  };
  Child* Find(int rank);
  void Lose(Child& c, const std::string& why, bool silent, double now);
  // The root: its words down since the attempt under way began (its
  // restart, a halt, an end...), said again to a child that moved.
  std::vector<std::string> said_down_;
  // The root: until when a silent child may yet say (through the heir)
  // that it moved below it; -1 when it cannot.
  double AwaitMoveUntil(const Child& c) const;
  void LoseParent(const std::string& why, bool silent, double now);
  // Linked below `to` (at `addr`) in place of the lost parent: the root's
  // heir, or (the heir, its own link cut) the root's successor.
  bool MoveBelow(int to, const std::string& addr, const std::string& why, bool silent,
                 bool was_heir, double now);
  // The root: its heir and the successor after it (the next child the
  // heir's place would go to), said to every child.
  int SayHeir(int heir);
  void StepDown(double now, const std::string& why);
 public:
  // This node's own word to the job (its ranks' failure, records, stacks,
  // end): handed to the job now, or held as the links' words are while a
  // woken root hears its links anew (wake_gate.h).
  void ToJob(double now, std::function<void(JobMachine&, double)> call);

 private:
  void Beat(double now);
  // LookLinks (the straggler check's looks: straggler_check.h).
  std::vector<int> LiveChildren() const override;
  int LevelsBelow(int level) const override { return depth_ - level; }
  RootClock Clock() const override { return root_clock(); }

  // JobPorts.
  double SubtreeOutput() const override;
  void ResetOutput(double now) override;
  double HangSlackS() const override { return beat_s_ * depth_; }
  bool ChildrenAllDone() const override;
  bool ChildrenLinked() const override;
  bool Flushed() const override;
  bool ParentClosed() const override { return parent_ >= 0 && !io_->Open(parent_); }
  double WallNow() const override { return io_->WallNow(); }
  int FreePort() const override { return io_->FreePort(); }
  bool HostStore(int port) override { return io_->HostStore(port); }
  std::vector<int> Below(int shim) const override { return io_->Below(shim); }
  int NameHeir() override;
  void SendTo(int shim, const std::string& frame) override;
  std::vector<int> Parents() const override { return io_->Parents(); }

  JobConfig job_;
  LinkIo* io_;
  double beat_s_, startup_s_;
  int parent_ = -1;
  std::string parent_addr_;
  Liveness parent_live_;
  bool parent_lost_ = false;
  int heir_ = -1;               // the root's heir, as the root (the parent) named it
  std::string heir_addr_;
  // The successor the root named with it: should the heir's own link to the
  // root fail while the successor still hears the root, the heir moves
  // below it, hands it its record, and the successor is the heir (the root
  // renames it so when it hears of the move). At the root: the one named.
  int next_ = -1;
  std::string next_addr_;
  // The child that was the heir and handed this shim its place: its record
  // and the root's losses said since are this shim's (-1: none).
  int handed_from_ = -1;
  // The heir this shim linked to when the root was lost, until it names a
  // heir of its own (it then holds the job), and how the root was lost.
  int relinked_heir_ = -1;
  std::string lost_root_;
  // Children of the root that lost it and linked here while this shim
  // still heard the root (their "orphan" words): should this shim, the
  // heir, find the root lost too, they count in its election.
  std::vector<std::string> adopted_;
  std::vector<Child> children_;
  std::set<int> up_;            // rank 0: shims up
  std::string abort_;
  bool go_ = false;
  int depth_ = 0;
  double go_at_ = 0, next_beat_ = 0;
  double polled_at_ = -1;  // the loop's last read of its links (-1: never said)
  // A root that wakes from a pause holds the job's words until it has
  // heard its links anew (wake_gate.h); Woke checks the loop's gap, and
  // Settled whether what it heard since lets the job have them.
  WakeGate wake_;
  void Woke(double now);
  bool Settled() const;
  double my_output_ = 0, departed_output_ = 0;
  std::map<std::string, long> frames_;
  std::vector<std::string> lost_up_;  // every "lost" it passed up
  // The straggler check's clocks: this shim's against its parent's and the
  // parent's against the root's (its beats say). (The check itself is the
  // job machine's: straggler_check.h.)
  ClockOffset to_parent_;
  RootClock parent_root_;
  JobMachine machine_;
};

}  // namespace aml
