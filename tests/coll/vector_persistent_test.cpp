// The v-collectives (per-rank counts and displacements), persistent collectives, the algorithm
// selection (per call, CAIRN_COLL) and count mismatches, on both engines, on the world and on a
// shuffled group, against sequential references on seeded random data.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>

#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::mat2;
using cairn::test::message_of;
using cairn::test::mismatch;
using cairn::test::mul;
using cairn::test::on_world_and_group;

namespace {

// Element i of the block world rank `from` contributes for world rank `to` (small: sums exact).
std::int64_t datum(unsigned seed, int from, int to, std::size_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull +
                    static_cast<std::uint64_t>(from) * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(to) * 0x94D049BB133111EBull + i;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::int64_t>((x ^ (x >> 31)) % 1000000);
}
std::vector<std::int64_t> block(std::size_t n, unsigned seed, int from, int to) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = datum(seed, from, to, i);
  return v;
}

// The count group rank r sends to group rank d in test case `seed` (some zero), at most `top`.
std::size_t count_of(unsigned seed, int r, int d, std::size_t top) {
  if (top == 0) return 0;
  const auto h = static_cast<std::uint64_t>(datum(seed + 99, r, d, 0));
  return h % 5 == 0 ? 0 : 1 + h % top;
}

// Largest count per block for p ranks: p x p blocks in flight on the all-to-all ones.
std::size_t top_for(int p, std::size_t top) {
  return std::min<std::size_t>(top, 2000000 / static_cast<std::size_t>(p * p));
}

// Persistent collectives keep their buffers: temporaries are rejected at compile time, views
// and lvalues accepted.
template <class C>
concept init_takes_temporaries = requires(C& c, std::vector<int>& v) {
  c.allreduce_init(std::vector<int>(3), v);
};
template <class C>
concept init_takes_views = requires(C& c, std::vector<int>& v) {
  c.allreduce_init(std::span<const int>(v), std::span(v));
};
static_assert(!init_takes_temporaries<cairn::world> && !init_takes_temporaries<cairn::group>);
static_assert(init_takes_views<cairn::world> && init_takes_views<cairn::group>);

}  // namespace

TEST(VectorCollectives, GathervScattervAllgatherv) {
  cairn::test::run([](cairn::world& w) {
    on_world_and_group(
        w, static_cast<unsigned>(w.size() + 5), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
          for (std::size_t top : {0, 1, 7, 1000, 100000}) {
            top = top_for(p, top);
            const unsigned seed = static_cast<unsigned>(top * 3 + mem.size());
            std::vector<std::size_t> counts(static_cast<std::size_t>(p)), displs(counts.size());
            std::size_t at = 0;
            for (int r = p - 1; r >= 0; --r) {  // reverse order with a gap of one element
              counts[static_cast<std::size_t>(r)] = count_of(seed, r, 0, top);
              displs[static_cast<std::size_t>(r)] = at;
              at += counts[static_cast<std::size_t>(r)] + 1;
            }
            const std::size_t mine = counts[static_cast<std::size_t>(me)];
            std::vector<std::int64_t> expect(at, -1);  // every member's block at its displacement
            for (int r = 0; r < p; ++r) {
              const auto b = block(counts[static_cast<std::size_t>(r)], seed,
                                   mem[static_cast<std::size_t>(r)], 0);
              std::copy(b.begin(), b.end(),
                        expect.begin() +
                            static_cast<std::ptrdiff_t>(displs[static_cast<std::size_t>(r)]));
            }
            const auto in = block(mine, seed, wme, 0);
            for (int root : {0, p - 1}) {
              // gatherv with displacements; then packed (only the root's counts matter).
              std::vector<std::int64_t> out(me == root ? at : 0, -1);
              if (top % 2) {
                c.gatherv(in, out, counts, displs, root);
              } else {
                c.igatherv(in, out, counts, displs, root).wait();
              }
              if (me == root) {
                ASSERT_EQ(mismatch(out, expect), "") << "gatherv top=" << top << " p=" << p;
              }
              std::vector<std::int64_t> packed(me == root ? at - static_cast<std::size_t>(p) : 0,
                                               -1);
              c.gatherv(in, packed,
                        me == root ? std::span<const std::size_t>(counts)
                                   : std::span<const std::size_t>{},
                        root);
              if (me == root) {
                std::vector<std::int64_t> want;
                for (int r = 0; r < p; ++r) {
                  const auto b = block(counts[static_cast<std::size_t>(r)], seed,
                                       mem[static_cast<std::size_t>(r)], 0);
                  want.insert(want.end(), b.begin(), b.end());
                }
                ASSERT_EQ(mismatch(packed, want), "") << "packed gatherv top=" << top << " p=" << p;
              }
              // scatterv: the root's `expect` layout, member r gets its block.
              std::vector<std::int64_t> got(mine, -1);
              const std::vector<std::int64_t> none;
              if (top % 2) {
                c.iscatterv(me == root ? expect : none, got, counts, displs, root).wait();
              } else {
                c.scatterv(me == root ? expect : none, got, counts, displs, root);
              }
              ASSERT_EQ(mismatch(got, in), "") << "scatterv top=" << top << " p=" << p;
            }
            // allgatherv: everybody gets `expect` (the gaps stay -1).
            std::vector<std::int64_t> all(at, -1);
            if (top % 2) {
              c.allgatherv(in, all, counts, displs);
            } else {
              c.iallgatherv(in, all, counts, displs).wait();
            }
            ASSERT_EQ(mismatch(all, expect), "") << "allgatherv top=" << top << " p=" << p;
          }
        });
  });
}

