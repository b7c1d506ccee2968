// Aspen's generalized reduce on both engines (the planner's stage counts are checked in
// generalized_schedule_test.cpp): the Figure 5 pair of concurrent reductions completed in both
// orders, random participant and receiver sets against a sequential reference (alone and
// several in flight), load balancing across reductions, and misuse raised before sending.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <tuple>

#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::mismatch;

using cairn::test::random_values;
using cairn::test::run;

namespace {

// Input of world rank r for a seed; small values so that sums and products stay exact.
std::vector<std::int64_t> input(std::size_t n, int r, unsigned seed) {
  auto v = random_values<std::int64_t>(n, seed, static_cast<unsigned>(r));
  for (auto& x : v) x %= 1000000;
  return v;
}
std::vector<std::int64_t> small_input(std::size_t n, int r, unsigned seed) {
  auto v = input(n, r, seed);
  for (auto& x : v) x = x % 7 + (x % 7 < 0 ? 8 : 1);  // 1..7
  return v;
}
std::vector<std::int64_t> sum_over(const std::vector<int>& ranks, std::size_t n, unsigned seed) {
  std::vector<std::int64_t> s(n, 0);
  for (int r : ranks) {
    auto v = input(n, r, seed);
    for (std::size_t i = 0; i < n; ++i) s[i] += v[i];
  }
  return s;
}
bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The algorithm of trial t: the butterfly, the board (forced where it fits a slot and the
// ranks share one node), staged through node memory (forced on one node at any size),
// hierarchical (forced on one node, where the default never takes it) or the default (the board
// on one node, staged past 16384 bytes across processes, hierarchical across nodes, unless
// balanced).
cairn::generalized_reduce_algorithm algorithm_for(int t, bool balance, std::size_t n,
                                                  const cairn::world& w) {
  using alg = cairn::generalized_reduce_algorithm;
  if (balance || t % 3 == 0) return t % 3 == 0 ? alg::butterfly : alg::automatic;
  if (t % 3 == 2) return w.node_count() == 1 && t % 2 ? alg::hierarchical : alg::automatic;
  if (w.node_count() == 1 && t % 2 == 0) return alg::shared_memory_staged;
  return n <= 2048 && w.node_count() == 1 ? alg::shared_memory : alg::automatic;
}

// True if the default runs the generalized reduce from `ps` to `rs` by node leaders: they span
// several nodes and some node holds two of their ranks.
bool across_nodes(cairn::world& w, const std::vector<int>& ps, const std::vector<int>& rs) {
  std::vector<int> members = ps;
  members.insert(members.end(), rs.begin(), rs.end());
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  const int nodes = cairn::test::placement_of(w, members).nodes;
  return nodes > 1 && nodes < static_cast<int>(members.size());
}

std::atomic<bool> too_few_ranks{false};  // per process: set by the ranks of a body that needs more

// Random subset of [0, w), never empty, in random order (only the set matters).
std::vector<int> random_subset(std::mt19937& g, int w, unsigned per_mille) {
  std::vector<int> s;
  for (int r = 0; r < w; ++r)
    if (g() % 1000 < per_mille) s.push_back(r);
  if (s.empty()) s.push_back(static_cast<int>(g() % static_cast<unsigned>(w)));
  std::shuffle(s.begin(), s.end(), g);
  return s;
}

// A random (P, R) of one of the kinds: R ⊂ P, R = P, disjoint, |R| = 1, |P| = 1, any.
std::pair<std::vector<int>, std::vector<int>> random_sets(std::mt19937& g, int w, int kind) {
  std::vector<int> p, r;
  switch (kind % 6) {
    case 0:
      p = random_subset(g, w, 700);
      for (int x : p)
        if (g() % 3 == 0) r.push_back(x);
      if (r.empty()) r.push_back(p.back());
      break;
    case 1:
      p = random_subset(g, w, 600);
      r = p;
      break;
    case 2:
      if (w < 2) return {{0}, {0}};
      for (int x = 0; x < w; ++x) (g() % 2 || x == 0 ? p : r).push_back(x);
      if (r.empty()) {
        r.push_back(p.back());
        p.pop_back();
      }
      break;
    case 3:
      p = random_subset(g, w, 500);
      r = {static_cast<int>(g() % static_cast<unsigned>(w))};
      break;
    case 4:
      p = {static_cast<int>(g() % static_cast<unsigned>(w))};
      r = random_subset(g, w, 600);
      break;
    default: p = random_subset(g, w, 400); r = random_subset(g, w, 400);
  }
  return {p, r};
}

}  // namespace

// Section 3.3, Figure 5: r1 sums the inputs of {0, 1, 2, 3} for receivers {0, 2}; r2 multiplies
// those of {1, 2} for receiver 3 (which does not participate). Started back to back from the
// same ranks, completed in both orders (and ranks disagree on the order), with and without
// load balancing and direct delivery; with a balancer, rank 0 records r2 without calling it.
TEST(Generalized, Figure5ConcurrentReductionsBothOrders) {
  run([](cairn::world& w) {
    if (w.size() < 4) {
      too_few_ranks = true;
      return;
    }
    const int me = w.rank();
    if (me >= 4) return;  // in neither reduction: must not call
    const auto p1 = w.group(std::vector<int>{0, 1, 2, 3});
    const auto r1_receivers = w.group(std::vector<int>{0, 2});
    for (int round = 0; round < 16; ++round) {
      const bool r2_first = (round + me) % 2 == 1;  // ranks wait in different orders
      // plain, balanced, balanced with a balancer; direct delivery (the default) or the paper's
      // graph: (round / 4) % 2 picks the graph, round % 4 the rest
      const int mode = round % 4 == 3 ? 2 : round % 4;
      const bool direct = (round / 4) % 2 == 0;
      cairn::reduce_balancer lb;
      cairn::generalized_reduce_options opt{.load_balance = mode >= 1,
                                            .balancer = mode == 2 ? &lb : nullptr,
                                            .direct_delivery = direct};
      const std::size_t n = round < 8 ? 9 : 20000;
      const unsigned s1 = static_cast<unsigned>(round * 2 + 1), s2 = s1 + 1;
      const auto in1 = input(n, me, s1);
      std::vector<std::int64_t> out1(me == 0 || me == 2 ? n : 0, -1);
      auto q1 = w.ireduce(p1, r1_receivers, in1, out1, cairn::plus{}, opt);
      std::vector<std::int64_t> in2 =
          me == 1 || me == 2 ? small_input(n, me, s2) : std::vector<std::int64_t>{};
      std::vector<std::int64_t> out2(me == 3 ? n : 0, -1);
      cairn::request q2;
      if (me >= 1)
        q2 = w.ireduce({1, 2}, {3}, in2, out2, cairn::multiplies{}, opt);
      else if (mode == 2)
        lb.record({1, 2}, {3}, direct);
      if (r2_first && me >= 1) q2.wait();
      q1.wait();
      if (me >= 1) q2.wait();
      if (me == 0 || me == 2) {
        ASSERT_EQ(mismatch(out1, sum_over({0, 1, 2, 3}, n, s1)), "") << "r1, round " << round;
      }
      if (me == 3) {
        std::vector<std::int64_t> prod = small_input(n, 1, s2), b = small_input(n, 2, s2);
        for (std::size_t i = 0; i < n; ++i) prod[i] *= b[i];
        ASSERT_EQ(mismatch(out2, prod), "") << "r2, round " << round;
      }
      if (mode == 2) {  // every rank recorded the same two graphs
        EXPECT_EQ(lb.incoming(0) + lb.incoming(1) + lb.incoming(2) + lb.incoming(3), 6);
        EXPECT_EQ(lb.incoming(0), 2);
        EXPECT_EQ(lb.incoming(2), 2);  // r1: 1 -> 0, 3 -> 2, 0 <-> 2
        EXPECT_EQ(lb.outgoing(1), 2);
        if (direct) {  // r2: 1 -> 3 and 2 -> 3, 3 reduces
          EXPECT_EQ(lb.incoming(1), 0);
          EXPECT_EQ(lb.incoming(3), 2);
        } else {  // r2: 2 -> 1 (1 only sent so far), then 1 -> 3
          EXPECT_EQ(lb.incoming(1), 1);
          EXPECT_EQ(lb.incoming(3), 1);
        }
      }
    }
  });
  if (too_few_ranks) GTEST_SKIP() << "needs at least 4 ranks";
}

// Two reduces on the same ranks in different sequence spaces (generalized_reduce_options::
// stream): ranks start them in different orders and both match, on the board and by messages.
TEST(Generalized, StreamsMatchIndependentlyOfStartOrder) {
  run([](cairn::world& w) {
    const int me = w.rank();
    std::vector<int> all(static_cast<std::size_t>(w.size()));
    std::iota(all.begin(), all.end(), 0);
    const std::vector<int> first{0};
    for (int round = 0; round < 12; ++round) {
      const auto alg = round % 2 ? cairn::generalized_reduce_algorithm::butterfly
                                 : cairn::generalized_reduce_algorithm::automatic;
      const std::size_t n = round < 6 ? 5 : 30000;
      const unsigned s1 = static_cast<unsigned>(round * 2 + 1), s2 = s1 + 1;
      const auto in1 = input(n, me, s1), in2 = input(n, me, s2);
      std::vector<std::int64_t> out1(n, -1), out2(me == 0 ? n : 0, -1);
      const cairn::generalized_reduce_options o1{.algorithm = alg, .stream = 11},
          o2{.algorithm = alg, .stream = 12};
      cairn::request q1, q2;
      if ((me + round) % 2) {
        q2 = w.ireduce(all, first, in2, out2, cairn::plus{}, o2);
        q1 = w.ireduce(all, all, in1, out1, cairn::plus{}, o1);
      } else {
        q1 = w.ireduce(all, all, in1, out1, cairn::plus{}, o1);
        q2 = w.ireduce(all, first, in2, out2, cairn::plus{}, o2);
      }
      q1.wait();
      q2.wait();
      ASSERT_EQ(mismatch(out1, sum_over(all, n, s1)), "") << "stream 11, round " << round;
      if (me == 0) {
        ASSERT_EQ(mismatch(out2, sum_over(all, n, s2)), "") << "stream 12, round " << round;
      }
    }
  });
}

// Random participant and receiver sets of every kind (the same on all ranks from the seed),
// given as groups or vectors; counts 0 to 20000; sum, min and a commutative user operation.
TEST(Generalized, RandomSetsAgainstReference) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const int trials = w.engine() == cairn::engine::threads ? 300 + 1200 / p : 150;
    for (int t = 0; t < trials; ++t) {
      std::mt19937 g(static_cast<unsigned>(t * 31 + p));
      auto [ps, rs] = random_sets(g, p, t);
      const bool in_p = contains(ps, me), in_r = contains(rs, me);
      const std::size_t n = t % 9 == 0 ? 0 : t % 7 == 0 ? 20000 : 1 + g() % 40;
      const bool balance = g() % 2;
      const int which = static_cast<int>(g() % 3);
      if (!in_p && !in_r) continue;
      const unsigned seed = static_cast<unsigned>(t + 100);
      const auto in = in_p ? input(n, me, seed) : std::vector<std::int64_t>{};
      std::vector<std::int64_t> out(in_r ? n : 0, -3);
      const cairn::generalized_reduce_options opt{.algorithm = algorithm_for(t, balance, n, w),
                                                  .load_balance = balance,
                                                  .direct_delivery = t % 4 != 1};
      if (which == 0) {
        w.reduce(w.group(ps), w.group(rs), in, out, cairn::plus{}, opt);
      } else if (which == 1) {
        w.reduce(ps, rs, in, out, cairn::min{}, opt);
      } else {
        w.ireduce(w.group(ps), rs, in, out,
                  cairn::op([](std::int64_t a, std::int64_t b) { return a ^ b; }, true), opt)
            .wait();
      }
      if (!in_r) continue;
      std::vector<std::int64_t> want = which == 0 ? sum_over(ps, n, seed) : input(n, ps[0], seed);
      if (which != 0)
        for (std::size_t k = 1; k < ps.size(); ++k) {
          const auto v = input(n, ps[k], seed);
          for (std::size_t i = 0; i < n; ++i)
            want[i] = which == 1 ? std::min(want[i], v[i]) : want[i] ^ v[i];
        }
      ASSERT_EQ(mismatch(out, want), "")
          << "trial " << t << " |P|=" << ps.size() << " |R|=" << rs.size();
    }
  });
}

