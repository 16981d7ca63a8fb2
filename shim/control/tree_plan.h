// Who each shim's parent is in the control plane's tree (docs/control-plane.md, "Control
// plane"), decided by rank 0 as shims join: the first shim to join from a
// node (the address rank 0 sees it come from) is that node's leader; the
// next `fanout` shims of the node hang under it, and the one after that
// becomes the node's next leader (so a node of 1,000 shims is no star);
// leaders form a tree of `fanout` children each, in the order they joined,
// rank 0 the root. No shim holds more than 2 * fanout child links, whatever
// the job's size, and a message crosses at most depth() links.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace aml {

struct TreePlace {
  int parent = -1;        // the parent's shim rank
  std::string addr;       // where it listens
  int port = 0;
  int depth = 0;          // links from this shim to rank 0
};

class TreePlanner {
 public:
  TreePlanner(int fanout, const std::string& root_host, const std::string& root_addr,
              int root_port);
  // The place of shim `rank` on `host`, which listens at addr:port itself.
  // Asking again for the same rank gives the same place.
  TreePlace Assign(int rank, const std::string& host, const std::string& addr, int port);
  int depth() const { return depth_; }  // the deepest place given so far
  // Every shim placed below `rank` (its children, theirs, ...).
  std::vector<int> Below(int rank) const;
  size_t assigned() const { return placed_.size(); }
  // Where shim `rank` listens ("addr:port", "" when not placed), and each
  // of `size` shims' parent (-1: rank 0, or not placed).
  std::string AddressOf(int rank) const;
  std::vector<int> Parents(int size) const;

 private:
  struct Node {
    int rank;
    std::string addr;
    int port;
    int depth;
    int members = 0;  // shims of its node under it
  };
  int fanout_;
  std::vector<Node> leaders_;                  // in the order they joined
  std::map<std::string, size_t> leader_of_;    // host -> index in leaders_
  std::map<int, TreePlace> placed_;
  std::map<int, std::string> where_;           // rank -> "addr:port"
  int depth_ = 0;
};

}  // namespace aml
