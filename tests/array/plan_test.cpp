// Planning only (no communication): every rank's plan, for random layouts over random groups,
// checked against a brute-force element-by-element reference — every (element, destination
// replica) moved exactly once, from the agreed source, to the right place; senders' and
// receivers' views of each pair agree run by run. Also the plan of the `plan` benchmark.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "cairn/array/plan.hpp"
#include "cairn/runtime/error.hpp"

namespace {

using cairn::dim_dist;
using cairn::detail::layout_desc;
using cairn::detail::max_dims;
using idx = std::vector<std::int64_t>;

dim_dist random_dist(std::mt19937_64& g) {
  switch (g() % 4) {
    case 0: return cairn::dist::block;
    case 1: return cairn::dist::cyclic;
    case 2: return cairn::dist::block_cyclic(1 + static_cast<std::int64_t>(g() % 5));
    default: return cairn::dist::replicated;
  }
}

// A random grid of p positions over n dimensions (or the default one).
std::vector<int> random_grid(std::mt19937_64& g, int p, int n) {
  std::vector<int> grid(static_cast<std::size_t>(n), 1);
  if (g() % 3 == 0) return std::vector<int>(static_cast<std::size_t>(n), 0);
  for (int f = 2; p > 1;) {
    if (p % f == 0) {
      grid[g() % static_cast<std::size_t>(n)] *= f;
      p /= f;
    } else {
      ++f;
    }
  }
  return grid;
}

layout_desc random_layout(std::mt19937_64& g, const idx& shape, int p) {
  const int n = static_cast<int>(shape.size());
  std::vector<dim_dist> d;
  for (int i = 0; i < n; ++i) d.push_back(random_dist(g));
  const auto grid = random_grid(g, p, n);
  return cairn::detail::make_layout_desc("test", 0, p, n, shape.data(), d.data(), grid.data());
}

std::vector<int> coords(const layout_desc& l, int r) {
  std::vector<int> c(max_dims);
  l.coords_of(r, c.data());
  return c;
}

// Global index of local offset `off` on group rank r.
idx global_of(const layout_desc& l, int r, std::int64_t off) {
  const auto c = coords(l, r);
  idx gi(static_cast<std::size_t>(l.ndim));
  for (int d = l.ndim - 1; d >= 0; --d) {
    const auto& m = l.dims[static_cast<std::size_t>(d)];
    const std::int64_t e = m.extent(c[static_cast<std::size_t>(d)]);
    gi[static_cast<std::size_t>(d)] = m.global(off % e, c[static_cast<std::size_t>(d)]);
    off /= e;
  }
  return gi;
}

// The specified source of element gi for destination group rank q: the owner in every
// distributed dimension, coordinate (destination coordinate mod g) in replicated ones.
int source_of(const layout_desc& s, const layout_desc& d, int q, const idx& gi) {
  const auto cd = coords(d, q);
  int r = 0;
  for (std::size_t k = 0; k < static_cast<std::size_t>(s.ndim); ++k) {
    const auto& m = s.dims[k];
    const int c = m.rep ? cd[k] % m.g : m.owner(gi[k]);
    r = r * m.g + c;
  }
  return r;
}

bool holds(const layout_desc& l, int r, const idx& gi) {
  const auto c = coords(l, r);
  for (std::size_t k = 0; k < static_cast<std::size_t>(l.ndim); ++k)
    if (!l.dims[k].rep && l.dims[k].owner(gi[k]) != c[k]) return false;
  return true;
}

void check_case(const layout_desc& s, const std::vector<int>& sm, const layout_desc& d,
                const std::vector<int>& dm, const std::string& what) {
  std::vector<int> world = sm;
  world.insert(world.end(), dm.begin(), dm.end());
  std::sort(world.begin(), world.end());
  world.erase(std::unique(world.begin(), world.end()), world.end());
  std::map<int, std::shared_ptr<const cairn::redistribution_plan>> plans;
  for (int w : world) plans[w] = cairn::detail::compute_plan("test", w, 8, s, sm, d, dm);

  // moved[(linear element, destination world rank)] = times
  std::map<std::pair<std::int64_t, int>, int> moved;
  auto linear = [&](const idx& gi) {
    std::int64_t x = 0;
    for (std::size_t k = 0; k < gi.size(); ++k) x = x * s.dims[k].n + gi[k];
    return x;
  };
  for (int w : world) {
    const auto& p = *plans[w];
    const int rs = static_cast<int>(std::find(sm.begin(), sm.end(), w) - sm.begin());
    for (const auto& pe : p.sends) {
      const int q = static_cast<int>(std::find(dm.begin(), dm.end(), pe.world_rank) - dm.begin());
      std::vector<std::array<std::int64_t, 3>> runs;
      std::int64_t count = 0;
      p.for_each_run(pe, [&](std::int64_t so, std::int64_t to, std::int64_t len) {
        runs.push_back({so, to, len});
        for (std::int64_t i = 0; i < len; ++i) {
          const idx a = global_of(s, rs, so + i), b = global_of(d, q, to + i);
          ASSERT_EQ(a, b) << what;
          ASSERT_EQ(source_of(s, d, q, a), rs) << what;
          ++moved[{linear(a), pe.world_rank}];
          ++count;
        }
      });
      ASSERT_EQ(count, pe.elements) << what;
      if (pe.src_contiguous) {
        for (std::size_t i = 1; i < runs.size(); ++i)
          ASSERT_EQ(runs[i][0], runs[i - 1][0] + runs[i - 1][2]) << what;
      }
      if (pe.dst_contiguous) {
        for (std::size_t i = 1; i < runs.size(); ++i)
          ASSERT_EQ(runs[i][1], runs[i - 1][1] + runs[i - 1][2]) << what;
      }
      // The receiver's plan has the same runs for this pair (self copies live in sends only).
      if (pe.world_rank != w) {
        const auto& rp = *plans[pe.world_rank];
        auto it = std::find_if(rp.recvs.begin(), rp.recvs.end(),
                               [&](const auto& x) { return x.world_rank == w; });
        ASSERT_NE(it, rp.recvs.end()) << what;
        std::vector<std::array<std::int64_t, 3>> rruns;
        rp.for_each_run(*it, [&](std::int64_t a, std::int64_t b, std::int64_t c) {
          rruns.push_back({a, b, c});
        });
        ASSERT_EQ(runs, rruns) << what;
      }
    }
    for (const auto& pe : p.recvs) {
      const auto& sp = *plans[pe.world_rank];
      ASSERT_TRUE(std::any_of(sp.sends.begin(), sp.sends.end(), [&](const auto& x) {
        return x.world_rank == w;
      })) << what;
    }
  }
  // Every element reaches every destination replica exactly once.
  std::int64_t total = 1;
  for (int k = 0; k < s.ndim; ++k) total *= s.dims[static_cast<std::size_t>(k)].n;
  std::int64_t expected = 0;
  for (std::int64_t x = 0; x < total; ++x) {
    idx gi(static_cast<std::size_t>(s.ndim));
    std::int64_t y = x;
    for (int k = s.ndim - 1; k >= 0; --k) {
      gi[static_cast<std::size_t>(k)] = y % s.dims[static_cast<std::size_t>(k)].n;
      y /= s.dims[static_cast<std::size_t>(k)].n;
    }
    for (std::size_t q = 0; q < dm.size(); ++q) {
      if (!holds(d, static_cast<int>(q), gi)) continue;
      ++expected;
      auto it = moved.find({x, dm[q]});
      ASSERT_TRUE(it != moved.end() && it->second == 1)
          << what << " element " << x << " to rank " << dm[q];
    }
  }
  std::int64_t got = 0;
  for (auto& [k, v] : moved) got += v;
  ASSERT_EQ(got, expected) << what;
}

TEST(ArrayPlan, MatchesBruteForceReference) {
  std::mt19937_64 g(12345);
  for (int iter = 0; iter < 400; ++iter) {
    const int n = 1 + static_cast<int>(g() % 4);
    idx shape;
    const std::int64_t cap = n == 1 ? 40 : n == 2 ? 14 : n == 3 ? 7 : 5;
    for (int k = 0; k < n; ++k)
      shape.push_back(static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(cap + 1)));
    const int world = 1 + static_cast<int>(g() % 8);
    std::vector<int> all(static_cast<std::size_t>(world));
    for (int i = 0; i < world; ++i) all[static_cast<std::size_t>(i)] = i;
    std::shuffle(all.begin(), all.end(), g);
    const int ps = 1 + static_cast<int>(g() % static_cast<std::uint64_t>(world));
    const int pd = 1 + static_cast<int>(g() % static_cast<std::uint64_t>(world));
    std::vector<int> sm(all.begin(), all.begin() + ps);
    std::shuffle(all.begin(), all.end(), g);
    std::vector<int> dm(all.begin(), all.begin() + pd);
    const layout_desc s = random_layout(g, shape, ps), d = random_layout(g, shape, pd);
    std::ostringstream what;
    what << "case " << iter << ": " << s << " on " << ps << " -> " << d << " on " << pd;
    check_case(s, sm, d, dm, what.str());
    if (HasFatalFailure()) return;
  }
}