// Several generalized reduces on random overlapping sets in flight at once, with rooted
// reduces and allreduces of the world mixed in; each rank waits in its own random order.
TEST(Generalized, ConcurrentMixtures) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const int mixtures = w.engine() == cairn::engine::threads ? 150 + 600 / p : 80;
    for (int m = 0; m < mixtures; ++m) {
      std::mt19937 g(static_cast<unsigned>(m * 7919 + p));
      struct item {
        std::vector<int> ps, rs;
        std::vector<std::int64_t> in, out;
        unsigned seed;
      };
      std::vector<item> items(1 + g() % 4);
      std::vector<cairn::request> reqs;
      std::vector<std::int64_t> all_in = input(33, me, static_cast<unsigned>(m)), all_out(33);
      for (std::size_t i = 0; i < items.size(); ++i) {
        item& it = items[i];
        std::tie(it.ps, it.rs) = random_sets(g, p, static_cast<int>(g() % 6));
        it.seed = static_cast<unsigned>(m * 10 + static_cast<int>(i));
        const std::size_t n = g() % 300;
        const bool in_p = contains(it.ps, me), in_r = contains(it.rs, me);
        if (i == 1) reqs.push_back(w.iallreduce(all_in, all_out, cairn::plus{}));
        if (!in_p && !in_r) continue;
        it.in = in_p ? input(n, me, it.seed) : std::vector<std::int64_t>{};
        it.out.assign(in_r ? n : 0, -5);
        reqs.push_back(w.ireduce(
            it.ps, it.rs, it.in, it.out, cairn::plus{},
            cairn::generalized_reduce_options{.algorithm = algorithm_for(m, m % 2 == 1, n, w),
                                              .load_balance = m % 2 == 1,
                                              .direct_delivery = m % 3 != 2}));
      }
      if (items.size() < 2) reqs.push_back(w.iallreduce(all_in, all_out, cairn::plus{}));
      std::vector<std::int64_t> root_out(me == 0 ? 5 : 0);
      const auto root_in = input(5, me, 77);
      reqs.push_back(
          w.ireduce(root_in, root_out, 0));  // the rooted reduce beside the generalized one
      std::vector<std::size_t> order(reqs.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::mt19937 mine(static_cast<unsigned>(m + 1000 * me));
      std::shuffle(order.begin(), order.end(), mine);
      for (std::size_t o : order) reqs[o].wait();
      std::vector<int> everyone(static_cast<std::size_t>(p));
      std::iota(everyone.begin(), everyone.end(), 0);
      ASSERT_EQ(mismatch(all_out, sum_over(everyone, 33, static_cast<unsigned>(m))), "")
          << "mixture " << m;
      if (me == 0) {
        ASSERT_EQ(mismatch(root_out, sum_over(everyone, 5, 77)), "");
      }
      for (const item& it : items)
        if (contains(it.rs, me)) {
          ASSERT_EQ(mismatch(it.out, sum_over(it.ps, it.out.size(), it.seed)), "")
              << "mixture " << m;
        }
    }
  });
}

