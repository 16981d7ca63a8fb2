#include "shim/control/door.h"

#include "shim/control/job_machine.h"
#include "shim/control/tree_plan.h"

namespace aml {

Msg DoorChallenge(const std::string& challenge, ProofKind kind) {
  return Msg("challenge").Set("n", challenge).Set("kind", std::string(ProofKindName(kind)));
}

std::string DoorProof(const Prover& prover, const std::string& door, ProofDirection d,
                      const std::string& challenge, const std::string& nonce, int rank,
                      std::string* why) {
  // A MUNGE credential that cannot be made (munged stopped) is an empty
  // proof, which proves nothing: the peer refuses, and says why.
  auto proof = prover.Make("control-plane-" + door, d, challenge, nonce, std::to_string(rank));
  if (!proof.ok()) {
    if (why) *why = proof.error().message;
    return "";
  }
  return *proof;
}

Msg Introduction(const Prover& prover, const std::string& type, int rank, int size,
                 const std::string& host, int port, const std::string& challenge,
                 const std::string& nonce, std::string* why) {
  Msg m(type);
  m.Set("v", std::string(kPlaneVersion)).Set("rank", rank).Set("size", size);
  m.Set("host", host).Set("port", port).Set("nonce", nonce);
  m.Set("proof", DoorProof(prover, type == "join" ? "join" : "tree", ProofDirection::kUp,
                           challenge, nonce, rank, why));
  return m;
}

namespace {

// The visitor's proof answers this connection's challenge for the rank it names.
bool ProvesVisitor(const Prover& prover, const std::string& door, const std::string& challenge,
                   const Msg& m, std::string* why) {
  return prover.Check(m.Str("proof"), "control-plane-" + door, ProofDirection::kUp, challenge,
                      m.Str("nonce"), std::to_string(m.Int("rank")), why);
}

Visitor Refused(std::string why) {
  Visitor v;
  v.why = std::move(why);
  return v;
}

}  // namespace

Visitor ReadJoin(const Prover& prover, int size, const std::string& challenge,
                 const std::string& frame) {
  auto m = Msg::Decode(frame);
  if (!m.ok() || m->type() != "join" || m->Str("v") != kPlaneVersion) return Refused("not a join");
  if (std::string why; !ProvesVisitor(prover, "join", challenge, *m, &why)) return Refused(why);
  const long long rank = m->Int("rank"), n = m->Int("size"), port = m->Int("port");
  if (n != size)
    return Refused("world size " + std::to_string(n) + ", but rank 0 has " + std::to_string(size));
  if (rank < 1 || rank >= size || port < 1 || port > 65535) return Refused("bad rank or port");
  Visitor v;
  v.ok = true;
  v.rank = static_cast<int>(rank);
  v.port = static_cast<int>(port);
  v.host = m->Str("host");
  v.nonce = m->Str("nonce");
  return v;
}

Visitor ReadHello(const Prover& prover, int size, const std::string& challenge,
                  const std::string& frame, const std::function<bool(int rank)>& linked) {
  auto m = Msg::Decode(frame);
  if (!m.ok() || m->type() != "hello" || m->Str("v") != kPlaneVersion) return Refused("not a hello");
  if (std::string why; !ProvesVisitor(prover, "tree", challenge, *m, &why)) return Refused(why);
  const long long rank = m->Int("rank"), port = m->Int("port");
  if (m->Int("size") != size || rank < 1 || rank >= size || port < 1 || port > 65535)
    return Refused("bad rank, size or port");
  if (linked(static_cast<int>(rank)))
    return Refused("rank " + std::to_string(rank) + " is linked already");
  Visitor v;
  v.ok = true;
  v.rank = static_cast<int>(rank);
  v.port = static_cast<int>(port);
  v.host = m->Str("host");
  v.nonce = m->Str("nonce");
  v.ask = m->Int("ask", 0) == 1;
  return v;
}

std::string ListenAddress(const std::string& from, int port) {
  return from + ":" + std::to_string(port);
}

TreePlace PlaceJoiner(TreePlanner* planner, JobMachine* machine, const Visitor& v,
                      const std::string& from, const std::string& local) {
  // Shims are grouped by the node they come from: the address rank 0 sees
  // (host names may be shared, or lie), rank 0's own when they are equal.
  const bool root_node = from == local;
  TreePlace place = planner->Assign(v.rank, root_node ? kRootNode : from, from, v.port);
  // Rank 0's own address, as this shim reached it.
  if (place.parent == 0) place.addr = local;
  // A shim on rank 0's node is reached at rank 0's own address.
  machine->NoteHost(v.rank, v.host, root_node ? "" : from);
  return place;
}

Msg DoorAnswer(const Prover& prover, const std::string& type, const std::string& door,
               const std::string& challenge, const Visitor& v) {
  return Msg(type).Set("proof", DoorProof(prover, door, ProofDirection::kDown, challenge, v.nonce,
                                          v.rank));
}

bool ProvesDoor(const Prover& prover, const std::string& door, const Msg& answer,
                const std::string& challenge, const std::string& nonce, int rank) {
  return prover.Check(answer.Str("proof"), "control-plane-" + door, ProofDirection::kDown,
                      challenge, nonce, std::to_string(rank));
}

}  // namespace aml
