#include "shim/preflight/node_fan_in.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>

#include "shim/base/sha256.h"
#include "shim/net/local_socket.h"

namespace aml {
namespace {

// A member's pause between attempts while its leader starts: short at
// first, then a little longer, so that thousands of members waiting for
// late leaders do not keep the node's cores busy.
constexpr std::chrono::milliseconds kFirstRetry{5}, kMaxRetry{100};

GateLimits MemberLimits() {
  GateLimits l;
  l.max_hello = 512;  // a member speaks for itself only
  l.same_user_only = true;
  l.door = "the node leader's socket";
  return l;
}

}  // namespace

std::string NodeSocketName(const std::string& master_addr, int master_port, int size,
                           const std::string& token, const std::string& host) {
  const std::string job = master_addr + "\n" + std::to_string(master_port) + "\n" +
                          std::to_string(size) + "\n" + token + "\n" + host + "\n" +
                          std::to_string(geteuid());
  return "aml-shim-preflight-" + SecretDigest("node", job).substr(0, 40);
}

NodeLeader::NodeLeader(Fd listener, int size, const Prover& prover)
    : listener_(std::move(listener)), gate_(listener_.get(), size, prover, MemberLimits()) {}

std::unique_ptr<NodeLeader> NodeLeader::Start(const std::string& name, int size,
                                              const Prover& prover) {
  auto l = ListenLocal(name);
  if (!l.ok()) return nullptr;
  return std::unique_ptr<NodeLeader>(new NodeLeader(std::move(*l), size, prover));
}

std::vector<int> NodeLeader::Gather(int want, Deadline until) {
  gate_.Run(until, want);
  // Late members find the door closed (or their connection closed) and go
  // to rank 0 themselves.
  listener_.reset();
  gate_.DropPending();
  std::vector<int> ranks;
  const auto& conn = gate_.connection_of_rank();
  for (size_t r = 0; r < conn.size(); ++r)
    if (conn[r] >= 0) ranks.push_back(static_cast<int>(r));
  return ranks;
}

void NodeLeader::Relay(const std::string& verdict, Deadline by) {
  for (const Fd& m : gate_.connections()) (void)SendFrame(m.get(), verdict, by);
}

Result<Fd> JoinLeader(const std::string& name, Deadline until) {
  auto pause = kFirstRetry;
  std::optional<Deadline> stuck_since;
  for (;;) {
    int err = 0;
    auto fd = ConnectLocal(name, &err);
    if (fd.ok()) {
      if (PeerIsSameUser(fd->get())) return std::move(*fd);
      return Error{"the node's socket '@" + name + "' is held by another user"};
    }
    // EAGAIN: a listener whose backlog is full. A leader accepts as it goes;
    // one that stays full accepts nobody.
    if (err == EAGAIN) {
      if (!stuck_since) stuck_since = Clock::now();
      if (Clock::now() - *stuck_since >= kStuckBacklog)
        return Error{"the node's socket '@" + name + "' is held by a listener that accepts "
                     "nobody (its backlog stayed full)"};
    } else {
      stuck_since.reset();
    }
    if (Clock::now() + pause >= until) return Error{"no node leader answered in time"};
    std::this_thread::sleep_for(pause);
    pause = std::min(kMaxRetry, pause * 2);
  }
}

}  // namespace aml