// Writes `v` into the bound buffer `to` (same size): a persistent request keeps its pointer.
void overwrite(std::vector<std::int64_t>& to, const std::vector<std::int64_t>& v) {
  std::copy(v.begin(), v.end(), to.begin());
}

// The persistent form: ireduce_init on random sets of every kind (fixed seeds), started five
// times with new inputs written into the bound buffer between starts, against the sequential
// reference; on odd starts a one-shot generalized reduce on the same sets (another op, other
// buffers) runs beside it, started after it everywhere.
TEST(Generalized, PersistentRepeatedWithChangingData) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const bool direct = cairn::test::long_collectives_move_direct(w);
    const int trials = w.engine() == cairn::engine::threads ? 60 + 240 / p : 40;
    for (int t = 0; t < trials; ++t) {
      std::mt19937 g(static_cast<unsigned>(t * 131 + p));
      auto [ps, rs] = random_sets(g, p, t);
      const std::size_t n = t % 11 == 0 ? 0 : t % 7 == 0 ? 6000 : 1 + g() % 50;
      const bool balance = g() % 2 == 1;
      const cairn::generalized_reduce_options opt{.algorithm = algorithm_for(t, balance, n, w),
                                                  .load_balance = balance,
                                                  .direct_delivery = g() % 3 != 0};
      const bool in_p = contains(ps, me), in_r = contains(rs, me);
      if (!in_p && !in_r) continue;
      std::vector<std::int64_t> in(in_p ? n : 0), out(in_r ? n : 0, -7), out2(in_r ? n : 0);
      cairn::persistent_request pr = w.ireduce_init(ps, rs, in, out, cairn::plus{}, opt);
      // On one node: the board whenever not told otherwise, past a slot's 16384 bytes staged
      // across processes, or where long collectives move straight between the buffers. Across
      // (emulated) nodes: never.
      using alg = cairn::generalized_reduce_algorithm;
      const bool processes = w.engine() == cairn::engine::mpi;
      const bool board =
          w.node_count() == 1 && opt.algorithm != alg::butterfly &&
          opt.algorithm != alg::hierarchical && !balance &&
          (n <= 2048 || direct || processes || opt.algorithm == alg::shared_memory_staged);
      const bool by_leaders =
          opt.algorithm == alg::hierarchical ||
          (opt.algorithm == alg::automatic && !balance && across_nodes(w, ps, rs));
      EXPECT_EQ(pr.plan().name.rfind(board        ? "reduce_generalized/shared_memory"
                                     : by_leaders ? "reduce_generalized/hierarchical"
                                                  : "reduce_generalized/aspen",
                                     0),
                0u)
          << pr.plan();
      EXPECT_FALSE(pr.active());
      for (int k = 0; k < 5; ++k) {
        const unsigned seed = static_cast<unsigned>(t * 10 + k), seed2 = seed + 5000;
        if (in_p) overwrite(in, input(n, me, seed));
        pr.start();
        cairn::request other;
        const auto in2 = in_p ? input(n, me, seed2) : std::vector<std::int64_t>{};
        if (k % 2 == 1) other = w.ireduce(ps, rs, in2, out2, cairn::max{}, opt);
        if (k % 2 == 1 && (t + me) % 2 == 0) other.wait();  // ranks wait in different orders
        pr.wait();
        other.wait();
        if (!in_r) continue;
        ASSERT_EQ(mismatch(out, sum_over(ps, n, seed)), "") << "trial " << t << " start " << k;
        if (k % 2 == 1) {
          std::vector<std::int64_t> want = input(n, ps[0], seed2);
          for (std::size_t j = 1; j < ps.size(); ++j) {
            const auto v = input(n, ps[j], seed2);
            for (std::size_t i = 0; i < n; ++i) want[i] = std::max(want[i], v[i]);
          }
          ASSERT_EQ(mismatch(out2, want), "") << "trial " << t << " start " << k;
        }
      }
    }
  });
}

