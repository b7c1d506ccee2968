// Distributed arrays on both engines: redistribute between random layouts over the same,
// disjoint and overlapping groups (1-4 dimensions, sizes not divisible by the grid, empty local
// parts), through direct copies and through messages; inter-task send/recv, isend/irecv both
// ways at once, persistent transfers repeated with changing data, both strategies; chunked
// pipelining (each peer's data in k slabs); long rows (read straight from the sender's memory
// on the MPI engine); inter-task collectives; bad input. Every element is compared with its
// reference value.
#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>

#include "harness.hpp"

using cairn::test::run;

namespace {

// Reference value of global element gi for a seed.
template <std::size_t N>
double value(const std::array<std::int64_t, N>& gi, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull;
  for (auto i : gi) x = (x ^ static_cast<std::uint64_t>(i)) * 0xBF58476D1CE4E5B9ull + 7;
  return static_cast<double>(x >> 11);
}

cairn::dim_dist random_dist(std::mt19937_64& g) {
  switch (g() % 4) {
    case 0: return cairn::dist::block;
    case 1: return cairn::dist::cyclic;
    case 2: return cairn::dist::block_cyclic(1 + static_cast<std::int64_t>(g() % 4));
    default: return cairn::dist::replicated;
  }
}

template <int N>
std::array<int, N> random_grid(std::mt19937_64& g, int p) {
  std::array<int, N> grid{};
  if (g() % 3 == 0) return grid;  // default grid
  grid.fill(1);
  for (int f = 2; p > 1;) {
    if (p % f == 0) {
      grid[g() % N] *= f;
      p /= f;
    } else {
      ++f;
    }
  }
  return grid;
}

template <int N>
cairn::layout<N> random_layout(std::mt19937_64& g, const cairn::group& grp,
                               const std::array<std::int64_t, N>& shape) {
  std::array<cairn::dim_dist, N> d{};
  for (auto& x : d) x = random_dist(g);
  return cairn::layout<N>(grp, shape, d, random_grid<N>(g, grp.size()));
}

// Checks every local element of `a` against the reference; returns the number of mismatches.
template <int N>
int mismatches(cairn::darray<double, N>& a, std::uint64_t seed) {
  int bad = 0;
  a.for_each([&](const auto& gi, double& x) { bad += x != value(gi, seed); });
  return bad;
}

// Random member lists: same, disjoint or overlapping groups of the world.
std::pair<std::vector<int>, std::vector<int>> random_groups(std::mt19937_64& g, int p, int mode) {
  std::vector<int> all(static_cast<std::size_t>(p));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), g);
  if (mode == 0 || p == 1) return {all, all};
  if (mode == 1) {  // disjoint
    const int k = 1 + static_cast<int>(g() % static_cast<std::uint64_t>(p - 1));
    return {{all.begin(), all.begin() + k}, {all.begin() + k, all.end()}};
  }
  const int a = 1 + static_cast<int>(g() % static_cast<std::uint64_t>(p));
  const int b = 1 + static_cast<int>(g() % static_cast<std::uint64_t>(p));
  std::vector<int> s(all.begin(), all.begin() + a);
  std::shuffle(all.begin(), all.end(), g);
  return {s, {all.begin(), all.begin() + b}};
}

// Redistributes a random array from sl to dl and back, every element checked (and every
// destination element reported once by on_slab, already in place).
template <int N>
void check_redistribution(const cairn::layout<N>& sl, const cairn::layout<N>& dl,
                          std::uint64_t seed, bool direct, int chunks, int mode) {
  cairn::darray<double, N> a(sl), b(dl);
  a.fill([&](const auto& gi) { return value(gi, seed); });
  std::fill(b.local().begin(), b.local().end(), -1.0);
  // on_slab reports every destination element once, already in place.
  std::vector<double> expect;
  b.for_each([&](const auto& gi, double&) { expect.push_back(value(gi, seed)); });
  std::vector<int> seen(b.local_size(), 0);
  int early = 0;
  cairn::transfer_options o{.direct = direct, .chunks = chunks};
  o.on_slab = [&, bd = b.data()](const cairn::slab_arrival& s) {
    s.for_each_run([&](std::int64_t off, std::int64_t len) {
      for (auto k = static_cast<std::size_t>(off); k < static_cast<std::size_t>(off + len); ++k) {
        ++seen[k];
        early += bd[k] != expect[k];
      }
    });
  };
  cairn::redistribute(a, b, o);
  std::ostringstream what;
  what << sl << " -> " << dl << " mode " << mode << (direct ? " direct" : " messages") << " chunks "
       << chunks;
  EXPECT_EQ(mismatches(b, seed), 0) << what.str();
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(seen.size()))
      << what.str();
  EXPECT_EQ(early, 0) << what.str();
  // And back (the reverse plan), into a cleared source.
  std::fill(a.local().begin(), a.local().end(), -1.0);
  cairn::redistribute(b, a, {.direct = direct, .chunks = chunks});
  EXPECT_EQ(mismatches(a, seed), 0) << "back: " << what.str();
}

