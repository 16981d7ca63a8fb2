// The job-wide control plane (docs/control-plane.md, "Control plane"): while the job runs
// every shim stays connected to rank 0's shim through a tree (tree_plan.h),
// so that a failure on any node ends every node, a shim that dies is seen at
// once, and rank 0 can judge the whole job hung and collect every rank's
// stack (roll_call.h).
//
// Joining: before any child starts, every shim connects to rank 0 at
// MASTER_ADDR:MASTER_PORT (where rank 0 listens only until everyone has
// joined), gets its parent's address, connects to its parent and says it is
// up; rank 0 says go when every shim is up. Each connection must prove it
// belongs to the job within 5 s, in a frame of at most 4 KiB: the listener
// sends a challenge as it accepts, the shim answers with a keyed digest of it
// under the job's secret (membership.h), bound to the door, the direction
// and its rank (shim/base/proof.h), and the listener's answer proves itself
// the same way; a rank already connected is not taken twice. At most 64
// connections wait at a door for their proof, the rest in the listen backlog.
//
// Running: each shim sends its parent a heartbeat every beat (0.25 s to 1 s)
// with how long ago its part of the job last wrote output; parents beat down.
// A link that closes or breaks is a lost shim, and so is one silent for
// longer than its allowance: 30 s for the first 30 s after go (start-up:
// thousands of shims starting ranks on a few cores are slow to beat), then
// 4 times the longest recent gap between its frames, from 5 s to 30 s (a
// frozen shim or a cut link is found within 5 s of a steady job).
//
// This class is the overlay over TCP: the tree's doors, proofs, framing and
// connections; the running links (beats, silence, losses, relays) are
// TreeLinks (tree_links.h) over these connections, the same code the
// simulator runs. What the job's shims decide together (a failure's
// verdict, a hang's roll-call, restarts, who exits when) is the job's state
// machine (job_machine.h), which the links drive and whose frames they
// carry.
//
// One shim alone (size 1) has no network part: the watchdog runs locally.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch/job_link.h"
#include "shim/base/proof.h"
#include "shim/base/result.h"
#include "shim/control/door.h"
#include "shim/control/job_machine.h"
#include "shim/control/plane_timing.h"
#include "shim/control/tree_links.h"
#include "shim/control/tree_plan.h"
#include "shim/control/wire.h"
#include "shim/net/crowded_door.h"

namespace aml {

// The job's fields (job_machine.h: rank, size, host, ranks, --hang-timeout,
// --grace, --max-restarts, ...) and the overlay's.
struct PlaneConfig : JobConfig {
  std::string master_addr;
  int master_port = 0;
  Prover prover;           // the job's proof of membership (shim/base/proof.h)
  double join_timeout_s = 60;
  int fanout = 32;
  // The first seconds after go, when a silent link is given kMaxSilenceS;
  // then 4 times its longest recent gap, at least kMinSilenceS (liveness.h).
  double startup_s = PlaneTiming{}.startup_s;
};

class ControlPlane : public JobLink, private LinkIo {
 public:
  static constexpr const char* kVersion = kPlaneVersion;
  static constexpr size_t kMaxHelloFrame = 4 << 10;  // a join or a hello
  static constexpr size_t kMaxFrame = 1 << 20;       // anything after it

  // Joins the plane; returns once rank 0 said go. The error is why the job
  // cannot start (every shim exits 125).
  static Result<std::unique_ptr<ControlPlane>> Join(const PlaneConfig& config);
  ~ControlPlane() override;

