#include "shim/rendezvous/rendezvous.h"

#include "shim/net/tcp.h"
#include "shim/net/test_port.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace aml {
namespace {

// N participants exchanging one string each per round.
class Round {
 public:
  explicit Round(int n) : n_(n), slots_(static_cast<size_t>(n)) {}
  std::vector<std::string> Exchange(int idx, std::string mine) {
    std::unique_lock<std::mutex> lock(mu_);
    slots_[static_cast<size_t>(idx)] = std::move(mine);
    if (++arrived_ == n_) {
      result_ = slots_;
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return result_;
    }
    uint64_t g = gen_;
    cv_.wait(lock, [&] { return gen_ != g; });
    return result_;
  }

 private:
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> slots_, result_;
  int arrived_ = 0;
  uint64_t gen_ = 0;
};

std::string Concat(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x;
  return s;
}

// Threads as ranks; `node_of[r]` says which "node" rank r is on.
struct World {
  explicit World(std::vector<int> nodes) : node_of(std::move(nodes)), all(Size()) {
    for (int r = 0; r < Size(); ++r) members[node_of[r]].push_back(r);
    for (auto& [node, ranks] : members) local.emplace(node, std::make_unique<Round>(ranks.size()));
  }
  int Size() const { return static_cast<int>(node_of.size()); }
  std::vector<int> node_of;
  std::map<int, std::vector<int>> members;
  Round all;
  std::map<int, std::unique_ptr<Round>> local;
};

class ThreadCollective : public Collective {
 public:
  ThreadCollective(World& w, int rank) : w_(w), rank_(rank) {
    const auto& m = w.members[w.node_of[rank]];
    local_rank_ = static_cast<int>(std::find(m.begin(), m.end(), rank) - m.begin());
  }
  int rank() const override { return rank_; }
  int size() const override { return w_.Size(); }
  int local_rank() const override { return local_rank_; }
  int local_size() const override {
    return static_cast<int>(w_.members[w_.node_of[rank_]].size());
  }
  Result<std::string> AllgatherWorld(const std::string& mine) override {
    return Concat(w_.all.Exchange(rank_, mine));
  }
  Result<std::string> AllgatherLocal(const std::string& mine) override {
    return Concat(w_.local[w_.node_of[rank_]]->Exchange(local_rank_, mine));
  }
  Result<std::string> Broadcast(const std::string& data) override {
    return w_.all.Exchange(rank_, data)[0];
  }

