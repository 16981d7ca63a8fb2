#include "shim/rendezvous/pmi1_collective.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "shim/base/hex.h"
#include "shim/base/parse_int.h"

namespace aml {
namespace {

std::string Field(const std::vector<std::pair<std::string, std::string>>& fields,
                  const std::string& key) {
  for (const auto& [k, v] : fields)
    if (k == key) return v;
  return "";
}

}  // namespace

bool Pmi1Offered(const EnvSnapshot& env) {
  return env.HasNonEmpty("PMI_FD") && env.HasNonEmpty("PMI_RANK") && env.HasNonEmpty("PMI_SIZE");
}

Result<std::vector<int>> ParseProcessMapping(const std::string& text, int size) {
  const std::string what = "PMI_process_mapping='" + text + "'";
  std::string t;
  for (char c : text)
    if (c != ' ') t += c;
  const std::string head = "(vector,";
  if (t.size() <= head.size() || t.compare(0, head.size(), head) != 0 || t.back() != ')')
    return Error{what + " is not a vector"};
  std::vector<std::array<long, 3>> blocks;
  size_t at = head.size();
  while (at < t.size() - 1) {
    if (t[at] == ',') ++at;
    if (t[at] != '(') return Error{what + " has no block at " + std::to_string(at)};
    size_t end = t.find(')', at);
    if (end == std::string::npos) return Error{what + " has an open block"};
    std::istringstream in(t.substr(at + 1, end - at - 1));
    std::array<long, 3> b{};
    std::string item;
    for (long& v : b) {
      if (!std::getline(in, item, ',')) return Error{what + " has a block of fewer than 3 numbers"};
      auto n = ParseInt("PMI_process_mapping", item, 0, 1 << 24);
      if (!n.ok()) return n.error();
      v = static_cast<long>(*n);
    }
    if (b[1] == 0 || b[2] == 0) return Error{what + " has an empty block"};
    blocks.push_back(b);
    at = end + 1;
  }
  if (blocks.empty()) return Error{what + " is empty"};
  std::vector<int> node(static_cast<size_t>(size));
  size_t r = 0;
  while (r < node.size())
    for (const auto& [first, count, per] : blocks)
      for (long n = 0; n < count; ++n)
        for (long k = 0; k < per && r < node.size(); ++k) node[r++] = static_cast<int>(first + n);
  return node;
}

Result<std::unique_ptr<Pmi1Collective>> Pmi1Collective::Open(const EnvSnapshot& env) {
  std::unique_ptr<Pmi1Collective> c(new Pmi1Collective());
  auto fd = ParseInt("PMI_FD", *env.Find("PMI_FD"), 0, 1 << 20);
  auto rank = ParseInt("PMI_RANK", *env.Find("PMI_RANK"), 0, (1 << 24) - 1);
  auto size = ParseInt("PMI_SIZE", *env.Find("PMI_SIZE"), 1, 1 << 24);
  for (const auto* v : {&fd, &rank, &size})
    if (!v->ok()) return v->error();
  c->fd_ = static_cast<int>(*fd);
  c->rank_ = static_cast<int>(*rank);
  c->size_ = static_cast<int>(*size);
  auto init = c->Command("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init");
  if (!init.ok()) return init.error();
  auto maxes = c->Command("cmd=get_maxes", "maxes");
  if (!maxes.ok()) return maxes.error();
  auto vallen = ParseInt("PMI's vallen_max", Field(*maxes, "vallen_max"), 64, 1 << 20);
  if (!vallen.ok()) return vallen.error();
  c->chunk_ = static_cast<size_t>(*vallen / 2 - 8);
  auto kvs = c->Command("cmd=get_my_kvsname", "my_kvsname");
  if (!kvs.ok()) return kvs.error();
  c->kvs_ = Field(*kvs, "kvsname");
  auto got = c->Command("cmd=get kvsname=" + c->kvs_ + " key=PMI_process_mapping", "get_result");
  if (!got.ok()) return got.error();
  auto nodes = ParseProcessMapping(Field(*got, "value"), c->size_);
  if (!nodes.ok()) return nodes.error();
  for (int r = 0; r < c->size_; ++r)
    if ((*nodes)[static_cast<size_t>(r)] == (*nodes)[static_cast<size_t>(c->rank_)]) {
      if (r == c->rank_) c->local_rank_ = static_cast<int>(c->local_peers_.size());
      c->local_peers_.push_back(r);
    }
  return c;
}

Result<std::vector<std::pair<std::string, std::string>>> Pmi1Collective::Command(
    const std::string& line, const std::string& reply) {
  const std::string out = line + "\n";
  for (size_t done = 0; done < out.size();) {
    ssize_t n = write(fd_, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{"PMI (PMI_FD=" + std::to_string(fd_) + "): " + std::strerror(errno)};
    done += static_cast<size_t>(n);
  }
  size_t eol;
  while ((eol = pending_.find('\n')) == std::string::npos) {
    char buf[4096];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Error{"PMI (PMI_FD=" + std::to_string(fd_) + "): " +
                   (n == 0 ? std::string("the launcher closed it") : std::strerror(errno))};
    pending_.append(buf, static_cast<size_t>(n));
  }
  std::istringstream in(pending_.substr(0, eol));
  pending_.erase(0, eol + 1);
  std::vector<std::pair<std::string, std::string>> fields;
  for (std::string word; in >> word;) {
    const size_t eq = word.find('=');
    fields.emplace_back(word.substr(0, eq), eq == std::string::npos ? "" : word.substr(eq + 1));
  }
  const std::string rc = Field(fields, "rc");
  if (Field(fields, "cmd") != reply || (!rc.empty() && rc != "0"))
    return Error{"PMI: '" + line.substr(0, line.find(' ')) + "' was answered '" +
                 (fields.empty() ? "" : fields[0].second) + "' (rc " + rc + ", " +
                 Field(fields, "msg") + ")"};
  return fields;
}

Status Pmi1Collective::Put(const std::string& key, const std::string& bytes) {
  // Chunks of what a value may hold, hex-encoded (values are single words);
  // key.n holds their count.
  const size_t chunks = bytes.empty() ? 0 : (bytes.size() + chunk_ - 1) / chunk_;
  auto n = Command("cmd=put kvsname=" + kvs_ + " key=" + key + ".n value=" + std::to_string(chunks),
                   "put_result");
  if (!n.ok()) return n.error();
  for (size_t i = 0; i < chunks; ++i) {
    const size_t len = std::min(chunk_, bytes.size() - i * chunk_);
    auto put = Command("cmd=put kvsname=" + kvs_ + " key=" + key + "." + std::to_string(i) +
                           " value=" + Hex(bytes.data() + i * chunk_, len),
                       "put_result");
    if (!put.ok()) return put.error();
  }
  return Ok{};
}

Result<std::string> Pmi1Collective::Get(int rank, const std::string& key) {
  const std::string base = "cmd=get kvsname=" + kvs_ + " key=" + key + "-" + std::to_string(rank);
  auto n = Command(base + ".n", "get_result");
  if (!n.ok()) return n.error();
  auto chunks = ParseInt("PMI value count", Field(*n, "value"), 0, 1 << 20);
  if (!chunks.ok()) return chunks.error();
  std::string out;
  for (long i = 0; i < *chunks; ++i) {
    auto got = Command(base + "." + std::to_string(i), "get_result");
    if (!got.ok()) return got.error();
    const std::vector<unsigned char> raw = Unhex(Field(*got, "value"));
    if (raw.empty()) return Error{"PMI: a value of rank " + std::to_string(rank) + " is not hex"};
    out.append(raw.begin(), raw.end());
  }
  return out;
}

Result<std::string> Pmi1Collective::Exchange(const std::string* mine, const std::vector<int>& from) {
  const std::string key = "aml-shim." + std::to_string(round_++);
  if (mine) {
    auto put = Put(key + "-" + std::to_string(rank_), *mine);
    if (!put.ok()) return put.error();
  }
  auto barrier = Command("cmd=barrier_in", "barrier_out");
  if (!barrier.ok()) return barrier.error();
  std::string out;
  for (int r : from) {
    auto got = Get(r, key);
    if (!got.ok()) return got.error();
    out += *got;
  }
  return out;
}

Result<std::string> Pmi1Collective::AllgatherWorld(const std::string& mine) {
  std::vector<int> all(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) all[static_cast<size_t>(r)] = r;
  return Exchange(&mine, all);
}

Result<std::string> Pmi1Collective::AllgatherLocal(const std::string& mine) {
  return Exchange(&mine, local_peers_);
}

Result<std::string> Pmi1Collective::Broadcast(const std::string& data) {
  return Exchange(rank_ == 0 ? &data : nullptr, {0});
}

}  // namespace aml