template <int N>
void redistribute_case(cairn::world& w, std::mt19937_64& g, std::uint64_t seed, bool direct,
                       int chunks = 1) {
  const int p = w.size();
  const std::int64_t cap = N == 1 ? 50 : N == 2 ? 17 : N == 3 ? 9 : 6;
  std::array<std::int64_t, N> shape{};
  for (auto& s : shape) s = static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(cap + 1));
  const int mode = static_cast<int>(g() % 3);
  auto [sm, dm] = random_groups(g, p, mode);
  const cairn::group sg = w.group(sm), dg = w.group(dm);
  const auto sl = random_layout<N>(g, sg, shape);
  const auto dl = random_layout<N>(g, dg, shape);
  check_redistribution<N>(sl, dl, seed, direct, chunks, mode);
}

// Long rows: the last dimension, 1024-2047 doubles, whole on every rank (the others random),
// so the runs are at least 8 KiB: what the MPI engine on one node reads straight from the
// sender's memory where the kernel allows it (node/cross_memory.hpp).
template <int N>
void long_rows_case(cairn::world& w, std::mt19937_64& g, std::uint64_t seed, bool direct) {
  std::array<std::int64_t, N> shape{};
  for (auto& s : shape) s = static_cast<std::int64_t>(g() % 6);
  shape[N - 1] = 1024 + static_cast<std::int64_t>(g() % 1024);
  const int mode = static_cast<int>(g() % 3);
  auto [sm, dm] = random_groups(g, w.size(), mode);
  auto layout = [&](const cairn::group& grp) {
    std::array<cairn::dim_dist, N> d{};
    for (auto& x : d) x = random_dist(g);
    d[N - 1] = cairn::dist::replicated;
    const std::array<int, N - 1> outer = random_grid<N - 1>(g, grp.size());
    std::array<int, N> grid{};
    if (outer[0] != 0) {
      std::copy(outer.begin(), outer.end(), grid.begin());
      grid[N - 1] = 1;
    } else {  // a grid of the group's ranks over the outer dimensions
      grid.fill(1);
      grid[0] = grp.size();
    }
    return cairn::layout<N>(grp, shape, d, grid);
  };
  const auto sl = layout(w.group(sm));
  const auto dl = layout(w.group(dm));
  check_redistribution<N>(sl, dl, seed, direct, 1, mode);
}

TEST(ArrayTransfer, RedistributeRandomLayouts) {
  run([](cairn::world& w) {
    std::mt19937_64 g(777);  // same sequence on every rank
    for (int iter = 0; iter < 160; ++iter) {
      const bool direct = iter % 2 == 0;
      switch (iter % 4) {
        case 0: redistribute_case<1>(w, g, static_cast<std::uint64_t>(iter), direct); break;
        case 1: redistribute_case<2>(w, g, static_cast<std::uint64_t>(iter), direct); break;
        case 2: redistribute_case<3>(w, g, static_cast<std::uint64_t>(iter), direct); break;
        default: redistribute_case<4>(w, g, static_cast<std::uint64_t>(iter), direct); break;
      }
    }
  });
}

TEST(ArrayTransfer, RedistributeLongRows) {
  run([](cairn::world& w) {
    std::mt19937_64 g(4242);
    for (int iter = 0; iter < 24; ++iter) {
      const bool direct = iter % 4 != 3;
      if (iter % 2 == 0)
        long_rows_case<2>(w, g, static_cast<std::uint64_t>(iter), direct);
      else
        long_rows_case<3>(w, g, static_cast<std::uint64_t>(iter), direct);
    }
  });
}