TEST(ArrayPlan, SweepIsPerPeriod) {
  // block_cyclic(3) over 4 -> block_cyclic(5) over 4 on 4096: period lcm(12, 20) = 60.
  const std::int64_t shape[1] = {4096};
  const dim_dist a[1] = {cairn::dist::block_cyclic(3)}, b[1] = {cairn::dist::block_cyclic(5)};
  const int grid[1] = {4};
  const auto s = cairn::detail::make_layout_desc("t", 0, 4, 1, shape, a, grid);
  const auto d = cairn::detail::make_layout_desc("t", 0, 4, 1, shape, b, grid);
  const auto dp = cairn::detail::sweep_dimension(s.dims[0], d.dims[0]);
  std::int64_t total = 0;
  for (const auto& r : dp.runs) total += r.len;
  EXPECT_EQ(total, 4096);
  EXPECT_LE(dp.runs.size(), static_cast<std::size_t>(4096 / 3 + 4096 / 5 + 2));
}

TEST(ArrayPlan, PrintsPeers) {
  const std::int64_t shape[2] = {8, 8};
  const dim_dist a[2] = {cairn::dist::block, cairn::dist::replicated};
  const dim_dist b[2] = {cairn::dist::replicated, cairn::dist::block};
  const int g4[2] = {4, 1}, g2[2] = {1, 2};
  const auto s = cairn::detail::make_layout_desc("t", 0, 4, 2, shape, a, g4);
  const auto d = cairn::detail::make_layout_desc("t", 0, 2, 2, shape, b, g2);
  const auto p = cairn::detail::compute_plan("t", 1, 4, s, {0, 1, 2, 3}, d, {4, 5});
  std::ostringstream os;
  os << *p;
  EXPECT_NE(os.str().find("sends: 2 peers"), std::string::npos) << os.str();
  EXPECT_NE(
      os.str().find("rank 4: 8 elements, 32 bytes, 2 runs, source strided, destination contiguous"),
      std::string::npos)
      << os.str();
}