  void AddPollFds(std::vector<pollfd>* fds) override;
  void OnPoll(const pollfd* fds, size_t n, double now) override;
  double NextDeadline(double now) const override;
  void OnTimer(double now) override;
  void OnOutput(double now) override;
  void OnChildFailed(const LocalFailure& f) override;
  void OnStacks(const std::vector<RankStack>& stacks) override;
  void OnRecords(const std::vector<RankRecord>& records) override;
  void OnPace(int64_t look, const std::vector<RankTimes>& times) override;
  void AppendMetrics(PromText* out, double now) const override;
  void OnChildrenDone(const NodeOutcome& o) override;
  void OnWarmStarts(int warm, int cold) override;
  void OnShimSignalled(int sig, const std::string& why = "") override;
  bool MayExit() const override;
  bool PrintsOwnFailure() const override;
  RecordStamp Stamp() const override { return tree_.machine().Stamp(); }
  std::optional<LinkOrder> TakeOrder() override;
  void LendStoreHost(StoreHost* host) override { store_host_ = host; }

  // For -v and the bench: the tree's depth and this shim's connections.
  int depth() const { return tree_.depth(); }
  JobState state() const { return tree_.machine().state(); }
  size_t links() const { return children_.size() + (parent_ ? 1 : 0); }

 private:
  struct Peer {
    std::unique_ptr<FrameLink> link;
    int rank = -1;          // -1 until its hello; -2 when finished (refused, done, lost)
    std::string host, addr;
    double hello_until = 0; // pending: say hello by then
    double accepted_at = 0;
    std::string challenge;  // the nonce this side sent it (shim/base/proof.h)
    bool greeted = false;   // its first frame, a greeting, was read
  };
  explicit ControlPlane(const PlaneConfig& c);
  Status JoinAsRoot();
  Status JoinAsMember();
  Status RunUntilGo(double deadline);
  double Now() const;
  void AppendPaceMetrics(PromText* out) const;

  static size_t Unproven(const std::vector<std::unique_ptr<Peer>>& peers);
  void AcceptPending(int listen_fd, std::vector<std::unique_ptr<Peer>>* into,
                     DoorCrowd* crowd, double now);
  void SayTreeCrowd() const;
  void ReadDoor(Peer& p, double now);
  void ReadChild(Peer& p, double now);
  bool Connected(int rank) const;
  static void SkipGreeting(Peer* p, std::vector<std::string>* frames);
  void ReadParent(double now);
  void ForgetGoneChildren(double now);
  void DropLostParent();
  // LinkIo: the tree's links (tree_links.h) are these connections.
  Peer* Linked(int peer) const;
  void Send(int peer, const std::string& frame) override;
  bool Open(int peer) const override;
  bool Pending(int peer) const override;
  double WallNow() const override;
  int FreePort() const override;
  bool HostStore(int port) override;
  std::vector<int> Below(int shim) const override;
  std::vector<int> Parents() const override;
  bool Relink(int heir, const std::string& addr, double now) override;
  double RootHeardAgo(int shim, const std::string& addr, double now) override;
  static constexpr double kAskS = 1;  // each step of that ask (plane_join.cc)
  // This shim's side of a door's proofs (door.h).
  Msg Introduce(const std::string& type, const std::string& challenge,
                const std::string& nonce) const;
  bool ProvesDown(const std::string& door, const Msg& m, const std::string& challenge,
                  const std::string& nonce) const;

  PlaneConfig c_;
  Fd listener_;                 // children connect here
  int listen_port_ = 0;
  StoreHost* store_host_ = nullptr;  // --warm-restart, rank 0's node (launch/store_host.h)
  bool said_store_ = false;           // why it could not, said once
  Fd door_;                     // rank 0, while joining: MASTER_PORT
  std::vector<std::unique_ptr<Peer>> door_pending_, children_;
  std::unique_ptr<Peer> parent_;
  int parent_rank_ = -1;
  std::unique_ptr<TreePlanner> planner_;
  int refused_ = 0;             // strangers refused (for -v)
  // Seats given up (crowded_door.h) at rank 0's MASTER_PORT while joining,
  // and at this shim's own listener for the tree.
  DoorCrowd door_crowd_, tree_crowd_;
  TreeLinks tree_;              // the running links and the job's state machine
};

}  // namespace aml