 private:
  World& w_;
  int rank_, local_rank_;
};

std::vector<Result<RendezvousResult>> RunAll(std::vector<int> nodes, RendezvousRequest req) {
  World w(std::move(nodes));
  std::vector<Result<RendezvousResult>> out(static_cast<size_t>(w.Size()),
                                            Result<RendezvousResult>(Error{"not run"}));
  std::vector<std::thread> threads;
  for (int r = 0; r < w.Size(); ++r)
    threads.emplace_back([&, r] {
      ThreadCollective c(w, r);
      RendezvousRequest mine = req;
      mine.host = "host" + std::to_string(w.node_of[r]);
      out[static_cast<size_t>(r)] = RunRendezvous(c, mine);
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(Rendezvous, NodesAreNumberedByTheirLowestRank) {
  int count = 0;
  EXPECT_EQ(NodeIndices({0, 1, 0, 1}, &count), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(count, 2);
  EXPECT_EQ(NodeIndices({0, 0, 2, 2, 4}, &count), (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(count, 3);
}

TEST(Rendezvous, FirstAddressReachedByEveryRankWins) {
  EXPECT_EQ(FirstReachedByAll({0b11, 0b10, 0b110}, 3), 1);
  EXPECT_EQ(FirstReachedByAll({0b01, 0b10}, 2), -1);
  EXPECT_EQ(FirstReachedByAll({}, 2), 0);
  EXPECT_EQ(FirstReachedByAll({0b1}, 0), -1);
}

TEST(Rendezvous, CandidatesSkipLoopbackLinkLocalAndDownInterfaces) {
  std::vector<NetAddr> a = {
      {"lo", "127.0.0.1", false, true, true, false},
      {"eth0", "fe80::1", true, true, false, true},
      {"ib0", "fd00::5", true, true, false, false},
      {"docker0", "172.17.0.1", false, true, false, false},
      {"eth1", "10.1.0.4", false, false, false, false},
      {"eth0", "198.18.0.1", false, true, false, false},
  };
  EXPECT_EQ(CandidateAddresses(a),
            (std::vector<std::string>{"172.17.0.1", "198.18.0.1", "fd00::5"}));
}

TEST(Rendezvous, ExactNodesAndAVerifiedAddressOnEveryRank) {
  RendezvousRequest req;
  req.candidates = {"bogus", "127.0.0.1"};
  req.tf_ports = 2;
  // Ranks 0 and 2 on one node, 1 and 3 on another (round-robin placement).
  auto results = RunAll({7, 9, 7, 9}, req);
  std::vector<int> node = {0, 1, 0, 1}, local = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) {
    const auto& res = results[static_cast<size_t>(r)];
    ASSERT_TRUE(res.ok()) << res.error().message;
    EXPECT_EQ(res->node_rank, node[static_cast<size_t>(r)]);
    EXPECT_EQ(res->node_count, 2);
    EXPECT_EQ(res->local_rank, local[static_cast<size_t>(r)]);
    EXPECT_EQ(res->local_size, 2);
    EXPECT_EQ(res->master_addr, "127.0.0.1");
    EXPECT_EQ(res->master_port, results[0]->master_port);
    EXPECT_GT(res->master_port, 0);
    EXPECT_NE(res->why.find("skipped bogus"), std::string::npos) << res->why;
    ASSERT_EQ(res->peers.size(), 4u);
    EXPECT_EQ(res->peers[1].host, "host9");
    EXPECT_EQ(res->peers[1].addr, "127.0.0.1");
    ASSERT_EQ(res->peers[3].ports.size(), 2u);
    EXPECT_NE(res->peers[3].ports[0], res->peers[3].ports[1]);
  }
}

TEST(Rendezvous, GivenPortIsTheMastersAndFreeAfterwards) {
  const int port = ReservedTestPort();
  ASSERT_NE(port, 0);
  RendezvousRequest req;
  req.candidates = {"127.0.0.1"};
  req.master_port = port;
  auto results = RunAll({0, 0}, req);
  ASSERT_TRUE(results[1].ok()) << results[1].error().message;
  EXPECT_EQ(results[1]->master_port, port);
  // The framework binds the same port right after (TCPStore sets SO_REUSEADDR).
  EXPECT_TRUE(ListenAny(port).ok());
}

// A stranger who connects to rank 0's listener while the rendezvous runs
// hears a proof, never the token that the preflight's hellos build on.
class EavesdroppedCollective : public ThreadCollective {
 public:
  using ThreadCollective::ThreadCollective;
  Result<std::string> Broadcast(const std::string& data) override {
    auto offer = ThreadCollective::Broadcast(data);
    if (rank() == 1 && offer.ok() && offer->rfind("ok\n", 0) == 0) {
      // "ok\nPORT\nTOKEN\n...": the port, as anyone could scan it.
      const std::string port = offer->substr(3, offer->find('\n', 3) - 3);
      auto fd = ConnectTcp("127.0.0.1", std::stoi(port), Clock::now() + std::chrono::seconds(2));
      if (fd.ok()) {
        auto heard = RecvFrame(fd->get(), 128, Clock::now() + std::chrono::seconds(2));
        if (heard.ok()) overheard = *heard;
      }
    }
    return offer;
  }
  std::string overheard;
};

TEST(Rendezvous, ItsListenerNeverTellsTheTokenToWhoeverConnects) {
  World w({0, 1});
  RendezvousRequest req;
  req.candidates = {"127.0.0.1"};
  std::vector<Result<RendezvousResult>> out(2, Result<RendezvousResult>(Error{"not run"}));
  EavesdroppedCollective c0(w, 0), c1(w, 1);
  std::thread t0([&] { out[0] = RunRendezvous(c0, req); });
  std::thread t1([&] { out[1] = RunRendezvous(c1, req); });
  t0.join();
  t1.join();
  ASSERT_TRUE(out[0].ok()) << out[0].error().message;
  ASSERT_TRUE(out[1].ok()) << out[1].error().message;
  const std::string& secret = out[0]->secret;
  EXPECT_GE(secret.size(), 32u);
  EXPECT_EQ(out[1]->secret, secret);
  ASSERT_FALSE(c1.overheard.empty());
  EXPECT_EQ(c1.overheard.find(secret), std::string::npos) << c1.overheard;
}

// Rank 0 is slow to leave the last allgather, as a loaded node is.
class SlowRankZero : public ThreadCollective {
 public:
  using ThreadCollective::ThreadCollective;
  Result<std::string> AllgatherWorld(const std::string& mine) override {
    auto all = ThreadCollective::AllgatherWorld(mine);
    if (rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return all;
  }
};

TEST(Rendezvous, NoRankGoesOnWhileRankZerosListenerStillAnswers) {
  // The port is MASTER_PORT: a rank that went on at once reached the
  // rendezvous's listener instead of the preflight, and was reset.
  World w({0, 1});
  RendezvousRequest req;
  req.candidates = {"127.0.0.1"};
  std::vector<Result<RendezvousResult>> out(2, Result<RendezvousResult>(Error{"not run"}));
  bool answered = true;
  SlowRankZero c0(w, 0), c1(w, 1);
  std::thread t0([&] { out[0] = RunRendezvous(c0, req); });
  std::thread t1([&] {
    out[1] = RunRendezvous(c1, req);
    if (!out[1].ok()) return;
    auto fd = ConnectTcp("127.0.0.1", out[1]->master_port, Clock::now() + std::chrono::seconds(1));
    answered = fd.ok() && RecvFrame(fd->get(), 128, Clock::now() + std::chrono::seconds(1)).ok();
  });
  t0.join();
  t1.join();
  ASSERT_TRUE(out[0].ok()) << out[0].error().message;
  ASSERT_TRUE(out[1].ok()) << out[1].error().message;
  EXPECT_FALSE(answered) << "rank 1 went on while rank 0's listener still answered on the port";
}

TEST(Rendezvous, NoAddressReachableIsTheSameErrorOnEveryRank) {
  RendezvousRequest req;
  req.candidates = {"bogus"};
  auto results = RunAll({0, 1, 1}, req);
  for (const auto& res : results) {
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.error().message, results[0].error().message);
  }
  const std::string& m = results[0].error().message;
  EXPECT_NE(m.find("no address of rank 0 (host0) is reachable from every rank"), std::string::npos) << m;
  EXPECT_NE(m.find("bogus not from ranks 0 (host0), 1 (host1), 2 (host1)"), std::string::npos) << m;
  EXPECT_NE(m.find("not a numeric address"), std::string::npos) << m;
}

TEST(Rendezvous, BusyGivenPortFailsOnEveryRankNamingIt) {
  auto busy = ListenAny(0);
  ASSERT_TRUE(busy.ok());
  // A listener without SO_REUSEADDR semantics still blocks a second listen.
  RendezvousRequest req;
  req.candidates = {"127.0.0.1"};
  req.master_port = busy->port;
  auto results = RunAll({0, 1}, req);
  for (const auto& res : results) {
    ASSERT_FALSE(res.ok());
    EXPECT_NE(res.error().message.find("cannot listen on the master port: port " +
                                       std::to_string(busy->port)),
              std::string::npos)
        << res.error().message;
  }
}

}  // namespace
}  // namespace aml