TEST(VectorCollectives, AlltoallvAndReduceScatter) {
  cairn::test::run([](cairn::world& w) {
    on_world_and_group(
        w, static_cast<unsigned>(w.size() + 5), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
          const auto P = static_cast<std::size_t>(p);
          for (std::size_t top : {0, 1, 7, 1000, 100000}) {
            top = top_for(p, top);
            const unsigned seed = static_cast<unsigned>(top * 7 + mem.size());
            // alltoallv: packed input, output with displacements in reverse order.
            std::vector<std::size_t> sc(P), rc(P), rd(P);
            std::vector<std::int64_t> in, expect;
            for (int d = 0; d < p; ++d) {
              sc[static_cast<std::size_t>(d)] = count_of(seed, me, d, top);
              const auto b = block(sc[static_cast<std::size_t>(d)], seed, wme,
                                   mem[static_cast<std::size_t>(d)]);
              in.insert(in.end(), b.begin(), b.end());
            }
            std::size_t at = 0;
            for (int r = p - 1; r >= 0; --r) {
              rc[static_cast<std::size_t>(r)] = count_of(seed, r, me, top);
              rd[static_cast<std::size_t>(r)] = at;
              at += rc[static_cast<std::size_t>(r)];
            }
            expect.assign(at, 0);
            for (int r = 0; r < p; ++r) {
              const auto b = block(rc[static_cast<std::size_t>(r)], seed,
                                   mem[static_cast<std::size_t>(r)], wme);
              std::copy(
                  b.begin(), b.end(),
                  expect.begin() + static_cast<std::ptrdiff_t>(rd[static_cast<std::size_t>(r)]));
            }
            std::vector<std::int64_t> out(at, -1);
            if (top % 2) {
              c.alltoallv(in, sc, {}, out, rc, rd);
            } else {
              c.ialltoallv(in, sc, {}, out, rc, rd).wait();
            }
            ASSERT_EQ(mismatch(out, expect), "") << "alltoallv top=" << top << " p=" << p;
            // reduce_scatter: the counts of rank 0's row, the same everywhere.
            std::vector<std::size_t> counts(P);
            for (int d = 0; d < p; ++d)
              counts[static_cast<std::size_t>(d)] = count_of(seed + 1, 0, d, top);
            std::vector<std::int64_t> rin, sum(counts[static_cast<std::size_t>(me)], 0);
            for (int d = 0; d < p; ++d) {
              const auto b = block(counts[static_cast<std::size_t>(d)], seed + 2, wme,
                                   mem[static_cast<std::size_t>(d)]);
              rin.insert(rin.end(), b.begin(), b.end());
            }
            for (int r = 0; r < p; ++r) {
              const auto b = block(sum.size(), seed + 2, mem[static_cast<std::size_t>(r)], wme);
              for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += b[i];
            }
            std::vector<std::int64_t> rout(sum.size() + 1,
                                           -1);  // one spare element stays untouched
            if (top % 2) {
              c.ireduce_scatter(rin, rout, counts, cairn::plus{}).wait();
            } else {
              c.reduce_scatter(rin, rout, counts);
            }
            ASSERT_EQ(rout.back(), -1);
            rout.pop_back();
            ASSERT_EQ(mismatch(rout, sum), "") << "reduce_scatter top=" << top << " p=" << p;
            // Non-commutative: matrix products in rank order (small counts).
            std::vector<std::size_t> mc(P);
            for (int d = 0; d < p; ++d)
              mc[static_cast<std::size_t>(d)] =
                  count_of(seed + 3, 0, d, std::min<std::size_t>(top, 9));
            std::vector<mat2> mine_in;
            for (int d = 0; d < p; ++d)
              for (std::size_t i = 0; i < mc[static_cast<std::size_t>(d)]; ++i) {
                const auto v = static_cast<std::uint64_t>(
                    datum(seed + 4, wme, mem[static_cast<std::size_t>(d)], i));
                mine_in.push_back(
                    mat2{static_cast<std::uint32_t>(v), static_cast<std::uint32_t>(v >> 7), 3, 1});
              }
            std::vector<mat2> prod(mc[static_cast<std::size_t>(me)], mat2{1, 0, 0, 1}),
                mout(prod.size());
            for (int r = 0; r < p; ++r)
              for (std::size_t i = 0; i < prod.size(); ++i) {
                const auto v = static_cast<std::uint64_t>(
                    datum(seed + 4, mem[static_cast<std::size_t>(r)], wme, i));
                prod[i] = mul(prod[i], mat2{static_cast<std::uint32_t>(v),
                                            static_cast<std::uint32_t>(v >> 7), 3, 1});
              }
            c.reduce_scatter(
                mine_in, mout, mc,
                cairn::op([](const mat2& x, const mat2& y) { return mul(x, y); }, false));
            ASSERT_TRUE(mout == prod) << "reduce_scatter product top=" << top << " p=" << p;
          }
        });
  });
}