// Chunked pipelining: the same random redistributions with each peer's data in k slabs,
// including k larger than some peers' element counts.
TEST(ArrayTransfer, RedistributeChunked) {
  run([](cairn::world& w) {
    std::mt19937_64 g(919);
    for (int iter = 0; iter < 96; ++iter) {
      const int chunks = std::array<int, 3>{2, 3, 8}[static_cast<std::size_t>(iter % 3)];
      const bool direct = iter % 8 == 0;  // mostly messages: that is where slabs travel
      switch ((iter / 3) % 4) {
        case 0: redistribute_case<1>(w, g, static_cast<std::uint64_t>(iter), direct, chunks); break;
        case 1: redistribute_case<2>(w, g, static_cast<std::uint64_t>(iter), direct, chunks); break;
        case 2: redistribute_case<3>(w, g, static_cast<std::uint64_t>(iter), direct, chunks); break;
        default:
          redistribute_case<4>(w, g, static_cast<std::uint64_t>(iter), direct, chunks);
          break;
      }
    }
  });
}

// Slabs cover each peer's elements exactly once, in the agreed order: the runs of every slab,
// concatenated, are the runs of the whole (no empty slab, nothing duplicated or dropped).
TEST(ArrayTransfer, SlabsPartitionEveryPeer) {
  run([](cairn::world& w) {
    if (w.rank() != 0) return;
    std::mt19937_64 g(31);
    const int p = std::max(w.size(), 3);
    std::vector<int> members(static_cast<std::size_t>(p));
    std::iota(members.begin(), members.end(), 0);
    for (int iter = 0; iter < 40; ++iter) {
      const std::array<std::int64_t, 3> shape{static_cast<std::int64_t>(1 + g() % 9),
                                              static_cast<std::int64_t>(1 + g() % 9),
                                              static_cast<std::int64_t>(1 + g() % 9)};
      std::array<cairn::dim_dist, 3> sd{}, dd{};
      for (auto& x : sd) x = random_dist(g);
      for (auto& x : dd) x = random_dist(g);
      const int zero[3] = {0, 0, 0};
      const auto s =
          cairn::detail::make_layout_desc("test", 0, p, 3, shape.data(), sd.data(), zero);
      const auto d =
          cairn::detail::make_layout_desc("test", 0, p, 3, shape.data(), dd.data(), zero);
      for (const int k : {1, 2, 3, 8, 1000}) {
        const auto plan = cairn::detail::compute_plan("test", 0, 8, s, members, d, members, k);
        EXPECT_EQ(plan->chunks, k);
        for (const auto* peers : {&plan->sends, &plan->recvs})
          for (const cairn::plan_peer& pe : *peers) {
            using run3 = std::array<std::int64_t, 3>;
            std::vector<run3> whole, pieces;
            // Element by element, so that merging at slab ends does not matter.
            auto expand = [](std::vector<run3>& v) {
              return [&v](std::int64_t a, std::int64_t b, std::int64_t l) {
                for (std::int64_t i = 0; i < l; ++i) v.push_back({a + i, b + i, 1});
              };
            };
            plan->for_each_run(pe, expand(whole));
            const std::int64_t n = plan->slabs(pe);
            EXPECT_EQ(n, std::min<std::int64_t>(k, pe.elements));
            for (std::int64_t j = 0; j < n; ++j) {
              const std::int64_t b = plan->slab_begin(pe, j), e = plan->slab_begin(pe, j + 1);
              EXPECT_LT(b, e) << "empty slab " << j << " of " << n;
              plan->for_each_run(pe, b, e - b, expand(pieces));
            }
            EXPECT_EQ(plan->slab_begin(pe, n), pe.elements);
            EXPECT_EQ(static_cast<std::int64_t>(whole.size()), pe.elements);
            EXPECT_EQ(pieces, whole) << "chunks " << k;
          }
        std::ostringstream os;
        os << *plan;
        EXPECT_NE(os.str().find("chunks: " + std::to_string(k)), std::string::npos) << os.str();
      }
    }
  });
}

