// Node-local fan-in for the TCP preflight (docs/preflight.md, "TCP preflight: limits
// and strangers"): when a launcher starts one shim per GPU, the shims of a
// node do not each connect to rank 0. The node's local rank 0 (its leader)
// listens on an abstract Unix socket named after the job and the host,
// gathers its node's hellos (same user only, the job's token, the same door
// as rank 0's: hello_gate.h), sends rank 0 one hello that speaks for all of
// them, and relays rank 0's verdict. Rank 0 then holds one connection per
// node, not per rank.
//
// Nothing depends on the local ranks being right: a member that finds no
// leader within half the preflight's time, or loses it, goes to rank 0
// itself; a leader whose members do not all come sends what it has at that
// point; a name another process holds makes its shim speak only for itself.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "shim/base/result.h"
#include "shim/base/proof.h"
#include "shim/preflight/hello_gate.h"

namespace aml {

// The node's socket name: a digest of the job (master, port, size, token)
// and of this host and user.
std::string NodeSocketName(const std::string& master_addr, int master_port, int size,
                           const std::string& token, const std::string& host);

class NodeLeader {
 public:
  // Null when the name is taken (by a shim that thinks it leads this node,
  // or by anyone else): this shim then speaks for itself only.
  static std::unique_ptr<NodeLeader> Start(const std::string& name, int size,
                                           const Prover& prover);
  // The ranks of the members whose hellos came, once `want` came or at
  // `until`; then it stops listening (later members go to rank 0).
  std::vector<int> Gather(int want, Deadline until);
  // Rank 0's verdict (or why this leader got none) to every member.
  void Relay(const std::string& verdict, Deadline by);

 private:
  NodeLeader(Fd listener, int size, const Prover& prover);
  Fd listener_;
  HelloGate gate_;
};

// A member: the leader's connection, once it answers (as this user), or why
// there is none: nobody by `until`, the name held by another user, or held
// by a listener that accepts nobody (its backlog full for kStuckBacklog: a
// stranger squatting the name; a real leader accepts as it goes). The
// member then goes to rank 0 itself.
inline constexpr std::chrono::milliseconds kStuckBacklog{1000};
Result<Fd> JoinLeader(const std::string& name, Deadline until);

}  // namespace aml