// Persistent collectives: planned once, started several times with new input in the same
// buffers, interleaved with non-persistent collectives on the same group.
TEST(PersistentCollectives, StartManyTimes) {
  cairn::test::run([](cairn::world& w) {
    on_world_and_group(
        w, static_cast<unsigned>(w.size() + 5), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
          const auto P = static_cast<std::size_t>(p);
          const std::size_t n = 7;
          std::vector<std::int64_t> in(n), sum(n), bc(n), gat(P * n), ag(P * n), a2a_in(P * n),
              a2a(P * n), sc(n);
          std::vector<std::int64_t> rsb_in(P * n), rsb(n), red(n), scan(n), agv(P * n);
          std::vector<std::size_t> counts(P, n);
          auto ar = c.allreduce_init(in, sum, cairn::plus{});
          auto ar_ring =
              c.allreduce_init(in, sum, cairn::plus{}, cairn::allreduce_algorithm::rabenseifner);
          auto bar = c.barrier_init();
          auto b = c.bcast_init(bc, p - 1);
          auto g = c.gather_init(in, gat, 0);
          auto s = c.scatter_init(gat, sc, 0);
          auto a = c.allgather_init(in, ag);
          auto t = c.alltoall_init(a2a_in, a2a);
          auto r = c.reduce_scatter_block_init(rsb_in, rsb);
          auto rd = c.reduce_init(in, red, 0);
          auto sn = c.scan_init(in, scan);
          auto v = c.allgatherv_init(in, agv, counts, {});
          EXPECT_EQ(ar.plan().group_size, p);
          for (unsigned it = 0; it < 5; ++it) {
            const unsigned seed = it * 17 + static_cast<unsigned>(P);
            // New input in the bound buffers (copied in: assigning a new vector would move the
            // storage).
            const auto fresh = block(n, seed, wme, 0);
            std::copy(fresh.begin(), fresh.end(), in.begin());
            for (int d = 0; d < p; ++d) {
              const auto x = block(n, seed, wme, mem[static_cast<std::size_t>(d)]);
              std::copy(
                  x.begin(), x.end(),
                  a2a_in.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(d) * n));
              std::copy(
                  x.begin(), x.end(),
                  rsb_in.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(d) * n));
            }
            if (me == p - 1) {
              const auto x = block(n, seed + 1, wme, 0);
              std::copy(x.begin(), x.end(), bc.begin());
            }
            ar.start();
            EXPECT_THROW(ar.start(), cairn::error);  // still active: refused, nothing sent
            bar.start();
            b.start();
            a.start();
            t.start();
            r.start();
            rd.start();
            sn.start();
            v.start();
            c.barrier();  // a non-persistent collective in between
            ar.wait();
            std::vector<std::int64_t> want(n, 0), prefix(n, 0), rs(n, 0);
            for (int q = 0; q < p; ++q) {
              const auto x = block(n, seed, mem[static_cast<std::size_t>(q)], 0);
              for (std::size_t i = 0; i < n; ++i) want[i] += x[i];
              if (q <= me)
                for (std::size_t i = 0; i < n; ++i) prefix[i] += x[i];
              const auto y = block(n, seed, mem[static_cast<std::size_t>(q)], wme);
              for (std::size_t i = 0; i < n; ++i) rs[i] += y[i];
            }
            ASSERT_EQ(mismatch(sum, want), "") << "allreduce, start " << it;
            ar_ring.start();
            ar_ring.wait();
            ASSERT_EQ(mismatch(sum, want), "") << "rabenseifner allreduce, start " << it;
            while (!bar.test()) {
            }
            b.wait();
            ASSERT_EQ(mismatch(bc, block(n, seed + 1, mem[P - 1], 0)), "") << "bcast, start " << it;
            a.wait();
            v.wait();
            std::vector<std::int64_t> all;
            for (int q = 0; q < p; ++q) {
              const auto x = block(n, seed, mem[static_cast<std::size_t>(q)], 0);
              all.insert(all.end(), x.begin(), x.end());
            }
            ASSERT_EQ(mismatch(ag, all), "") << "allgather, start " << it;
            ASSERT_EQ(mismatch(agv, all), "") << "allgatherv, start " << it;
            g.start();
            g.wait();
            if (me == 0) {
              ASSERT_EQ(mismatch(gat, all), "") << "gather, start " << it;
            }
            s.start();
            s.wait();
            ASSERT_EQ(mismatch(sc, block(n, seed, wme, 0)), "") << "scatter, start " << it;
            t.wait();
            std::vector<std::int64_t> from;
            for (int q = 0; q < p; ++q) {
              const auto x = block(n, seed, mem[static_cast<std::size_t>(q)], wme);
              from.insert(from.end(), x.begin(), x.end());
            }
            ASSERT_EQ(mismatch(a2a, from), "") << "alltoall, start " << it;
            r.wait();
            ASSERT_EQ(mismatch(rsb, rs), "") << "reduce_scatter_block, start " << it;
            rd.wait();
            if (me == 0) {
              ASSERT_EQ(mismatch(red, want), "") << "reduce, start " << it;
            }
            sn.wait();
            ASSERT_EQ(mismatch(scan, prefix), "") << "scan, start " << it;
          }
        });
  });
}

