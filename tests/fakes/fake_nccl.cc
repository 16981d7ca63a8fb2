// A stand-in for libnccl.so.2 on machines without a GPU, for end-to-end tests
// of the NCCL preflight. It really all-reduces, over TCP: ncclGetUniqueId
// starts a root thread that listens on the address of NCCL_SOCKET_IFNAME (as
// NCCL's bootstrap does; 127.0.0.1 when unset) and puts that address in the
// id; every rank connects, sends its buffer, and gets the sum back. Group
// calls are queued and run at ncclGroupEnd, so one process can drive several
// ranks. Faults, for the process whose RANK equals the value:
// FAKE_NCCL_CORRUPT_RANK (wrong sum), FAKE_NCCL_HANG_RANK (init never
// returns), FAKE_NCCL_SLOW_RANK with FAKE_NCCL_SLOW_MS (each all-reduce
// sleeps; or every process while the file FAKE_NCCL_SLOW_FILE exists: a
// node that became slow). FAKE_NCCL_VERSION overrides the version (22809).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct UniqueId {
  char internal[128];
};

struct IdBody {
  char magic[8];
  char ip[48];
  int port;
};

struct Comm {
  int fd = -1;
  int rank = 0, nranks = 1;
};

bool ThisRank(const char* var) {
  const char* want = std::getenv(var);
  const char* rank = std::getenv("RANK");
  return want && rank && std::strcmp(want, rank) == 0;
}

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = recv(fd, c, n, 0);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

std::string ListenAddress() {
  const char* ifname = std::getenv("NCCL_SOCKET_IFNAME");
  std::string want = ifname ? ifname : "";
  if (!want.empty() && want[0] == '=') want.erase(0, 1);
  if (want.empty() || want[0] == '^') return "127.0.0.1";
  std::string found = "127.0.0.1";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || want != a->ifa_name) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
    found = buf;
    break;
  }
  freeifaddrs(list);
  return found;
}

// Accepts every rank, then sums each round of buffers and sends the sum back.
void Root(int lfd) {
  std::vector<int> conns;
  int nranks = 1;
  for (int accepted = 0; accepted < nranks; ++accepted) {
    int c = accept(lfd, nullptr, nullptr);
    if (c < 0) return;
    int hello[2];
    if (!ReadAll(c, hello, sizeof hello)) return;
    nranks = hello[1];
    conns.resize(static_cast<size_t>(nranks), -1);
    conns[static_cast<size_t>(hello[0])] = c;
  }
  close(lfd);
  for (int c : conns) WriteAll(c, "k", 1);
  std::vector<float> sum, part;
  for (;;) {
    for (size_t r = 0; r < conns.size(); ++r) {
      uint64_t count = 0;
      if (!ReadAll(conns[r], &count, sizeof count)) return;
      part.resize(count);
      if (!ReadAll(conns[r], part.data(), count * sizeof(float))) return;
      if (r == 0) sum = part;
      else
        for (size_t i = 0; i < count; ++i) sum[i] += part[i];
    }
    for (int c : conns)
      if (!WriteAll(c, sum.data(), sum.size() * sizeof(float))) return;
  }
}

struct PendingInit {
  Comm** out;
  int nranks;
  IdBody id;
  int rank;
};
struct PendingReduce {
  const float* send;
  float* recv;
  size_t count;
  Comm* comm;
};

int depth = 0;
std::vector<PendingInit> inits;
std::vector<PendingReduce> reduces;

int RunInits() {
  std::vector<Comm*> made;
  for (const PendingInit& p : inits) {
    if (ThisRank("FAKE_NCCL_HANG_RANK"))
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(p.id.port));
    if (std::strncmp(p.id.magic, "FAKENCL", 8) != 0 || inet_pton(AF_INET, p.id.ip, &sa.sin_addr) != 1)
      return 4;  // ncclInvalidArgument
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return 2;  // ncclSystemError
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int hello[2] = {p.rank, p.nranks};
    if (!WriteAll(fd, hello, sizeof hello)) return 2;
    Comm* c = new Comm;
    c->fd = fd;
    c->rank = p.rank;
    c->nranks = p.nranks;
    *p.out = c;
    made.push_back(c);
  }
  for (Comm* c : made) {
    char k;
    if (!ReadAll(c->fd, &k, 1)) return 2;
  }
  inits.clear();
  return 0;
}

// A node that became slow: FAKE_NCCL_SLOW_FILE names a file that exists.
bool SlowNode() {
  const char* f = std::getenv("FAKE_NCCL_SLOW_FILE");
  return f && access(f, F_OK) == 0;
}

int RunReduces() {
  if (ThisRank("FAKE_NCCL_SLOW_RANK") || SlowNode()) {
    const char* ms = std::getenv("FAKE_NCCL_SLOW_MS");
    std::this_thread::sleep_for(std::chrono::milliseconds(ms ? std::atoi(ms) : 100));
  }
  for (const PendingReduce& p : reduces) {
    uint64_t count = p.count;
    if (!WriteAll(p.comm->fd, &count, sizeof count) ||
        !WriteAll(p.comm->fd, p.send, p.count * sizeof(float)))
      return 2;
  }
  for (const PendingReduce& p : reduces) {
    if (!ReadAll(p.comm->fd, p.recv, p.count * sizeof(float))) return 2;
    if (ThisRank("FAKE_NCCL_CORRUPT_RANK") && p.count > 0) p.recv[p.count / 2] += 1;
  }
  reduces.clear();
  return 0;
}

}  // namespace

extern "C" {

int ncclGetVersion(int* v) {
  const char* e = std::getenv("FAKE_NCCL_VERSION");
  *v = e ? std::atoi(e) : 22809;
  return 0;
}

int ncclGetUniqueId(UniqueId* out) {
  IdBody body{};
  std::memcpy(body.magic, "FAKENCL", 8);
  std::string ip = ListenAddress();
  std::strncpy(body.ip, ip.c_str(), sizeof body.ip - 1);
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, body.ip, &sa.sin_addr);
  socklen_t len = sizeof sa;
  if (bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(lfd, 1024) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return 2;
  body.port = ntohs(sa.sin_port);
  std::thread(Root, lfd).detach();
  std::memset(out, 0, sizeof *out);
  std::memcpy(out->internal, &body, sizeof body);
  return 0;
}

int ncclCommInitRank(Comm** comm, int nranks, UniqueId id, int rank) {
  PendingInit p{comm, nranks, {}, rank};
  std::memcpy(&p.id, id.internal, sizeof p.id);
  inits.push_back(p);
  return depth > 0 ? 0 : RunInits();
}

int ncclCommDestroy(Comm* c) {
  close(c->fd);
  delete c;
  return 0;
}

int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op, Comm* comm,
                  void*) {
  if (type != 7 || op != 0) return 4;  // only float32 sums
  reduces.push_back({static_cast<const float*>(send), static_cast<float*>(recv), count, comm});
  return depth > 0 ? 0 : RunReduces();
}

int ncclGroupStart() {
  ++depth;
  return 0;
}

int ncclGroupEnd() {
  if (--depth > 0) return 0;
  int rc = RunInits();
  if (rc == 0) rc = RunReduces();
  return rc;
}

const char* ncclGetErrorString(int rc) {
  switch (rc) {
    case 0: return "no error";
    case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    default: return "unknown result code";
  }
}

}  // extern "C"
