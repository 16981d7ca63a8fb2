#include "launch/flight/nccl_ras.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "shim/base/host_port.h"
#include "shim/base/json_read.h"
#include "shim/base/log.h"
#include "shim/base/range_list.h"
#include "shim/base/text_list.h"
#include "shim/net/tcp.h"

namespace aml {
namespace {

constexpr size_t kMaxComms = 256, kMaxRanks = 65536;
constexpr size_t kMaxLine = 4096, kMaxReport = 4 << 20;

int64_t Num(const JsonValue* v, int64_t fallback = -1) {
  if (!v || v->kind != JsonValue::Kind::kNumber) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v->text.c_str(), &end, 10);
  return end && *end == '\0' ? n : fallback;
}

bool True(const JsonValue* v) {
  if (!v) return false;
  if (v->kind == JsonValue::Kind::kBool) return v->text == "true";
  return Num(v, 0) != 0;
}

std::string Str(const JsonValue* v) {
  return v && v->kind == JsonValue::Kind::kString ? v->text.substr(0, 128) : "";
}

// Sends all of `s` before `deadline`.
Status SendAll(int fd, const std::string& s, Deadline deadline) {
  size_t done = 0;
  while (done < s.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, PollTimeoutMs(deadline)) <= 0) return Error{"no room to send in time"};
    const ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Error{std::string("send: ") + std::strerror(errno)};
    done += static_cast<size_t>(n);
  }
  return Ok();
}

// Reads into `buf` until it holds a '\n' (a line) or, with `to_end`, until
// the peer closes; `max` bytes at most, before `deadline`.
Status Receive(int fd, std::string* buf, bool to_end, size_t max, Deadline deadline) {
  char chunk[4096];
  while (to_end || buf->find('\n') == std::string::npos) {
    if (buf->size() > max) return Error{"an answer of more than " + std::to_string(max) + " bytes"};
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, PollTimeoutMs(deadline));
    if (r == 0) return Error{"no answer in time"};
    if (r < 0 && errno == EINTR) continue;
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Error{std::string("recv: ") + std::strerror(errno)};
    if (n == 0) return to_end ? Ok() : Status(Error{"closed"});
    buf->append(chunk, static_cast<size_t>(n));
  }
  return Ok();
}