// Every persistent form once (v-collectives, exscan, in-place allreduce, forced algorithms),
// started twice, against the non-persistent result.
TEST(PersistentCollectives, EveryForm) {
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const auto P = static_cast<std::size_t>(p);
    std::vector<std::size_t> counts(P), none;
    for (std::size_t r = 0; r < P; ++r) counts[r] = r % 3;
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    const std::size_t mine = counts[static_cast<std::size_t>(me)];
    std::vector<std::int64_t> in(mine, me + 1), gat(me == 0 ? total : 0), sc(mine), packed(total),
        rs_in(total, me + 1), rs(mine), a2a_in(P, me), a2a(P), ex(4, -1), ex_in(4, 2), inout(5, 1);
    for (std::size_t r = 0, at = 0; r < P; at += counts[r], ++r)
      for (std::size_t i = 0; i < counts[r]; ++i) packed[at + i] = static_cast<std::int64_t>(r) + 1;
    std::vector<std::size_t> ones(P, 1);
    std::vector<cairn::persistent_request> all;
    all.push_back(
        w.gatherv_init(in, gat, me == 0 ? std::span<const std::size_t>(counts) : none, {}, 0));
    const std::vector<std::int64_t> nothing;  // (a named buffer: persistent calls keep pointers)
    all.push_back(w.scatterv_init(me == 0 ? packed : nothing, sc,
                                  me == 0 ? std::span<const std::size_t>(counts) : none, {}, 0));
    all.push_back(w.alltoallv_init(a2a_in, ones, {}, a2a, ones, {}));
    all.push_back(w.reduce_scatter_init(rs_in, rs, counts, cairn::plus{}));
    all.push_back(w.exscan_init(ex_in, ex, cairn::plus{}));
    all.push_back(w.allreduce_init(inout, cairn::plus{}, cairn::allreduce_algorithm::ring));
    for (int round = 0; round < 2; ++round) {
      std::fill(inout.begin(), inout.end(), 1);
      for (auto& r : all) r.start();
      for (auto& r : all) r.wait();
      if (me == 0) {
        ASSERT_EQ(mismatch(gat, packed), "") << "gatherv_init";
      }
      ASSERT_EQ(mismatch(sc, std::vector<std::int64_t>(mine, me + 1)), "") << "scatterv_init";
      for (int q = 0; q < p; ++q)
        ASSERT_EQ(a2a[static_cast<std::size_t>(q)], q) << "alltoallv_init";
      ASSERT_EQ(
          mismatch(rs, std::vector<std::int64_t>(mine, static_cast<std::int64_t>(p) * (p + 1) / 2)),
          "")
          << "reduce_scatter_init";
      ASSERT_EQ(mismatch(ex, me == 0 ? std::vector<std::int64_t>(4, -1)
                                     : std::vector<std::int64_t>(4, 2 * me)),
                "")
          << "exscan_init";
      ASSERT_EQ(mismatch(inout, std::vector<std::int64_t>(5, p)), "") << "in-place allreduce_init";
    }
    std::ostringstream os;
    os << all[0].plan();
    EXPECT_TRUE(has_text(os.str(), "gatherv/linear")) << os.str();
  });
}