TEST(ArrayTransfer, NonBlockingRedistributionsInFlightTogether) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    cairn::layout<2> rows(all, {37, 23}, {cairn::dist::block, cairn::dist::replicated});
    cairn::layout<2> cols(all, {37, 23}, {cairn::dist::replicated, cairn::dist::block_cyclic(2)});
    cairn::darray<double, 2> a(rows), b(cols), c(rows), d(cols);
    a.fill([](const auto& gi) { return value(gi, 1); });
    c.fill([](const auto& gi) { return value(gi, 2); });
    auto r1 = cairn::iredistribute(a, b);
    auto r2 = cairn::iredistribute(c, d, {.direct = false});
    r2.wait();
    r1.wait();
    EXPECT_EQ(mismatches(b, 1), 0);
    EXPECT_EQ(mismatches(d, 2), 0);
  });
}

// One completion handle: array transfers, point-to-point and collectives complete through
// cairn::request, so wait_any / wait_all / test_all take them mixed.
TEST(ArrayTransfer, RequestsOfEveryKindInOneWait) {
  run([](cairn::world& w) {
    std::mt19937_64 g(20261125);
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    for (int round = 0; round < 3; ++round) {
      const cairn::layout<2> from = random_layout<2>(g, all, {29, 17});
      const cairn::layout<2> to = random_layout<2>(g, all, {29, 17});
      cairn::darray<double, 2> a(from), b(to);
      const std::uint64_t seed = 40 + static_cast<std::uint64_t>(round);
      a.fill([&](const auto& gi) { return value(gi, seed); });
      const int right = (w.rank() + 1) % w.size(), left = (w.rank() + w.size() - 1) % w.size();
      long token = 1000L * round + w.rank(), got = -1, mine = w.rank() + 1L, sum = 0;
      std::vector<cairn::request> reqs;
      reqs.push_back(cairn::iredistribute(a, b, {.direct = round != 1}));
      reqs.push_back(w.irecv(&got, 1, left, 9));
      reqs.push_back(w.iallreduce(std::span(&mine, 1), std::span(&sum, 1), cairn::plus{}));
      reqs.push_back(w.isend(&token, 1, right, 9));
      // wait_any until all are done, then wait_all on the (complete) rest.
      std::size_t done = 0;
      while (cairn::wait_any(reqs) != reqs.size()) ++done;
      EXPECT_LE(done, reqs.size());
      cairn::wait_all(reqs);
      EXPECT_TRUE(cairn::test_all(reqs));
      EXPECT_EQ(mismatches(b, seed), 0) << "round " << round;
      EXPECT_EQ(got, 1000L * round + left);
      EXPECT_EQ(sum, static_cast<long>(w.size()) * (w.size() + 1) / 2);
    }
  });
}

// Two tasks: random layouts on each, both strategies, both directions at once, persistent.
TEST(ArrayTransfer, BetweenTasks) {
  run([](cairn::world& w) {
    if (w.size() < 2) return;
    std::mt19937_64 g(4242);
    for (int iter = 0; iter < 30; ++iter) {
      const int k = 1 + static_cast<int>(g() % static_cast<std::uint64_t>(w.size() - 1));
      cairn::tasks t(w, {k, w.size() - k});
      // Every fifth: rows of 1024-2047 doubles (read straight on the MPI engine where whole).
      const std::array<std::int64_t, 2> shape{
          static_cast<std::int64_t>(g() % 20),
          static_cast<std::int64_t>(iter % 5 == 4 ? 1024 + g() % 1024 : 1 + g() % 20)};
      const auto la = random_layout<2>(g, t.group(0), shape);
      const auto lb = random_layout<2>(g, t.group(1), shape);
      const auto la2 = random_layout<2>(g, t.group(0), shape);
      const auto lb2 = random_layout<2>(g, t.group(1), shape);
      const cairn::transfer_strategy strategies[] = {cairn::transfer_strategy::automatic,
                                                     cairn::transfer_strategy::parallel,
                                                     cairn::transfer_strategy::centralized};
      // Slabs from either side (the larger count is used): 1, 3 or 8 on one side.
      const int chunks = iter % 4 == 1 ? 3 : iter % 4 == 3 ? 8 : 1;
      const cairn::transfer_options o{.strategy = strategies[iter % 3],
                                      .direct = iter % 2 == 0,
                                      .chunks = (iter / 4) % 2 == t.task() ? chunks : 1};
      const auto seed = static_cast<std::uint64_t>(iter) * 10;
      const int me = t.task();
      // Each task sends its array to the other one and receives the other's, non-blocking.
      cairn::darray<double, 2> out(me == 0 ? la : lb), in(me == 0 ? la2 : lb2);
      out.fill([&](const auto& gi) { return value(gi, seed + static_cast<std::uint64_t>(me)); });
      std::vector<int> seen(in.local_size(), 0);
      cairn::transfer_options ro = o;
      ro.on_slab = [&](const cairn::slab_arrival& sl) {
        sl.for_each_run([&](std::int64_t off, std::int64_t len) {
          for (auto k = static_cast<std::size_t>(off); k < static_cast<std::size_t>(off + len); ++k)
            ++seen[k];
        });
      };
      auto s = t.isend(out, 1 - me, /*tag=*/5, o);
      auto r = t.irecv(in, 1 - me, /*tag=*/5, ro);
      r.wait();
      s.wait();
      EXPECT_EQ(mismatches(in, seed + static_cast<std::uint64_t>(1 - me)), 0) << "iter " << iter;
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(seen.size()))
          << "iter " << iter;

      // Persistent: task 0 -> task 1, repeated with changing data.
      cairn::darray<double, 2> src(la), dst(lb);
      cairn::persistent_transfer pt =
          me == 0 ? t.send_init(src, 1, 9, o) : t.recv_init(dst, 0, 9, o);
      for (int rep = 0; rep < 4; ++rep) {
        const auto sd = seed + 100 + static_cast<std::uint64_t>(rep);
        if (me == 0) src.fill([&](const auto& gi) { return value(gi, sd); });
        pt.start();
        pt.wait();
        if (me == 1) {
          EXPECT_EQ(mismatches(dst, sd), 0) << "iter " << iter << " repeat " << rep;
        }
      }
      if (me == 1) {
        EXPECT_NE(pt.plan(), nullptr);
      }
    }
  });
}

