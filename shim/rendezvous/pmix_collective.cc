#include "shim/rendezvous/pmix_collective.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <sstream>

#include "shim/base/parse_int.h"

namespace aml {

std::vector<int> NodesByLowestRank(const std::vector<uint32_t>& node_id_of_rank, int* count) {
  std::map<uint32_t, int> lowest;  // node id -> its lowest rank
  for (size_t r = 0; r < node_id_of_rank.size(); ++r)
    lowest.emplace(node_id_of_rank[r], static_cast<int>(r));  // first seen is lowest
  std::vector<int> leaders;
  for (const auto& [id, rank] : lowest) leaders.push_back(rank);
  std::sort(leaders.begin(), leaders.end());
  std::vector<int> out;
  out.reserve(node_id_of_rank.size());
  for (uint32_t id : node_id_of_rank)
    out.push_back(static_cast<int>(
        std::lower_bound(leaders.begin(), leaders.end(), lowest[id]) - leaders.begin()));
  if (count) *count = static_cast<int>(leaders.size());
  return out;
}

Result<std::unique_ptr<PmixCollective>> PmixCollective::Start(std::unique_ptr<PmixClient> client) {
  std::unique_ptr<PmixCollective> c(new PmixCollective(std::move(client)));
  const PmixClient& p = *c->client_;
  PmixWorld& w = c->world_;
  w.library = p.library();
  w.rank = p.rank();
  auto size = p.GetUint(std::nullopt, pmix::kJobSize);
  if (!size.ok()) return size.error();
  w.size = static_cast<int>(*size);
  auto local_rank = p.GetUint(w.rank, pmix::kLocalRank);
  if (!local_rank.ok()) return local_rank.error();
  w.local_rank = static_cast<int>(*local_rank);
  auto peers = p.GetString(std::nullopt, pmix::kLocalPeers);
  if (!peers.ok()) return peers.error();
  std::istringstream list(*peers);
  for (std::string item; std::getline(list, item, ',');) {
    auto r = ParseInt("PMIx's local peers (pmix.lpeers)", item, 0, w.size - 1);
    if (!r.ok()) return r.error();
    c->local_peers_.push_back(static_cast<int>(*r));
  }
  std::sort(c->local_peers_.begin(), c->local_peers_.end());
  w.local_size = static_cast<int>(c->local_peers_.size());
  if (w.local_rank >= w.local_size)
    return Error{"PMIx says local rank " + std::to_string(w.local_rank) + " of " +
                 std::to_string(w.local_size) + " peers (" + *peers + ")"};
  // Each rank's node, named by its lowest rank (this node's is in the job
  // data every process holds), and rank 0's host, in one fence: Open MPI
  // 4.1's server holds no other node's pmix.nodeid or pmix.hname.
  auto host = p.GetString(w.rank, pmix::kHostname);
  if (!host.ok()) return host.error();
  const int32_t leader = c->local_peers_.front();
  std::string mine(reinterpret_cast<const char*>(&leader), 4);
  mine += *host;
  auto records = c->Exchange(&mine, c->AllRanks());
  if (!records.ok()) return records.error();
  std::vector<uint32_t> node_of_rank;
  for (const std::string& rec : *records) {
    if (rec.size() < 4) return Error{"PMIx: a rank's node record is " + std::to_string(rec.size()) + " bytes"};
    int32_t l;
    std::memcpy(&l, rec.data(), 4);
    node_of_rank.push_back(static_cast<uint32_t>(l));
  }
  w.node_rank = NodesByLowestRank(node_of_rank, &w.node_count)[static_cast<size_t>(w.rank)];
  w.rank0_host = (*records)[0].substr(4);
  return c;
}

Result<std::vector<std::string>> PmixCollective::Exchange(const std::string* mine,
                                                          const std::vector<int>& from) {
  const std::string key = "aml-shim." + std::to_string(round_++);
  if (mine) {
    auto put = client_->Put(key, *mine);
    if (!put.ok()) return put.error();
  }
  auto fence = client_->Exchange();
  if (!fence.ok()) return fence.error();
  std::vector<std::string> out;
  for (int r : from) {
    auto got = client_->GetBytes(r, key);
    if (!got.ok()) return got.error();
    out.push_back(std::move(*got));
  }
  return out;
}

Result<std::string> PmixCollective::Concat(const std::string* mine, const std::vector<int>& from) {
  auto parts = Exchange(mine, from);
  if (!parts.ok()) return parts.error();
  std::string out;
  for (const std::string& p : *parts) out += p;
  return out;
}

std::vector<int> PmixCollective::AllRanks() const {
  std::vector<int> all(static_cast<size_t>(world_.size));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

Result<std::string> PmixCollective::AllgatherWorld(const std::string& mine) {
  return Concat(&mine, AllRanks());
}

Result<std::string> PmixCollective::AllgatherLocal(const std::string& mine) {
  return Concat(&mine, local_peers_);
}

Result<std::string> PmixCollective::Broadcast(const std::string& data) {
  return Concat(world_.rank == 0 ? &data : nullptr, {0});
}

}  // namespace aml