// The v-collectives' plan cache: the same counts and displacements (in other vectors: compared
// by value) give the same plan object, a cache hit, shown through the persistent form, whose plan
// is the cached one; other counts or displacements give another plan. Init plans without
// communicating, so the handles need not be started.
TEST(VectorCollectives, PlanCacheHits) {
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const auto P = static_cast<std::size_t>(p);
    const std::vector<std::size_t> counts(P, 2), same(P, 2), more(P, 3), displs = [&] {
      std::vector<std::size_t> d(P);
      for (std::size_t r = 0; r < P; ++r) d[r] = 3 * r;
      return d;
    }();
    std::vector<std::int64_t> in(2), in3(3), out(3 * P), big(3 * P);
    auto same_plan = [](const cairn::persistent_request& a, const cairn::persistent_request& b) {
      return &a.plan() == &b.plan();
    };
    {
      auto a = w.allgatherv_init(in, out, counts), b = w.allgatherv_init(in, out, same);
      auto c = w.allgatherv_init(in3, out, more), d = w.allgatherv_init(in, out, counts, displs);
      EXPECT_TRUE(same_plan(a, b));
      EXPECT_FALSE(same_plan(a, c));
      EXPECT_FALSE(same_plan(a, d));
    }
    {
      auto a = w.gatherv_init(in, out, counts, {}, 0), b = w.gatherv_init(in, out, same, {}, 0);
      auto c = w.gatherv_init(in3, out, more, {}, 0);
      EXPECT_TRUE(same_plan(a, b));
      EXPECT_FALSE(same_plan(a, c));
      auto s = w.scatterv_init(big, in, counts, {}, 0), t = w.scatterv_init(big, in, same, {}, 0);
      EXPECT_TRUE(same_plan(s, t));
    }
    {
      auto a = w.alltoallv_init(out, counts, {}, big, counts, {}),
           b = w.alltoallv_init(out, same, {}, big, same, {});
      auto c = w.alltoallv_init(out, counts, displs, big, counts, {});
      EXPECT_TRUE(same_plan(a, b));
      EXPECT_FALSE(same_plan(a, c));
      auto r = w.reduce_scatter_init(out, in, counts, cairn::plus{}),
           q = w.reduce_scatter_init(out, in, same, cairn::plus{});
      auto m = w.reduce_scatter_init(big, in3, more, cairn::plus{});
      EXPECT_TRUE(same_plan(r, q));
      EXPECT_FALSE(same_plan(r, m));
    }
    // A repeated call with the same counts (cache hits) still gives the right result.
    for (int k = 0; k < 3; ++k) {
      std::fill(in.begin(), in.end(), me + k);
      std::vector<std::int64_t> all(2 * P);
      w.allgatherv(in, all, counts);
      for (std::size_t r = 0; r < P; ++r)
        ASSERT_EQ(all[2 * r], static_cast<std::int64_t>(r) + k) << "call " << k;
    }
  });
}

