#include "shim/control/tree_plan.h"

#include <algorithm>

namespace aml {

TreePlanner::TreePlanner(int fanout, const std::string& root_host, const std::string& root_addr,
                         int root_port)
    : fanout_(std::max(1, fanout)) {
  leaders_.push_back({0, root_addr, root_port, 0});
  leader_of_[root_host] = 0;
}

TreePlace TreePlanner::Assign(int rank, const std::string& host, const std::string& addr,
                              int port) {
  if (auto it = placed_.find(rank); it != placed_.end()) return it->second;
  where_[rank] = addr + ":" + std::to_string(port);
  TreePlace place;
  auto it = leader_of_.find(host);
  if (it != leader_of_.end() && leaders_[it->second].members < fanout_) {
    Node& leader = leaders_[it->second];
    ++leader.members;
    place = {leader.rank, leader.addr, leader.port, leader.depth + 1};
  } else {
    const size_t index = leaders_.size();
    const Node& parent = leaders_[(index - 1) / static_cast<size_t>(fanout_)];
    place = {parent.rank, parent.addr, parent.port, parent.depth + 1};
    leaders_.push_back({rank, addr, port, place.depth});
    leader_of_[host] = index;
  }
  depth_ = std::max(depth_, place.depth);
  placed_[rank] = place;
  return place;
}

std::vector<int> TreePlanner::Below(int rank) const {
  std::vector<int> out = {rank};
  for (size_t i = 0; i < out.size(); ++i)
    for (const auto& [r, place] : placed_)
      if (place.parent == out[i] && r != out[i]) out.push_back(r);
  out.erase(out.begin());
  return out;
}

std::string TreePlanner::AddressOf(int rank) const {
  auto it = where_.find(rank);
  return it == where_.end() ? "" : it->second;
}

std::vector<int> TreePlanner::Parents(int size) const {
  std::vector<int> out(static_cast<size_t>(std::max(0, size)), -1);
  for (const auto& [r, place] : placed_)
    if (r >= 0 && r < size && r != place.parent) out[static_cast<size_t>(r)] = place.parent;
  return out;
}

}  // namespace aml