// The automatic strategy: parallel by default, centralized up to a raised threshold (the
// sender's plan then gathers on its task's first rank).
TEST(ArrayTransfer, AutomaticStrategyThreshold) {
  run([](cairn::world& w) {
    if (w.size() < 2) return;
    const int k = (w.size() + 1) / 2;
    cairn::tasks t(w, {k, w.size() - k});
    const std::array<std::int64_t, 2> shape{6, 5};
    cairn::layout<2> la(t.group(0), shape, {cairn::dist::block, cairn::dist::replicated});
    cairn::layout<2> lb(t.group(1), shape, {cairn::dist::replicated, cairn::dist::cyclic});
    for (const std::size_t threshold : {std::size_t{0}, std::size_t{1} << 20}) {
      const cairn::transfer_options o{.centralized_max_bytes = threshold};
      cairn::darray<double, 2> a(la), b(lb);
      if (t.task() == 0) a.fill([](const auto& gi) { return value(gi, 5); });
      cairn::persistent_transfer pt =
          t.task() == 0 ? t.send_init(a, 1, 11, o) : t.recv_init(b, 0, 11, o);
      pt.start();
      pt.wait();
      if (t.task() == 1) {
        EXPECT_EQ(mismatches(b, 5), 0) << "threshold " << threshold;
      } else {
        const std::vector<int> gather_root{t.group(0).members()[0]};
        if (threshold == 0) {
          EXPECT_EQ(pt.plan()->dst_members, t.group(1).members());
        } else {
          EXPECT_EQ(pt.plan()->dst_members, gather_root);
        }
      }
    }
  });
}

// A pending array send advances while its rank waits for something else entirely: here a plain
// receive of a message that the array's receivers send only after the array arrived.
TEST(ArrayTransfer, AdvancesWhileTheRankWaitsForOtherThings) {
  run([](cairn::world& w) {
    if (w.size() < 2) return;
    const int k = w.size() / 2;
    cairn::tasks t(w, {k, w.size() - k});
    const std::array<std::int64_t, 2> shape{37, 11};
    cairn::layout<2> la(t.group(0), shape, {cairn::dist::block, cairn::dist::replicated});
    cairn::layout<2> lb(t.group(1), shape, {cairn::dist::cyclic, cairn::dist::block});
    for (const bool direct : {false, true}) {
      const cairn::transfer_options o{.strategy = cairn::transfer_strategy::parallel,
                                      .direct = direct};
      if (t.task() == 0) {
        cairn::darray<double, 2> a(la);
        a.fill([&](const auto& gi) { return value(gi, 77); });
        auto s = t.isend(a, 1, 3, o);
        int token = 0;
        w.recv(&token, 1, k + t.group(0).rank() % (w.size() - k), 21);  // the array must move first
        EXPECT_EQ(token, 1);
        s.wait();
      } else {
        cairn::darray<double, 2> b(lb);
        t.recv(b, 0, 3, o);
        EXPECT_EQ(mismatches(b, 77), 0);
        for (int r = 0; r < k; ++r)
          if (k + r % (w.size() - k) == w.rank()) {
            const int one = 1;
            w.send(&one, 1, r, 21);
          }
      }
    }
  });
}