TEST(Selection, ParsesAndRejects) {
  const auto rules = cairn::coll::parse_selection(
      "allreduce=ring@1048576-, "
      "alltoall=bruck@-256,bcast=binomial,reduce=reduce_scatter_gather@1k-2m");
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(rules[0].collective, "allreduce");
  EXPECT_EQ(rules[0].algorithm, "ring");
  EXPECT_EQ(rules[0].min_bytes, 1048576u);
  EXPECT_EQ(rules[0].max_bytes, static_cast<std::size_t>(-1));
  EXPECT_EQ(rules[1].min_bytes, 0u);
  EXPECT_EQ(rules[1].max_bytes, 256u);
  EXPECT_EQ(rules[3].min_bytes, 1024u);
  EXPECT_EQ(rules[3].max_bytes, 2u << 20);
  EXPECT_TRUE(cairn::coll::parse_selection("").empty());
  for (const char* bad :
       {"allreduce", "allreduce=rung", "allredux=ring", "allreduce=ring@5", "allreduce=ring@x-",
        "allreduce=ring@9-3", "alltoall=bruck@-99999999999999999999999"}) {
    const std::string msg = message_of(
        [&] { (void)cairn::coll::parse_selection(std::string("bcast=binomial,") + bad); });
    EXPECT_TRUE(has_text(msg, "CAIRN_COLL: bad entry '" + std::string(bad) + "'"))
        << bad << ": " << msg;
  }
  // Every catalog entry parses.
  for (const auto& c : cairn::coll::algorithm_catalog())
    for (const auto& a : c.algorithms)
      EXPECT_EQ(cairn::coll::parse_selection(c.collective + "=" + a).size(), 1u);
}

// Run by ctest with CAIRN_COLL set (coll_selection_env): the rules pick the plans, results stay
// right; per-call choices win over the environment.
TEST(Selection, EnvironmentOverridesDefaults) {
  cairn::test::run([](cairn::world& w) {
    const char* env = std::getenv("CAIRN_COLL");
    const bool set = env && std::string(env).find("allreduce=ring") != std::string::npos;
    const int p = w.size();
    std::vector<std::int64_t> small(3, 1), out(3), big(4096, 1), bout(4096), fout(4096);
    auto a = w.allreduce_init(small, out);
    auto b = w.allreduce_init(big, bout);
    auto forced =
        w.allreduce_init(big, fout, cairn::plus{}, cairn::allreduce_algorithm::recursive_doubling);
    // Short collectives on the world run on the node board by default (when all ranks share a
    // node and CAIRN_COLL_CHECK is off; tests/coll/shared_memory_test.cpp), by node leaders
    // across nodes.
    const bool across = w.node_count() > 1 && w.node_count() < p;
    EXPECT_TRUE(cairn::test::on_board_plan(a.plan().name) ||
                a.plan().name ==
                    (across ? "allreduce/hierarchical" : "allreduce/recursive_doubling"))
        << a.plan().name;
    // 32 KiB: past a slot, on the board where ranks copy straight between their buffers.
    if (set) {
      EXPECT_EQ(b.plan().name, "allreduce/ring");
    } else {
      EXPECT_TRUE(cairn::test::on_board_plan(b.plan().name) ||
                  b.plan().name ==
                      (across ? "allreduce/hierarchical" : "allreduce/recursive_doubling"))
          << b.plan().name;
    }
    EXPECT_EQ(forced.plan().name, "allreduce/recursive_doubling");
    // A ring rule does not apply to a non-commutative operation.
    std::vector<mat2> m(4096, mat2{1, 0, 0, 1}), mo(4096);
    auto nc = w.allreduce_init(
        m, mo, cairn::op([](const mat2& x, const mat2& y) { return mul(x, y); }, false));
    EXPECT_NE(nc.plan().name, "allreduce/ring");
    std::vector<int> blocks(static_cast<std::size_t>(p) * 2, w.rank()), got(blocks.size());
    auto t = w.alltoall_init(blocks, got);
    EXPECT_EQ(t.plan().name,
              set ? "alltoall/bruck" : (p >= 5 ? "alltoall/bruck" : "alltoall/pairwise"));
    for (auto* r : {&a, &b, &forced, &nc, &t}) r->start();
    for (auto* r : {&a, &b, &forced, &nc, &t}) r->wait();
    EXPECT_EQ(out, std::vector<std::int64_t>(3, p));
    EXPECT_EQ(bout, std::vector<std::int64_t>(4096, p));
    EXPECT_EQ(fout, std::vector<std::int64_t>(4096, p));
    EXPECT_TRUE(mo == m);
    for (int q = 0; q < p; ++q) EXPECT_EQ(got[static_cast<std::size_t>(q) * 2], q);
  });
}

