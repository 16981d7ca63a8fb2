// Sockets between the processes of one node: Linux's abstract Unix socket
// namespace (no file to plant a link on or to clean up; one namespace per
// network namespace, so per node or container), and the peer's user from
// SO_PEERCRED, so that another user's process can neither take a name nor
// talk to ours.
#pragma once

#include <string>

#include "shim/base/result.h"
#include "shim/net/tcp.h"

namespace aml {

// Listens on the abstract name (no leading NUL; at most 100 bytes),
// non-blocking. EADDRINUSE: someone holds the name.
Result<Fd> ListenLocal(const std::string& name);

// One attempt to connect, non-blocking. An error when nobody listens (yet)
// or the backlog is full: the caller retries.
// `error_code`, when given, gets connect(2)'s errno on failure.
Result<Fd> ConnectLocal(const std::string& name, int* error_code = nullptr);

// The peer runs as this process's effective user.
bool PeerIsSameUser(int fd);

}  // namespace aml