// A persistent Figure 5 pair with a balancer: the graphs are recorded once, at init (rank 0
// records r2, which it does not join); each start runs them again on new data.
TEST(Generalized, PersistentFigure5WithBalancer) {
  run([](cairn::world& w) {
    if (w.size() < 4) {
      too_few_ranks = true;
      return;
    }
    const int me = w.rank();
    if (me >= 4) return;
    const std::size_t n = 300;
    cairn::reduce_balancer lb;
    const cairn::generalized_reduce_options opt{.balancer = &lb};
    std::vector<std::int64_t> in1(n), out1(me == 0 || me == 2 ? n : 0),
        in2(me == 1 || me == 2 ? n : 0), out2(me == 3 ? n : 0);
    cairn::persistent_request r1 =
        w.ireduce_init({0, 1, 2, 3}, {0, 2}, in1, out1, cairn::plus{}, opt);
    cairn::persistent_request r2;
    if (me >= 1)
      r2 = w.ireduce_init({1, 2}, {3}, in2, out2, cairn::multiplies{}, opt);
    else
      lb.record({1, 2}, {3});
    for (int k = 0; k < 6; ++k) {
      const unsigned s1 = static_cast<unsigned>(100 + k), s2 = s1 + 50;
      overwrite(in1, input(n, me, s1));
      if (me == 1 || me == 2) overwrite(in2, small_input(n, me, s2));
      r1.start();
      if (me >= 1) r2.start();
      if (k % 2 == 1) r1.wait();
      if (me >= 1) r2.wait();
      r1.wait();
      if (me == 0 || me == 2) {
        ASSERT_EQ(mismatch(out1, sum_over({0, 1, 2, 3}, n, s1)), "") << "start " << k;
      }
      if (me == 3) {
        std::vector<std::int64_t> prod = small_input(n, 1, s2), b = small_input(n, 2, s2);
        for (std::size_t i = 0; i < n; ++i) prod[i] *= b[i];
        ASSERT_EQ(mismatch(out2, prod), "") << "start " << k;
      }
    }
    EXPECT_EQ(lb.incoming(0) + lb.incoming(1) + lb.incoming(2) + lb.incoming(3),
              6);                  // once, at init
    EXPECT_EQ(lb.incoming(3), 2);  // direct delivery: 1 -> 3 and 2 -> 3
  });
  if (too_few_ranks) GTEST_SKIP() << "needs at least 4 ranks";
}