// Bad input to the v-collectives is reported before anything is sent; counts that differ
// between sender and receiver are reported by the receiver with ranks and sizes, and nobody
// hangs (every pair exchanges a message, even an empty one).
TEST(VectorCollectives, BadInputAndCountMismatch) {
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const auto P = static_cast<std::size_t>(p);
    std::vector<int> in(3), out(3 * P);
    std::vector<std::size_t> counts(P, 3), short_counts(P - 1 + 0, 3);
    std::string msg = message_of([&] { w.allgatherv(in, out, short_counts); });
    EXPECT_TRUE(has_text(msg, "cairn::allgatherv: rank " + std::to_string(me) +
                                  ": receive counts have " + std::to_string(P - 1) +
                                  " entries for a group of " + std::to_string(p)))
        << msg;
    msg = message_of([&] { w.allgatherv(in, std::span(out).first(3 * P - 1), counts); });
    EXPECT_TRUE(has_text(
        msg, "lies outside the output, which holds " + std::to_string(3 * P - 1) + " elements"))
        << msg;
    msg = message_of([&] { w.allgatherv(std::vector<int>(2), out, counts); });
    EXPECT_TRUE(
        has_text(msg, "input holds 2 elements, but counts[" + std::to_string(me) + "] is 3"))
        << msg;
    msg = message_of([&] { w.reduce_scatter(out, std::vector<int>(2), counts); });
    EXPECT_TRUE(
        has_text(msg, "output holds 2 elements, needs counts[" + std::to_string(me) + "] = 3"))
        << msg;
    msg = message_of([&] { w.gatherv(in, out, counts, p); });
    EXPECT_TRUE(has_text(msg, "root " + std::to_string(p) + " is outside the group")) << msg;
    msg = message_of([&] { w.alltoallv(out, counts, out, counts); });
    EXPECT_TRUE(has_text(msg, "input and output overlap")) << msg;
    if (p > 1) {
      // Rank 1 sends 2 elements where the root (0) expects 3: the root reports it.
      std::vector<std::int64_t> mine(me == 1 ? 2 : 3, 5), all(3 * P);
      std::vector<std::size_t> c3(P, 3);
      bool threw = false;
      try {
        w.gatherv(mine, all, c3, 0);
      } catch (const cairn::error& e) {
        threw = true;
        EXPECT_TRUE(has_text(e.what(), "rank 1 sent 16 bytes where this rank expected 24"))
            << e.what();
      }
      EXPECT_EQ(threw, me == 0) << "rank " << me;
      w.barrier();
      // alltoallv: rank 0 sends 4 elements to rank 1, which expects 3 from it.
      std::vector<std::size_t> sc(P, 3), rc(P, 3);
      if (me == 0) sc[1] = 4;
      std::vector<std::int64_t> src(3 * P + 1, 1), dst(3 * P);
      threw = false;
      try {
        w.alltoallv(src, sc, dst, rc);
      } catch (const cairn::error& e) {
        threw = true;
        EXPECT_TRUE(has_text(e.what(), "rank 0 sent 32 bytes where this rank expected 24"))
            << e.what();
      }
      EXPECT_EQ(threw, me == 1) << "rank " << me;
      w.barrier();
    }
  });
}