// One request, one line of answer.
Result<std::string> Ask(int fd, const std::string& request, std::string* buf, Deadline deadline) {
  if (Status st = SendAll(fd, request + "\n", deadline); !st.ok()) return st.error();
  if (Status st = Receive(fd, buf, false, kMaxLine, deadline); !st.ok()) return st.error();
  const size_t nl = buf->find('\n');
  std::string line = buf->substr(0, nl);
  buf->erase(0, nl + 1);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

Result<RasReport> ParseRasJson(const std::string& json) {
  auto v = ParseJson(json);
  if (!v.ok()) return Error{"NCCL RAS's answer is not JSON: " + v.error().message};
  RasReport r;
  r.version = Str(v->Find("nccl_version"));
  const JsonValue* comms = v->Find("communicators");
  if (!comms || comms->kind != JsonValue::Kind::kArray) return r;
  for (const JsonValue& c : comms->items) {
    if (r.comms.size() >= kMaxComms) break;
    RasComm comm;
    comm.hash = Str(c.Find("hash"));
    comm.size = static_cast<int>(std::clamp<int64_t>(Num(c.Find("size"), 0), 0, 1 << 30));
    if (const JsonValue* ranks = c.Find("ranks"); ranks && ranks->kind == JsonValue::Kind::kArray)
      for (const JsonValue& rv : ranks->items) {
        if (comm.ranks.size() >= kMaxRanks) break;
        RasRank rank;
        rank.rank = static_cast<int>(std::clamp<int64_t>(Num(rv.Find("rank")), -1, 1 << 30));
        rank.host = Str(rv.Find("host"));
        if (const JsonValue* st = rv.Find("status"))
          rank.error = Num(st->Find("async_error"), 0) != 0 || True(st->Find("abort_flag"));
        if (const JsonValue* counts = rv.Find("collective_counts");
            counts && counts->kind == JsonValue::Kind::kObject)
          for (const auto& [kind, n] : counts->members) rank.counts[kind.substr(0, 32)] = Num(&n, 0);
        comm.ranks.push_back(std::move(rank));
      }
    if (const JsonValue* missing = c.Find("missing_ranks");
        missing && missing->kind == JsonValue::Kind::kArray)
      for (const JsonValue& m : missing->items) {
        if (comm.missing.size() >= kMaxRanks) break;
        const int64_t rank = m.kind == JsonValue::Kind::kObject ? Num(m.Find("rank")) : Num(&m);
        if (rank < 0 || rank > (1 << 30)) continue;
        comm.missing.push_back(static_cast<int>(rank));
        if (m.kind == JsonValue::Kind::kObject && !Str(m.Find("host")).empty())
          comm.missing_host[static_cast<int>(rank)] = Str(m.Find("host"));
      }
    std::sort(comm.missing.begin(), comm.missing.end());
    comm.missing.erase(std::unique(comm.missing.begin(), comm.missing.end()), comm.missing.end());
    r.comms.push_back(std::move(comm));
  }
  return r;
}

std::string RasTextErrors(const std::string& text) {
  const size_t at = text.find("\nErrors\n");
  if (at == std::string::npos) return "";
  size_t from = text.find('\n', at + 8);  // past the "======" line
  if (from == std::string::npos) return "";
  const size_t to = text.find("\nWarnings\n", from);
  std::vector<std::string> lines;
  for (const std::string& l : SplitLines(text.substr(from + 1, to == std::string::npos
                                                                    ? std::string::npos
                                                                    : to - from - 1))) {
    const size_t b = l.find_first_not_of(" \t");
    if (b != std::string::npos) lines.push_back(l.substr(b, 200));
  }
  return JoinCapped(lines, 3);
}

std::string RasLine(const RasReport& r) {
  std::vector<std::string> parts;
  for (const RasComm& c : r.comms) {
    std::vector<std::string> what;
    if (!c.missing.empty()) {
      std::set<std::string> hosts;
      for (const auto& [rank, host] : c.missing_host) hosts.insert(EscapeControl(host));
      what.push_back(std::string(c.missing.size() == 1 ? "rank " : "ranks ") +
                     FormatRanges(c.missing) + " missing (NCCL cannot reach them" +
                     (hosts.empty() ? "" : ": " + JoinCapped({hosts.begin(), hosts.end()}, 4)) +
                     ")");
    }
    std::vector<int> errors;
    for (const RasRank& k : c.ranks)
      if (k.error && k.rank >= 0) errors.push_back(k.rank);
    std::sort(errors.begin(), errors.end());
    if (!errors.empty())
      what.push_back(std::string(errors.size() == 1 ? "rank " : "ranks ") + FormatRanges(errors) +
                     " in error");
    // Ranks behind the most in a kind of collective: where they stopped.
    std::set<std::string> kinds;
    for (const RasRank& k : c.ranks)
      for (const auto& [kind, n] : k.counts) kinds.insert(kind);
    for (const std::string& kind : kinds) {
      int64_t most = 0;
      for (const RasRank& k : c.ranks)
        if (auto it = k.counts.find(kind); it != k.counts.end()) most = std::max(most, it->second);
      std::map<int64_t, std::vector<int>> behind;
      for (const RasRank& k : c.ranks) {
        auto it = k.counts.find(kind);
        const int64_t n = it == k.counts.end() ? 0 : it->second;
        if (n < most && k.rank >= 0) behind[n].push_back(k.rank);
      }
      for (auto& [n, ranks] : behind) {
        std::sort(ranks.begin(), ranks.end());
        what.push_back(std::string(ranks.size() == 1 ? "rank " : "ranks ") + FormatRanges(ranks) +
                       " ran " + std::to_string(n) + " " + EscapeControl(kind) + ", the others up to " +
                       std::to_string(most));
      }
    }
    if (what.empty()) continue;
    std::string all;
    for (size_t i = 0; i < what.size() && i < 4; ++i) all += (i ? "; " : "") + what[i];
    if (what.size() > 4) all += "; and " + std::to_string(what.size() - 4) + " more";
    parts.push_back("communicator " + EscapeControl(c.hash) + " of " + std::to_string(c.size) +
                    " ranks: " + all);
  }
  if (parts.empty() && !r.text.empty()) parts.push_back(EscapeControl(r.text));
  if (parts.empty()) return "";
  return "aml-shim: NCCL RAS" + (r.version.empty() ? "" : " (NCCL " + EscapeControl(r.version) + ")") +
         ": " + JoinCapped(parts, 3) + "\n";
}

Result<std::string> AskNcclRas(const std::string& addr, double timeout_s) {
  auto hp = ParseHostPort("NCCL_RAS_ADDR", addr);
  if (!hp.ok()) return hp.error();
  const int port = hp->port.value_or(28028);
  auto ips = ResolveHost("NCCL_RAS_ADDR", hp->host);
  if (!ips.ok()) return ips.error();
  const Deadline deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  Result<Fd> fd = Error{"no address"};
  for (const std::string& ip : *ips) {
    fd = ConnectTcp(ip, port, deadline);
    if (fd.ok()) break;
  }
  if (!fd.ok()) return Error{"nothing answers on NCCL_RAS_ADDR " + addr};
  std::string buf;
  auto hello = Ask(fd->get(), "CLIENT PROTOCOL 2", &buf, deadline);
  if (!hello.ok()) return Error{"NCCL RAS at " + addr + ": " + hello.error().message};
  if (hello->rfind("SERVER PROTOCOL", 0) != 0)
    return Error{"NCCL RAS at " + addr + " answered '" + EscapeControl(hello->substr(0, 80)) + "'"};
  auto timeout = Ask(fd->get(), "TIMEOUT " + std::to_string(std::max(1, static_cast<int>(timeout_s))),
                     &buf, deadline);
  if (!timeout.ok()) return Error{"NCCL RAS at " + addr + ": " + timeout.error().message};
  auto format = Ask(fd->get(), "SET FORMAT json", &buf, deadline);
  if (!format.ok()) return Error{"NCCL RAS at " + addr + ": " + format.error().message};
  const bool json = *format == "OK";
  if (Status st = SendAll(fd->get(), "STATUS\n", deadline); !st.ok())
    return Error{"NCCL RAS at " + addr + ": " + st.error().message};
  if (Status st = Receive(fd->get(), &buf, true, kMaxReport, deadline); !st.ok())
    return Error{"NCCL RAS at " + addr + ": " + st.error().message};
  if (!json) {
    RasReport r;
    r.text = RasTextErrors(buf);
    return RasLine(r);
  }
  auto report = ParseRasJson(buf);
  if (!report.ok()) return report.error();
  return RasLine(*report);
}

NcclRasQuery::~NcclRasQuery() { Join(); }

void NcclRasQuery::Join() {
  if (thread_.joinable()) thread_.join();
}

void NcclRasQuery::Start(const std::string& addr, double timeout_s) {
  Join();
  done_ = false;
  line_.clear();
  why_.clear();
  thread_ = std::thread([this, addr, timeout_s] {
    auto r = AskNcclRas(addr, timeout_s);
    if (r.ok()) line_ = *r;
    else why_ = r.error().message;
    done_.store(true, std::memory_order_release);
  });
}

std::string NcclRasQuery::line() const { return done_.load(std::memory_order_acquire) ? line_ : ""; }
std::string NcclRasQuery::why() const { return done_.load(std::memory_order_acquire) ? why_ : ""; }

}  // namespace aml