// A sender whose transfer is abandoned (an exception leaves the scope of its request) before
// its receiver copied straight from its memory: the receiver reports the withdrawal instead of
// copying from a local part that is gone (ASan reports a use-after-free without the offers of
// src/array/array_exec.hpp). Where the run moves array data through messages (MPI without
// cross-memory reads), nothing is read from the sender's memory and the test ends early.
TEST(ArrayTransfer, AnAbandonedSenderWithdrawsItsPart) {
  run([](cairn::world& w) {
    if (w.size() < 2) return;
    const std::array<std::int64_t, 1> shape{4096};  // one 32 KiB run: read straight on MPI too
    cairn::layout<1> from(w.group(std::vector<int>{0}), shape, {cairn::dist::block});
    cairn::layout<1> to(w.group(std::vector<int>{1}), shape, {cairn::dist::block});
    const cairn::transfer_options direct{.direct = true};
    auto transfer_checked = [&](std::uint64_t seed) {
      cairn::darray<double, 1> a(from), b(to);
      a.fill([&](const auto& gi) { return value(gi, seed); });
      cairn::transfer_steps steps;
      cairn::redistribute(a, b, {.direct = true, .steps = &steps});
      EXPECT_EQ(mismatches(b, seed), 0);
      return steps.straight_peers;
    };
    std::array<std::int64_t, 1> straight{transfer_checked(4)};  // rank 1 knows
    w.bcast(straight, 1);
    if (straight[0] == 0) return;
    const int go_tag = 31;
    if (w.rank() == 0) {
      try {
        cairn::darray<double, 1> a(from), b(to);
        a.fill([](const auto& gi) { return value(gi, 5); });
        auto r = cairn::iredistribute(a, b, direct);
        throw std::runtime_error("rank 0 gives up");
      } catch (const std::runtime_error&) {
      }
      const int go = 1;
      w.send(&go, 1, 1, go_tag);  // a is freed: now rank 1 may try to copy it
    } else if (w.rank() == 1) {
      int go = 0;
      w.recv(&go, 1, 0, go_tag);
      cairn::darray<double, 1> a(from), b(to);
      const std::string msg = cairn::test::message_of([&] { cairn::redistribute(a, b, direct); });
      EXPECT_TRUE(cairn::test::has_text(msg, "rank 0 withdrew its local part")) << msg;
    }
    transfer_checked(6);  // the next transfer between the same ranks is not disturbed
  });
}

// More straight copies outstanding from one rank than it has offer words (4096): the rest go
// without a word (unprotected), and every transfer still completes with the right elements.
TEST(ArrayTransfer, MoreOutstandingOffersThanOfferWords) {
  run([](cairn::world& w) {
    if (w.size() < 2 || w.rank() > 1) return;
    constexpr int transfers = 4200;
    const std::array<std::int64_t, 1> shape{16};
    cairn::layout<1> from(w.group(std::vector<int>{0}), shape, {cairn::dist::block});
    cairn::layout<1> to(w.group(std::vector<int>{1}), shape, {cairn::dist::block});
    std::vector<cairn::darray<double, 1>> src, dst;
    src.reserve(transfers);
    dst.reserve(transfers);
    for (int k = 0; k < transfers; ++k) {
      src.emplace_back(from);
      dst.emplace_back(to);
      src.back().fill(
          [&](const auto& gi) { return value(gi, 100 + static_cast<std::uint64_t>(k)); });
    }
    const int go_tag = 32;
    int go = 1;
    if (w.rank() == 1) w.recv(&go, 1, 0, go_tag);  // every offer of rank 0 is out first
    std::vector<cairn::array_request> reqs;
    for (int k = 0; k < transfers; ++k)
      reqs.push_back(
          cairn::iredistribute(src[static_cast<std::size_t>(k)], dst[static_cast<std::size_t>(k)]));
    if (w.rank() == 0) w.send(&go, 1, 1, go_tag);
    for (auto& r : reqs) r.wait();
    if (w.rank() != 1) return;
    for (int k = 0; k < transfers; ++k)
      ASSERT_EQ(mismatches(dst[static_cast<std::size_t>(k)], 100 + static_cast<std::uint64_t>(k)),
                0)
          << "transfer " << k;
  });
}