// Run by ctest with CAIRN_COLL_CHECK=1 (coll_count_check): calls that disagree across ranks
// fail on every rank with both sizes, before any data moves, even where the sizes straddle an
// algorithm threshold (which would otherwise pick different schedules on different ranks).
TEST(CountCheck, DisagreementFailsEverywhere) {
  const char* check = std::getenv("CAIRN_COLL_CHECK");
  if (!check || std::string(check) == "0") GTEST_SKIP() << "needs CAIRN_COLL_CHECK=1";
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    if (p == 1) return;
    // 65528 bytes on rank 0 (recursive doubling), 65536 elsewhere (Rabenseifner).
    std::vector<std::int64_t> in(me == 0 ? 8191 : 8192, 1), out(in.size(), -1);
    const std::string msg = message_of([&] { w.allreduce(in, out, cairn::plus{}); });
    EXPECT_TRUE(has_text(msg, "ranks disagree on the call: rank 0 passes 65528 bytes, rank "))
        << msg;
    EXPECT_TRUE(has_text(msg, "passes 65536 bytes (and chose another algorithm)")) << msg;
    EXPECT_EQ(out, std::vector<std::int64_t>(in.size(), -1));  // nothing was transferred
    // Roots that differ.
    std::vector<int> buf(5, me);
    const std::string bmsg = message_of([&] { w.bcast(buf, me == p - 1 ? 1 : 0); });
    EXPECT_TRUE(has_text(bmsg, "20 bytes with root 0") && has_text(bmsg, "20 bytes with root 1"))
        << bmsg;
    // The group goes on working.
    std::vector<std::int64_t> ok(8192, 1), sum(8192);
    w.allreduce(ok, sum, cairn::plus{});
    EXPECT_EQ(sum, std::vector<std::int64_t>(8192, p));
  });
}

// Without CAIRN_COLL_CHECK, the first collective a group runs by messages and every 128th after
// it check the ranks' signatures: a disagreement there fails on every rank before data moves.
// (Per-call algorithms keep these collectives off the board, which checks its own.)
TEST(CountCheck, FirstAndEvery128thByMessagesFailEverywhere) {
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    if (p == 1) return;
    const auto rd = cairn::allreduce_algorithm::recursive_doubling;
    const auto raised_everywhere = [&](const std::string& msg, const std::string& what) {
      EXPECT_TRUE(has_text(msg, "ranks disagree on the call: ") && has_text(msg, what)) << msg;
      EXPECT_EQ(w.allreduce(msg.empty() ? 0 : 1, cairn::plus{}, rd), p);  // collective 1, 129
    };
    // Collective 0: the last rank passes one element more.
    std::vector<std::int64_t> in(me == p - 1 ? 1001 : 1000, 1), out(in.size(), -1);
    raised_everywhere(message_of([&] { w.allreduce(in, out, cairn::plus{}, rd); }),
                      "passes 8008 bytes");
    EXPECT_EQ(out, std::vector<std::int64_t>(in.size(), -1));
    // Collectives 2 to 127 agree.
    const auto values = cairn::test::random_values<std::int64_t>(126, 7, 0);
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(w.allreduce(values[i] + me, cairn::plus{}, rd),
                values[i] * p + std::int64_t{p} * (p - 1) / 2);
    // Collective 128: the last rank names another root.
    std::vector<int> buf(5, me);
    raised_everywhere(
        message_of([&] { w.bcast(buf, me == p - 1 ? 1 : 0, cairn::bcast_algorithm::binomial); }),
        "20 bytes with root 1");
    EXPECT_EQ(buf, std::vector<int>(5, me));
  });
}

// The same checks bound how far a rank runs ahead: a bcast's root never waits for its
// receivers otherwise, so with a receiver asleep it would finish every bcast it has.
TEST(CountCheck, ARootRunsAtMost128CollectivesAhead) {
  static std::atomic<bool> late_rank_awake;
  late_rank_awake = false;
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    if (p == 1) return;
    int x = 0, ahead = 0;
    for (int i = 0; i < 1000; ++i) {
      if (i == 1 && me == p - 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        late_rank_awake = true;
      }
      x = me == 0 ? i : -1;
      w.bcast(std::span(&x, 1), 0, cairn::bcast_algorithm::binomial);
      ASSERT_EQ(x, i);
      if (me == 0 && !late_rank_awake) ++ahead;
    }
    // Only the threads engine shares the flag between ranks.
    if (me == 0 && w.engine() == cairn::engine::threads) {
      EXPECT_LE(ahead, 128);
    }
  });
}
