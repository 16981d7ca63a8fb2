#include "shim/rendezvous/token_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace aml {

TokenServer::TokenServer(Listener listener, std::string answer)
    : listener_(std::move(listener)), port_(listener_.port), answer_(std::move(answer)) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) == 0) {
    stop_read_ = Fd(p[0]);
    stop_write_ = Fd(p[1]);
  }
  thread_ = std::thread([this] { Loop(); });
}

TokenServer::~TokenServer() { Stop(); }

void TokenServer::Stop() {
  if (!thread_.joinable()) return;
  char c = 1;
  if (write(stop_write_.get(), &c, 1) < 0) {
    // The pipe cannot be full or closed here; nothing else to do.
  }
  thread_.join();
}

void TokenServer::Loop() {
  std::vector<Fd> peers;  // answered, waiting for the peer to close first
  bool stopping = false;
  Deadline drain_until{};
  // Out of descriptors: the listener rests a moment instead of spinning on
  // a connection it cannot accept (docs/preflight.md, "TCP preflight: limits and
  // strangers"; the file limit is raised at start).
  Deadline accept_after{};
  for (;;) {
    const bool resting = Clock::now() < accept_after;
    std::vector<pollfd> fds;
    fds.push_back({stop_read_.get(), POLLIN, 0});
    fds.push_back({stopping || resting ? -1 : listener_.fd.get(), POLLIN, 0});
    for (const Fd& p : peers) fds.push_back({p.get(), POLLIN, 0});
    if (stopping && peers.empty()) break;
    int timeout = resting ? PollTimeoutMs(accept_after) : -1;
    if (stopping) {
      if (Clock::now() >= drain_until) break;
      timeout = PollTimeoutMs(drain_until);
    }
    int rc = poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    if (!stopping && (fds[0].revents & POLLIN)) {
      stopping = true;
      // Peers have read their token by now (the collective that follows
      // completed); give them a moment to close their end first.
      drain_until = Clock::now() + std::chrono::seconds(2);
      listener_.fd.reset();
      continue;
    }
    if (!stopping && (fds[1].revents & POLLIN)) {
      for (;;) {
        int c = accept4(listener_.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) {
          if (errno == EMFILE || errno == ENFILE)
            accept_after = Clock::now() + std::chrono::milliseconds(50);
          break;
        }
        Fd peer(c);
        // A fresh socket's buffer takes the small answer at once; a peer
        // past the cap is answered and closed.
        if (SendFrame(peer.get(), answer_, Clock::now()).ok() && peers.size() < kMaxHeld)
          peers.push_back(std::move(peer));
      }
    }
    std::vector<Fd> still;
    for (size_t i = 0; i < peers.size(); ++i) {
      if (fds[i + 2].revents) {
        char buf[64];
        ssize_t r = recv(peers[i].get(), buf, sizeof buf, 0);
        if (r > 0 || (r < 0 && errno == EAGAIN)) still.push_back(std::move(peers[i]));
        // r == 0: the peer closed first; drop (close) ours.
      } else {
        still.push_back(std::move(peers[i]));
      }
    }
    peers = std::move(still);
  }
}

}  // namespace aml