TEST(ArrayTransfer, TasksByColorAndCollectives) {
  run([](cairn::world& w) {
    const int tasks_wanted = std::min(3, w.size());
    cairn::tasks t = cairn::tasks::by_color(w, (w.rank() * 7) % tasks_wanted);
    ASSERT_EQ(t.count(), tasks_wanted);
    EXPECT_EQ(t.task_of(w.rank()), t.task());
    std::vector<long> v{t.task() == tasks_wanted - 1 ? 42L : -1L, 1L};
    t.bcast(v, tasks_wanted - 1);
    EXPECT_EQ(v[0], 42);
    std::vector<long> s{t.task() + 1L};
    t.allreduce(s, cairn::plus{});
    EXPECT_EQ(s[0], static_cast<long>(tasks_wanted) * (tasks_wanted + 1) / 2);
    std::vector<long> m{10L * (t.task() + 1), -1L};
    t.reduce(m, 0, cairn::max{});
    if (t.task() == 0) {
      EXPECT_EQ(m[0], 10L * tasks_wanted);
      EXPECT_EQ(m[1], -1L);
    }
    // Element-wise sum of one distributed array per task into task 0.
    cairn::layout<2> l(t.my_group(), {9, 5}, {cairn::dist::cyclic, cairn::dist::block});
    cairn::darray<double, 2> part(l);
    part.fill(
        [&](const auto& gi) { return static_cast<double>(gi[0] * 5 + gi[1] + 100 * t.task()); });
    cairn::darray<double, 2> result(
        cairn::layout<2>(t.group(0), {9, 5}, {cairn::dist::block, cairn::dist::replicated}));
    t.reduce(part, result, 0, cairn::plus{});
    if (t.task() == 0) {
      int bad = 0;
      result.for_each([&](const auto& gi, double& x) {
        double e = 0;
        for (int k = 0; k < tasks_wanted; ++k)
          e += static_cast<double>(gi[0] * 5 + gi[1] + 100 * k);
        bad += x != e;
      });
      EXPECT_EQ(bad, 0);
    }
  });
}

