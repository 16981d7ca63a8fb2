// The control plane's doors (plane.h, docs/control-plane.md, "Control plane"):
// what rank 0's MASTER_PORT (while shims join) and each shim's port for its
// children decide about a connection, from its frames alone, and what each
// side proves to the other. The real overlay (plane_join.cc, over TCP) and
// the simulator (shim/sim, over its links, with strangers, replayed proofs
// and a second hello for a linked rank among its faults) make the same
// decisions with the same code.
//
// A connection: the door sends a challenge (a fresh nonce and the kind of
// proof it asks for) as it accepts; the shim's first frame after its
// greeting is a join (at MASTER_PORT) or a hello (at a parent's port) with
// its own nonce and the proof of both for its rank; the door's answer (a
// place, or a welcome) carries the proof for the other direction.
#pragma once

#include <functional>
#include <string>

#include "shim/base/proof.h"
#include "shim/control/wire.h"

namespace aml {

constexpr char kPlaneVersion[] = "aml-shim-control-3";

// The challenge a door sends as it accepts a connection.
Msg DoorChallenge(const std::string& challenge, ProofKind kind);

// One side's proof for a connection at `door` ("join": rank 0's
// MASTER_PORT; "tree": a parent's port) for `rank`; "" (which proves
// nothing) when it cannot be made, with why in `*why`.
std::string DoorProof(const Prover& prover, const std::string& door, ProofDirection d,
                      const std::string& challenge, const std::string& nonce, int rank,
                      std::string* why = nullptr);

// A shim's first frame at a door: a join ("join") or a hello ("hello"),
// answering `challenge` with its own `nonce`; `port`: where it listens for
// children of its own (its parent passes on where: a new root's heir is
// reached there, job_heir.cc).
Msg Introduction(const Prover& prover, const std::string& type, int rank, int size,
                 const std::string& host, int port, const std::string& challenge,
                 const std::string& nonce, std::string* why = nullptr);

// What a door makes of a connection's first frame after its greeting.
struct Visitor {
  bool ok = false;
  int rank = -1, port = 0;
  std::string host, nonce;
  std::string why;  // refused: why
  // A hello that only asks (a root's heir that found the root silent asks
  // its successor whether it still hears the root: tree_links_losses.cc): the
  // welcome answers, and no link is made.
  bool ask = false;
};
// Rank 0's MASTER_PORT: a join with the job's proof for a rank of the job
// (and its port for the tree).
Visitor ReadJoin(const Prover& prover, int size, const std::string& challenge,
                 const std::string& frame);
// A parent's port: a hello with the job's proof from a rank that is not
// linked already (a second "rank 3" is refused; the real one, asking again
// after its first link broke, is let in once that link's end is read), and
// the port it listens at.
Visitor ReadHello(const Prover& prover, int size, const std::string& challenge,
                  const std::string& frame, const std::function<bool(int rank)>& linked);

// Where a visitor listens: the address its connection came from (as this
// side sees it) and the port it named, "ADDR:PORT" as a heir's address
// travels (plane_join.cc's Relink reads it back).
std::string ListenAddress(const std::string& from, int port);

// Rank 0's MASTER_PORT, a join proven: its place in the tree, from the
// address the connection came from (`from`) and rank 0's own end of it
// (`local`): a shim on rank 0's node (the same address) is grouped with
// rank 0 and reaches it at that address; rank 0 notes the shim's host and
// address (NODE_RANK 0's should it move there). plane_join.cc and the
// simulator place every joiner with it.
struct TreePlace;
class TreePlanner;
class JobMachine;
constexpr char kRootNode[] = "rank 0's node";
TreePlace PlaceJoiner(TreePlanner* planner, JobMachine* machine, const Visitor& v,
                      const std::string& from, const std::string& local);

// The door's answer to a visitor, proving itself: a place or a welcome.
Msg DoorAnswer(const Prover& prover, const std::string& type, const std::string& door,
               const std::string& challenge, const Visitor& v);
// The shim's check of the door's answer for its connection.
bool ProvesDoor(const Prover& prover, const std::string& door, const Msg& answer,
                const std::string& challenge, const std::string& nonce, int rank);

}  // namespace aml