TEST(ArrayPlan, BadLayoutsAreErrors) {
  const std::int64_t shape[2] = {8, 8};
  const dim_dist ok[2] = {cairn::dist::block, cairn::dist::block};
  const dim_dist zero[2] = {cairn::dist::block_cyclic(0), cairn::dist::block};
  const int g22[2] = {2, 2}, g23[2] = {2, 3};
  EXPECT_THROW(cairn::detail::make_layout_desc("layout", 0, 4, 2, shape, zero, g22), cairn::error);
  EXPECT_THROW(cairn::detail::make_layout_desc("layout", 0, 4, 2, shape, ok, g23), cairn::error);
  const std::int64_t neg[2] = {8, -1};
  EXPECT_THROW(cairn::detail::make_layout_desc("layout", 0, 4, 2, neg, ok, g22), cairn::error);
  const auto s = cairn::detail::make_layout_desc("t", 0, 4, 2, shape, ok, g22);
  const std::int64_t other[2] = {8, 9};
  const auto d = cairn::detail::make_layout_desc("t", 0, 4, 2, other, ok, g22);
  try {
    (void)cairn::detail::compute_plan("redistribute", 3, 8, s, {0, 1, 2, 3}, d, {0, 1, 2, 3});
    FAIL() << "no error";
  } catch (const cairn::error& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "cairn::redistribute: rank 3: shape mismatch: source [8 x 8], destination [8 x 9]"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