TEST(ArrayTransfer, BadInputIsAnError) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    using L = cairn::layout<2>;
    EXPECT_THROW(L(all, {4, 4}, {cairn::dist::block_cyclic(0), cairn::dist::block}), cairn::error);
    EXPECT_THROW(L(all, {4, 4}, {cairn::dist::block, cairn::dist::block}, {w.size() + 1, 1}),
                 cairn::error);
    EXPECT_THROW(L(all, {-1, 4}, {cairn::dist::block, cairn::dist::block}), cairn::error);
    cairn::darray<int, 2> a(L(all, {6, 4}, {cairn::dist::block, cairn::dist::block}));
    cairn::darray<int, 2> b(L(all, {6, 5}, {cairn::dist::block, cairn::dist::block}));
    try {
      cairn::redistribute(a, b);
      ADD_FAILURE() << "shape mismatch accepted";
    } catch (const cairn::error& e) {
      EXPECT_NE(std::string(e.what()).find("shape mismatch"), std::string::npos) << e.what();
    }
    EXPECT_THROW(cairn::redistribute(a, a), cairn::error);
    // Zero slabs: the error names the call, the rank and the value; nothing was sent, so the
    // next redistribution works.
    cairn::darray<int, 2> c(L(all, {6, 4}, {cairn::dist::cyclic, cairn::dist::block}));
    try {
      cairn::redistribute(a, c, {.chunks = 0});
      ADD_FAILURE() << "chunks = 0 accepted";
    } catch (const cairn::error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("iredistribute"), std::string::npos) << m;
      EXPECT_NE(m.find("rank " + std::to_string(w.rank())), std::string::npos) << m;
      EXPECT_NE(m.find("chunks = 0"), std::string::npos) << m;
    }
    a.fill([](const auto& gi) { return static_cast<int>(gi[0] * 4 + gi[1]); });
    cairn::redistribute(a, c, {.direct = false, .chunks = 2});
    {
      int bad = 0;
      c.for_each([&](const auto& gi, int& x) { bad += x != gi[0] * 4 + gi[1]; });
      EXPECT_EQ(bad, 0);
    }
    if (w.size() < 2) return;
    cairn::tasks t(w, {1, w.size() - 1});
    EXPECT_THROW(cairn::tasks(w, {1, w.size()}), cairn::error);
    cairn::darray<int, 2> mine(L(t.my_group(), {6, 4}, {cairn::dist::block, cairn::dist::block}));
    EXPECT_THROW(t.send(mine, 7), cairn::error);          // no such task
    EXPECT_THROW(t.send(mine, t.task()), cairn::error);   // own task
    EXPECT_THROW(t.send(a, 1 - t.task()), cairn::error);  // array not over this task
    try {
      auto pt = t.task() == 0 ? t.send_init(mine, 1, 3, {.chunks = -2})
                              : t.recv_init(mine, 0, 3, {.chunks = 0});
      ADD_FAILURE() << "bad chunks accepted";
    } catch (const cairn::error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(t.task() == 0 ? "send_init" : "recv_init"), std::string::npos) << m;
      EXPECT_NE(m.find(t.task() == 0 ? "chunks = -2" : "chunks = 0"), std::string::npos) << m;
    }
    // Receive into an array of another shape: both sides fail after the descriptor exchange,
    // before any data moves.
    cairn::darray<int, 2> other(L(t.my_group(), {6, 3}, {cairn::dist::block, cairn::dist::block}));
    try {
      if (t.task() == 0) {
        t.send(mine, 1, 3);
      } else {
        t.recv(other, 0, 3);
      }
      ADD_FAILURE() << "shape mismatch between tasks accepted";
    } catch (const cairn::error& e) {
      EXPECT_NE(std::string(e.what()).find("shape mismatch"), std::string::npos) << e.what();
    }
    // Element types of different sizes: both sides fail the same way.
    cairn::darray<double, 2> wide(
        L(t.my_group(), {6, 4}, {cairn::dist::block, cairn::dist::block}));
    try {
      if (t.task() == 0) {
        t.send(mine, 1, 6);
      } else {
        t.recv(wide, 0, 6);
      }
      ADD_FAILURE() << "element size mismatch between tasks accepted";
    } catch (const cairn::error& e) {
      EXPECT_NE(std::string(e.what()).find("element size mismatch"), std::string::npos) << e.what();
    }
    // The tasks still work afterwards.
    cairn::darray<int, 2> ok(L(t.my_group(), {6, 4}, {cairn::dist::cyclic, cairn::dist::block}));
    ok.fill([](const auto& gi) { return static_cast<int>(gi[0] * 4 + gi[1]); });
    if (t.task() == 0) {
      t.send(ok, 1, 4);
    } else {
      t.recv(mine, 0, 4);
    }
    if (t.task() == 1) {
      int bad = 0;
      mine.for_each([&](const auto& gi, int& x) { bad += x != gi[0] * 4 + gi[1]; });
      EXPECT_EQ(bad, 0);
    }
  });
}

TEST(ArrayTransfer, LayoutQueries) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    cairn::layout<2> l(all, {10, 7}, {cairn::dist::block_cyclic(3), cairn::dist::cyclic});
    std::int64_t total = 0;
    for (int r = 0; r < w.size(); ++r) {
      const auto s = l.local_shape(r);
      total += s[0] * s[1];
    }
    EXPECT_EQ(total, 70);
    for (std::int64_t i = 0; i < 10; ++i)
      for (std::int64_t j = 0; j < 7; ++j) {
        const int o = l.owner({i, j});
        EXPECT_TRUE(l.holds(o, {i, j}));
        EXPECT_EQ(l.to_global(l.to_local({i, j}), o), (std::array<std::int64_t, 2>{i, j}));
      }
    std::ostringstream os;
    os << l;
    EXPECT_NE(os.str().find("[10 x 7] (block_cyclic(3), cyclic)"), std::string::npos) << os.str();
  });
}

}  // namespace