// The plan cache: the same sets and size twice give the same butterfly plan object (a cache
// hit; shown through the persistent form, whose plan is the cached one); another size another
// plan.
// Repeated one-shot reductions on random sets and sizes, interleaved so that most calls hit the
// cache, give the first call's results bit for bit (doubles) and the reference (integers).
TEST(Generalized, PlanCacheHitsGiveIdenticalResults) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    std::vector<int> everyone(static_cast<std::size_t>(p));
    std::iota(everyone.begin(), everyone.end(), 0);
    {
      std::vector<std::int64_t> in(16, me), out(16), other(17, me), other_out(17);
      const cairn::generalized_reduce_options bf{
          .algorithm = cairn::generalized_reduce_algorithm::butterfly};
      cairn::persistent_request a = w.ireduce_init(everyone, {0}, in, out, cairn::plus{}, bf);
      cairn::persistent_request b = w.ireduce_init(everyone, {0}, in, out, cairn::plus{}, bf);
      cairn::persistent_request c =
          w.ireduce_init(everyone, {0}, other, other_out, cairn::plus{}, bf);
      EXPECT_EQ(&a.plan(), &b.plan());
      EXPECT_NE(&a.plan(), &c.plan());
    }
    struct shape {
      std::vector<int> ps, rs;
      std::size_t n;
      std::vector<double> first;  // this rank's result on the first call
    };
    std::mt19937 g(static_cast<unsigned>(4242 + p));
    std::vector<shape> shapes;
    for (int i = 0; i < 6; ++i) {
      auto [ps, rs] = random_sets(g, p, i);
      shapes.push_back({ps, rs, 1 + g() % 700, {}});
    }
    const int calls = w.engine() == cairn::engine::threads ? 120 : 60;
    for (int c = 0; c < calls; ++c) {
      shape& s = shapes[g() % shapes.size()];  // the same draw on every rank
      const bool in_p = contains(s.ps, me), in_r = contains(s.rs, me);
      if (!in_p && !in_r) continue;
      // Doubles from fixed inputs: any other order of operations would show in the low bits.
      std::vector<double> in(in_p ? s.n : 0), out(in_r ? s.n : 0, -1.0);
      for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = 1.0 / static_cast<double>(3 + me + 7 * static_cast<int>(i));
      w.reduce(s.ps, s.rs, in, out, cairn::plus{});
      if (in_r) {
        if (s.first.empty()) s.first = out;
        ASSERT_EQ(std::memcmp(out.data(), s.first.data(), out.size() * sizeof(double)), 0)
            << "call " << c;
      }
      const unsigned seed = static_cast<unsigned>(c);
      const auto iv = in_p ? input(s.n, me, seed) : std::vector<std::int64_t>{};
      std::vector<std::int64_t> io(in_r ? s.n : 0, -2);
      w.reduce(s.ps, s.rs, iv, io, cairn::plus{});
      if (in_r) {
        ASSERT_EQ(mismatch(io, sum_over(s.ps, s.n, seed)), "") << "call " << c;
      }
    }
  });
}

