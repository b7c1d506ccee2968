// Progress while ranks compute (launch_options::progress, here from CAIRN_PROGRESS): every rank
// starts non-blocking operations and then makes no cairn call at all until request::ready()
// says they completed; results are then checked against sequential references. In the default
// mode this would spin until the deadline: the test is registered only with peers and thread.
#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <span>
#include <string>

#include "harness.hpp"

using cairn::test::random_values;
using cairn::test::run;

namespace {

// Spins without calling cairn until every request is ready (or 30 s pass); on failure, the
// indices of the requests still pending.
std::string ready_without_calls(std::span<cairn::request> reqs) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    bool all = true;
    for (const auto& r : reqs) all = all && r.ready();
    if (all) return {};
    if (std::chrono::steady_clock::now() > deadline) {
      std::string pending = "pending requests:";
      for (std::size_t i = 0; i < reqs.size(); ++i)
        if (!reqs[i].ready()) {
          pending += ' ';
          pending += std::to_string(i);
        }
      return pending;
    }
    sched_yield();  // more ranks than cores: let the others start their operations
  }
}

std::vector<std::int64_t> input(std::size_t n, int r, unsigned seed) {
  auto v = random_values<std::int64_t>(n, seed, static_cast<unsigned>(r));
  for (auto& x : v) x %= 1000000;
  return v;
}

}  // namespace

TEST(Progress, ModeIsSet) {
  const char* m = std::getenv("CAIRN_PROGRESS");
  ASSERT_TRUE(m && (std::strcmp(m, "peers") == 0 || std::strcmp(m, "thread") == 0))
      << "registered with CAIRN_PROGRESS=peers or thread";
}

// Allreduce (short, long: several algorithms), alltoall, bcast and a ring of point-to-point
// messages, all in flight at once, completed while the ranks do no cairn call.
TEST(Progress, OperationsCompleteWhileRanksCompute) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    for (unsigned seed = 1; seed <= 20; ++seed) {
      const std::size_t n_small = 1, n_large = 5000 + seed * 97, n_block = 300;
      auto a = input(n_small, me, seed), b = input(n_large, me, seed + 100);
      std::vector<std::int64_t> ra(n_small), rb(n_large);
      std::vector<std::int64_t> send(n_block * static_cast<std::size_t>(p)), recv(send.size());
      for (int to = 0; to < p; ++to)
        for (std::size_t i = 0; i < n_block; ++i)
          send[static_cast<std::size_t>(to) * n_block + i] =
              (std::int64_t{me} * 1000003 + to) * 7919 + static_cast<std::int64_t>(i) + seed;
      std::vector<double> bc(2000, me == static_cast<int>(seed) % p ? 1.5 * seed : 0.0);
      std::vector<int> ring_in(8192 + seed),
          ring_out(8192 + seed, me * 31 + static_cast<int>(seed));
      std::vector<cairn::request> reqs;
      reqs.push_back(w.iallreduce(a, ra, cairn::plus{}));
      reqs.push_back(w.iallreduce(b, rb, cairn::plus{}));
      reqs.push_back(w.ialltoall(send, recv));
      reqs.push_back(w.ibcast(bc, static_cast<int>(seed) % p));
      reqs.push_back(w.irecv(ring_in, (me + p - 1) % p, 5));
      reqs.push_back(w.isend(ring_out, (me + 1) % p, 5));
      ASSERT_EQ(ready_without_calls(reqs), "") << "rank " << me << " seed " << seed;
      cairn::wait_all(reqs);
      std::vector<std::int64_t> sa(n_small, 0), sb(n_large, 0);
      for (int r = 0; r < p; ++r) {
        auto x = input(n_small, r, seed), y = input(n_large, r, seed + 100);
        for (std::size_t i = 0; i < n_small; ++i) sa[i] += x[i];
        for (std::size_t i = 0; i < n_large; ++i) sb[i] += y[i];
      }
      EXPECT_EQ(ra, sa);
      EXPECT_EQ(rb, sb);
      for (int from = 0; from < p; ++from)
        for (std::size_t i = 0; i < n_block; ++i) {
          ASSERT_EQ(
              recv[static_cast<std::size_t>(from) * n_block + i],
              (std::int64_t{from} * 1000003 + me) * 7919 + static_cast<std::int64_t>(i) + seed);
        }
      EXPECT_EQ(bc, std::vector<double>(2000, 1.5 * seed));
      EXPECT_EQ(ring_in,
                std::vector<int>(8192 + seed, ((me + p - 1) % p) * 31 + static_cast<int>(seed)));
    }
  });
}