// Misuse is a cairn::error naming the call and raised before anything is sent: only the
// failing ranks call, and nobody is left waiting.
TEST(Generalized, BadInput) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    std::vector<int> everyone(static_cast<std::size_t>(p));
    std::iota(everyone.begin(), everyone.end(), 0);
    std::vector<std::int64_t> in(4, 1), out(4), short_out(3), none;
    std::string msg = message_of([&] { w.reduce(everyone, std::vector<int>{}, in, out); });
    EXPECT_TRUE(has_text(msg, "cairn::reduce: rank " + std::to_string(me) + ": empty receiver set"))
        << msg;
    msg = message_of([&] { (void)w.ireduce(std::vector<int>{}, everyone, in, out); });
    EXPECT_TRUE(
        has_text(msg, "cairn::ireduce: rank " + std::to_string(me) + ": empty participant set"))
        << msg;
    msg = message_of([&] { w.reduce(everyone, {0, p}, in, out); });
    EXPECT_TRUE(has_text(msg, "receiver rank " + std::to_string(p) + " is outside the world of " +
                                  std::to_string(p)))
        << msg;
    msg = message_of([&] { w.reduce({-1, 0}, {0}, in, out); });
    EXPECT_TRUE(has_text(msg, "participant rank -1 is outside the world")) << msg;
    msg = message_of([&] { w.reduce({0, 0}, {0}, in, out); });
    EXPECT_TRUE(has_text(msg, "participant rank 0 is listed twice")) << msg;
    msg = message_of([&] { w.reduce(everyone, everyone, in, short_out); });
    EXPECT_TRUE(has_text(msg, "output holds 3 elements, input 4")) << msg;
    msg = message_of([&] { w.reduce(everyone, everyone, in, std::span(in).first(4)); });
    EXPECT_TRUE(has_text(msg, "input and output overlap")) << msg;
    msg = message_of([&] {
      w.reduce(everyone, everyone, in, out,
               cairn::op([](std::int64_t a, std::int64_t b) { return a - b; }, false));
    });
    EXPECT_TRUE(has_text(msg, "cairn::reduce: rank " + std::to_string(me) +
                                  ": the generalized reduce needs a commutative"))
        << msg;
    msg = message_of([&] {
      w.reduce(
          everyone, everyone, in, out, cairn::plus{},
          {.algorithm = cairn::generalized_reduce_algorithm::hierarchical, .load_balance = true});
    });
    EXPECT_TRUE(has_text(msg, "cairn::reduce: rank " + std::to_string(me) +
                                  ": the hierarchical algorithm does not balance"))
        << msg;
    if (p > 1) {
      // A rank in neither set: {0} -> {0} runs on rank 0 alone (a local copy); the others fail.
      std::vector<std::int64_t> solo_out(4, 0);
      msg = message_of([&] { w.reduce({0}, {0}, in, solo_out); });
      if (me == 0) {
        EXPECT_EQ(msg, "no error");
        EXPECT_EQ(solo_out, in);
      } else {
        EXPECT_TRUE(has_text(msg, "this rank is neither a participant nor a receiver")) << msg;
      }
      // A non-participant receiver passing an input.
      if (me == p - 1) {
        msg = message_of([&] { w.reduce({0}, {p - 1}, in, out); });
        EXPECT_TRUE(has_text(
            msg,
            "input holds 4 elements; a receiver that does not participate passes an empty input"))
            << msg;
      }
    }
    // Nothing was sent: a valid reduction right after sees no stray message.
    std::vector<std::int64_t> got(4, 0);
    w.reduce(everyone, {p - 1}, input(4, me, 5), me == p - 1 ? std::span(got) : std::span(none));
    if (me == p - 1) {
      EXPECT_EQ(got, sum_over(everyone, 4, 5));
    }
    w.barrier();
  });
}
