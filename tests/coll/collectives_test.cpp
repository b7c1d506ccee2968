// Collectives on both engines, on the world and on groups, against sequential references on
// random data: every collective x algorithm x counts {0, 1, 7, 1000, 100000} x in-place. The
// block collectives (gather, scatter, allgather, alltoall, reduce_scatter_block) cap the
// largest count by the world size (memory grows with p x count per rank) and run, like the
// scans, on the world and on a shuffled group.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <thread>

#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::mat2;
using cairn::test::message_of;
using cairn::test::mismatch;
using cairn::test::mul;
using cairn::test::random_mats;

using cairn::test::block;
using cairn::test::blocks_for;
using cairn::test::blocks_from;
using cairn::test::mat_datum;
using cairn::test::mat_mismatch;
using cairn::test::mat_product;
using cairn::test::on_world_and_group;
using cairn::test::random_values;
using cairn::test::run;
using cairn::test::small_block_sum;
using cairn::test::small_blocks_for;
using cairn::test::small_datum;
using cairn::test::some_roots;

namespace {
const std::size_t counts[] = {0, 1, 7, 1000, 100000};

// Input of group rank r for a test seed.
std::vector<std::int64_t> input(std::size_t n, int r, unsigned seed) {
  auto v = random_values<std::int64_t>(n, seed, static_cast<unsigned>(r));
  for (auto& x : v) x %= 1000000;  // sums stay exact
  return v;
}
std::vector<std::int64_t> sum_of(std::size_t n, int p, unsigned seed) {
  std::vector<std::int64_t> s(n, 0);
  for (int r = 0; r < p; ++r) {
    auto v = input(n, r, seed);
    for (std::size_t i = 0; i < n; ++i) s[i] += v[i];
  }
  return s;
}

std::atomic<int> barrier_counter[64];

// Counts of the v-collectives in the mixtures: member r gets (r % 3) x n / 2 elements.
std::vector<std::size_t> v_counts(std::size_t n, std::size_t p) {
  std::vector<std::size_t> c(p);
  for (std::size_t r = 0; r < p; ++r) c[r] = (r % 3) * n / 2;
  return c;
}

// Largest block counts for a world of p ranks, so that a test stays well under 200 MB and a few
// seconds with 31 threads: rooted collectives hold p blocks on the root (and subtrees in
// scratch), the all-to-all ones p blocks on every rank.
std::size_t rooted_cap(int p) {
  return std::min<std::size_t>(100000, 1000000 / static_cast<std::size_t>(p));
}
std::size_t all_cap(int p) {
  return std::min<std::size_t>(100000, 3000000 / static_cast<std::size_t>(p * p));
}

}  // namespace

TEST(Collectives, Barrier) {
  run([](cairn::world& w) {
    for (int k = 0; k < 64; ++k) {
      if (w.rank() == 0 && w.engine() == cairn::engine::threads) barrier_counter[k] = 0;
      w.barrier();
      barrier_counter[k].fetch_add(1);
      w.barrier();
      if (w.engine() == cairn::engine::threads) {
        ASSERT_EQ(barrier_counter[k].load(), w.size()) << k;
      }
      auto r = w.ibarrier();
      r.wait();
    }
  });
}

TEST(Collectives, BcastEveryRootAndCount) {
  run([](cairn::world& w) {
    for (std::size_t n : counts)
      for (int root = 0; root < w.size(); root += std::max(1, w.size() / 3)) {
        const auto expect = random_values<double>(n, 5, static_cast<unsigned>(root));
        for (auto alg :
             {cairn::bcast_algorithm::automatic, cairn::bcast_algorithm::binomial,
              cairn::bcast_algorithm::scatter_allgather, cairn::bcast_algorithm::hierarchical}) {
          std::vector<double> buf = w.rank() == root ? expect : std::vector<double>(n, -1);
          w.bcast(buf, root, alg);
          ASSERT_EQ(buf, expect) << "n=" << n << " root=" << root
                                 << " alg=" << static_cast<int>(alg);
        }
      }
  });
}

TEST(Collectives, ReduceSumAndOrderedProduct) {
  run([](cairn::world& w) {
    for (std::size_t n : counts)
      for (int root = 0; root < w.size(); root += std::max(1, w.size() / 2)) {
        auto in = input(n, w.rank(), 9);
        const auto expect = w.rank() == root ? sum_of(n, w.size(), 9) : std::vector<std::int64_t>{};
        for (auto alg : {cairn::reduce_algorithm::automatic, cairn::reduce_algorithm::binomial,
                         cairn::reduce_algorithm::reduce_scatter_gather,
                         cairn::reduce_algorithm::hierarchical}) {
          std::vector<std::int64_t> out(w.rank() == root ? n : 0);
          w.reduce(in, out, root, cairn::plus{}, alg);
          if (w.rank() == root) {
            ASSERT_EQ(mismatch(out, expect), "") << "n=" << n << " alg=" << static_cast<int>(alg);
          }
        }
        // Non-commutative: the product must come out in rank order.
        const std::size_t m = std::min<std::size_t>(n, 1000);
        auto a = random_mats(m, static_cast<unsigned>(w.rank() + 17));
        std::vector<mat2> prod(w.rank() == root ? m : 0), prod2(prod.size());
        w.reduce(a, prod, root,
                 cairn::op([](const mat2& x, const mat2& y) { return mul(x, y); }, false));
        w.reduce(a, prod2, root, mat_product, cairn::reduce_algorithm::reduce_scatter_gather);
        std::vector<mat2> prod3(prod.size());  // the world's nodes hold consecutive ranks
        w.reduce(a, prod3, root, mat_product, cairn::reduce_algorithm::hierarchical);
        if (w.rank() == root) {
          ASSERT_EQ(prod2, prod) << "reduce_scatter_gather m=" << m;
          ASSERT_EQ(prod3, prod) << "hierarchical m=" << m;
          std::vector<mat2> expect(m, mat2{1, 0, 0, 1});
          for (int r = 0; r < w.size(); ++r) {
            auto b = random_mats(m, static_cast<unsigned>(r + 17));
            for (std::size_t i = 0; i < m; ++i) expect[i] = mul(expect[i], b[i]);
          }
          ASSERT_EQ(prod, expect) << "m=" << m << " root=" << root;
        }
      }
  });
}

TEST(Collectives, AllreduceAlgorithmsCountsInPlace) {
  run([](cairn::world& w) {
    for (std::size_t n : counts) {
      const auto expect =
          sum_of(n, w.size(), 21);  // once per count: the reference dominates with 31 ranks
      for (auto alg :
           {cairn::allreduce_algorithm::automatic, cairn::allreduce_algorithm::recursive_doubling,
            cairn::allreduce_algorithm::ring, cairn::allreduce_algorithm::rabenseifner,
            cairn::allreduce_algorithm::hierarchical}) {
        auto in = input(n, w.rank(), 21);
        std::vector<std::int64_t> out(n, -1);
        w.allreduce(in, out, cairn::plus{}, alg);
        ASSERT_EQ(out, expect) << "n=" << n << " alg=" << static_cast<int>(alg);
        w.allreduce(in, cairn::plus{}, alg);  // in place
        ASSERT_EQ(in, expect) << "in place, n=" << n;
      }
    }
  });
}

TEST(Collectives, AllreduceOperations) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const std::size_t n = 257;
    // min / max on doubles, xor on unsigned, logical and, minloc.
    auto d = random_values<double>(n, 31, static_cast<unsigned>(me));
    std::vector<double> mn(n), mx(n);
    w.allreduce(d, mn, cairn::min{});
    w.allreduce(d, mx, cairn::max{});
    auto u = random_values<std::uint32_t>(n, 32, static_cast<unsigned>(me));
    std::vector<std::uint32_t> x(n);
    w.allreduce(u, x, cairn::bit_xor{});
    std::vector<int> flag(n, me % 2 == 0 ? 1 : 0), all(n);
    w.allreduce(flag, all, cairn::logical_and{});
    std::vector<cairn::value_index<double>> vi(n), loc(n);
    for (std::size_t i = 0; i < n; ++i) vi[i] = {d[i], me};
    w.allreduce(vi, loc, cairn::minloc{});
    std::vector<std::vector<double>> ds;  // every rank's inputs, generated once
    std::vector<std::vector<std::uint32_t>> us;
    for (int r = 0; r < p; ++r) {
      ds.push_back(random_values<double>(n, 31, static_cast<unsigned>(r)));
      us.push_back(random_values<std::uint32_t>(n, 32, static_cast<unsigned>(r)));
    }
    for (std::size_t i = 0; i < n; ++i) {
      double emn = 2, emx = -2;
      std::uint32_t ex = 0;
      cairn::value_index<double> el{3, -1};
      for (int r = 0; r < p; ++r) {
        const double v = ds[static_cast<std::size_t>(r)][i];
        emn = std::min(emn, v);
        emx = std::max(emx, v);
        ex ^= us[static_cast<std::size_t>(r)][i];
        if (v < el.value) el = {v, r};
      }
      ASSERT_EQ(mn[i], emn);
      ASSERT_EQ(mx[i], emx);
      ASSERT_EQ(x[i], ex);
      ASSERT_EQ(all[i], p == 1 ? 1 : 0);
      ASSERT_EQ(loc[i], el);
    }
    // Non-commutative user operation: rank order.
    auto a = random_mats(9, static_cast<unsigned>(me + 3));
    std::vector<mat2> prod(9), prod2(9);
    w.allreduce(a, prod, cairn::op([](const mat2& l, const mat2& r) { return mul(l, r); }, false));
    w.allreduce(a, prod2, mat_product, cairn::allreduce_algorithm::rabenseifner);
    ASSERT_EQ(prod2, prod);
    w.allreduce(a, prod2, mat_product, cairn::allreduce_algorithm::hierarchical);
    ASSERT_EQ(prod2, prod);
    std::vector<mat2> expect(9, mat2{1, 0, 0, 1});
    for (int r = 0; r < p; ++r) {
      auto b = random_mats(9, static_cast<unsigned>(r + 3));
      for (std::size_t i = 0; i < 9; ++i) expect[i] = mul(expect[i], b[i]);
    }
    ASSERT_EQ(prod, expect);
  });
}

// The hierarchical algorithms on the world, on odd ranks in reverse order and on a shuffled
// group, wherever the run puts its nodes (CAIRN_NODES / CAIRN_THREADS_NODES variants): sums to
// and from every kind of root, the rank-ordered product where each node's ranks are consecutive
// in the group (refused on every rank elsewhere), and the table's choice across nodes.
TEST(Collectives, HierarchicalOnGroupsAcrossNodes) {
  run([](cairn::world& w) {
    cairn::test::on_groups(w, 23, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank();
      const auto [n_nodes, consecutive, equal] = cairn::test::placement_of(w, mem);
      const std::string at =
          " on " + std::to_string(p) + " ranks, " + std::to_string(n_nodes) + " nodes";
      for (std::size_t n : counts) {
        const unsigned seed = static_cast<unsigned>(n + 7 * mem.size());
        std::vector<std::int64_t> expect(n, 0);
        for (int r = 0; r < p; ++r) {
          const auto x = input(n, r, seed);
          for (std::size_t i = 0; i < n; ++i) expect[i] += x[i];
        }
        const auto in = input(n, me, seed);
        std::vector<std::int64_t> out(n, -1);
        c.allreduce(in, out, cairn::plus{}, cairn::allreduce_algorithm::hierarchical);
        ASSERT_EQ(mismatch(out, expect), "") << "allreduce n=" << n << at;
        // By slices on nodes of equal size (refused elsewhere), in place.
        std::vector<std::int64_t> io = in;
        auto slices = [&] {
          c.allreduce(io, cairn::plus{}, cairn::allreduce_algorithm::hierarchical_slices);
        };
        if (equal) {
          slices();
          ASSERT_EQ(mismatch(io, expect), "") << "allreduce by slices n=" << n << at;
        } else {
          EXPECT_TRUE(cairn::test::has_text(message_of(slices), "needs nodes that each hold"));
        }
        for (int root : some_roots(p)) {
          std::vector<std::int64_t> red(me == root ? n : 0, -1);
          c.reduce(in, red, root, cairn::plus{}, cairn::reduce_algorithm::hierarchical);
          if (me == root) {
            ASSERT_EQ(mismatch(red, expect), "") << "reduce n=" << n << at;
          }
          std::vector<std::int64_t> buf = me == root ? expect : std::vector<std::int64_t>(n, -1);
          c.ibcast(buf, root, cairn::bcast_algorithm::hierarchical).wait();
          ASSERT_EQ(mismatch(buf, expect), "") << "bcast root=" << root << " n=" << n << at;
        }
      }
      // Non-commutative: the product in group order, or refused.
      const std::size_t m = 33;
      const auto a = random_mats(m, static_cast<unsigned>(mem[static_cast<std::size_t>(me)] + 5));
      std::vector<mat2> prod(m), want(m, mat2{1, 0, 0, 1});
      for (int r = 0; r < p; ++r) {
        const auto b = random_mats(m, static_cast<unsigned>(mem[static_cast<std::size_t>(r)] + 5));
        for (std::size_t i = 0; i < m; ++i) want[i] = mul(want[i], b[i]);
      }
      auto product = [&] {
        c.allreduce(a, prod, mat_product, cairn::allreduce_algorithm::hierarchical);
      };
      if (consecutive) {
        product();
        ASSERT_EQ(prod, want) << "product" << at;
      } else {
        const std::string e = message_of(product);
        EXPECT_TRUE(cairn::test::has_text(e, "cairn::allreduce") &&
                    cairn::test::has_text(e, "needs a commutative operation where a node's ranks"))
            << e;
      }
      // The table goes across nodes by node leaders when some node holds more than one rank.
      std::vector<std::int64_t> x(4), y(4);
      const bool across = n_nodes > 1 && n_nodes < p;
      EXPECT_EQ(c.allreduce_init(x, y).plan().name == "allreduce/hierarchical", across) << at;
      EXPECT_EQ(c.bcast_init(x, 0).plan().name == "bcast/hierarchical", across) << at;
      EXPECT_EQ(c.reduce_init(x, y, 0).plan().name == "reduce/hierarchical", across) << at;
      std::vector<std::int64_t> gathered(4 * static_cast<std::size_t>(p));
      EXPECT_EQ(c.allgather_init(x, gathered).plan().name == "allgather/hierarchical", across)
          << at;
    });
  });
}

TEST(Collectives, GatherScatterCountsRootsGroups) {
  run([](cairn::world& w) {
    const std::size_t cap = rooted_cap(w.size());
    on_world_and_group(
        w, static_cast<unsigned>(w.size()), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
          for (std::size_t n : counts) {
            n = std::min(n, cap);
            for (int root : some_roots(p)) {
              const unsigned seed = static_cast<unsigned>(n * 131 + static_cast<std::size_t>(root) +
                                                          1000 * mem.size());
              // Gather; the root's output has one spare element, which stays untouched.
              const auto in = block(n, seed, wme);
              std::vector<std::int64_t> out(me == root ? p * n + 1 : 0, -1);
              if (n % 2) {
                c.igather(in, out, root).wait();
              } else {
                c.gather(in, out, root);
              }
              if (me == root) {
                ASSERT_EQ(out.back(), -1);
                out.pop_back();
                ASSERT_EQ(mismatch(out, blocks_from(n, seed, mem)), "")
                    << "gather n=" << n << " root=" << root << " p=" << p;
              }
              // Scatter: member i's block depends on the root and on i.
              const int wroot = mem[static_cast<std::size_t>(root)];
              const auto sin =
                  me == root ? blocks_for(n, seed + 1, wroot, mem) : std::vector<std::int64_t>{};
              std::vector<std::int64_t> sout(n, -1);
              if (n % 2) {
                c.scatter(sin, sout, root);
              } else {
                c.iscatter(sin, sout, root).wait();
              }
              ASSERT_EQ(mismatch(sout, block(n, seed + 1, wroot, wme)), "")
                  << "scatter n=" << n << " root=" << root << " p=" << p;
            }
          }
        });
  });
}

TEST(Collectives, AllgatherAlgorithmsCountsGroups) {
  run([](cairn::world& w) {
    const std::size_t cap = all_cap(w.size());
    on_world_and_group(
        w, static_cast<unsigned>(w.size()), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), wme = mem[static_cast<std::size_t>(c.rank())];
          for (auto alg :
               {cairn::allgather_algorithm::automatic, cairn::allgather_algorithm::ring,
                cairn::allgather_algorithm::bruck, cairn::allgather_algorithm::recursive_doubling,
                cairn::allgather_algorithm::hierarchical})
            for (std::size_t n : counts) {
              n = std::min(n, cap);
              const unsigned seed =
                  static_cast<unsigned>(n * 7 + static_cast<std::size_t>(alg) + 100 * mem.size());
              const auto in = block(n, seed, wme);
              std::vector<std::int64_t> out(p * n, -1);
              if (n % 2) {
                c.allgather(in, out, alg);
              } else {
                c.iallgather(in, out, alg).wait();
              }
              ASSERT_EQ(mismatch(out, blocks_from(n, seed, mem)), "")
                  << "n=" << n << " alg=" << static_cast<int>(alg) << " p=" << p;
            }
        });
  });
}

TEST(Collectives, AlltoallCountsGroups) {
  run([](cairn::world& w) {
    const std::size_t cap = all_cap(w.size());
    on_world_and_group(
        w, static_cast<unsigned>(w.size()), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), wme = mem[static_cast<std::size_t>(c.rank())];
          for (std::size_t n : counts)
            for (auto alg :
                 {cairn::alltoall_algorithm::automatic, cairn::alltoall_algorithm::pairwise,
                  cairn::alltoall_algorithm::bruck}) {
              n = std::min(n, cap);
              const unsigned seed =
                  static_cast<unsigned>(n * 3 + 7 * mem.size() + static_cast<std::size_t>(alg));
              const auto in = blocks_for(n, seed, wme, mem);  // block j for member j
              std::vector<std::int64_t> out(p * n, -1);
              if (n % 2) {
                c.ialltoall(in, out, alg).wait();
              } else {
                c.alltoall(in, out, alg);
              }
              ASSERT_EQ(mismatch(out, blocks_from(n, seed, mem, wme)), "")
                  << "n=" << n << " p=" << p << " alg=" << static_cast<int>(alg);
            }
        });
  });
}

TEST(Collectives, ReduceScatterBlockAlgorithmsCountsGroups) {
  run([](cairn::world& w) {
    const std::size_t cap = all_cap(w.size());
    on_world_and_group(
        w, static_cast<unsigned>(w.size()), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
          for (std::size_t n : counts) {
            n = std::min(n, cap);
            for (auto alg : {cairn::reduce_scatter_block_algorithm::automatic,
                             cairn::reduce_scatter_block_algorithm::recursive_halving,
                             cairn::reduce_scatter_block_algorithm::ring}) {
              const unsigned seed =
                  static_cast<unsigned>(n * 5 + static_cast<std::size_t>(alg) + 100 * mem.size());
              // Block j is for member j; the output has one spare element, which stays untouched.
              const auto in = small_blocks_for(n, seed, wme, mem);
              std::vector<std::int64_t> out(n + 1, -1);
              const auto first = std::span(out).first(n);
              if (n % 2) {
                c.reduce_scatter_block(in, first, cairn::plus{}, alg);
              } else {
                c.ireduce_scatter_block(in, first, cairn::plus{}, alg).wait();
              }
              ASSERT_EQ(out.back(), -1);
              out.pop_back();
              ASSERT_EQ(mismatch(out, small_block_sum(n, seed, mem, wme)), "")
                  << "n=" << n << " alg=" << static_cast<int>(alg) << " p=" << p;
            }
            // Non-commutative: products in rank order (recursive halving, also when automatic).
            for (auto alg : {cairn::reduce_scatter_block_algorithm::automatic,
                             cairn::reduce_scatter_block_algorithm::recursive_halving}) {
              const unsigned seed =
                  static_cast<unsigned>(n * 11 + static_cast<std::size_t>(alg) + 100 * mem.size());
              std::vector<mat2> in;
              in.reserve(static_cast<std::size_t>(p) * n);
              for (int d : mem)
                for (std::size_t i = 0; i < n; ++i) in.push_back(mat_datum(seed, wme, d, i));
              std::vector<mat2> out(n);
              c.reduce_scatter_block(in, out, mat_product, alg);
              std::vector<mat2> expect(n, mat2{1, 0, 0, 1});
              for (int f : mem)
                for (std::size_t i = 0; i < n; ++i)
                  expect[i] = mul(expect[i], mat_datum(seed, f, wme, i));
              ASSERT_EQ(mat_mismatch(out, expect), "")
                  << "product, n=" << n << " alg=" << static_cast<int>(alg) << " p=" << p;
            }
          }
        });
  });
}

TEST(Collectives, ScanExscanCountsGroups) {
  run([](cairn::world& w) {
    on_world_and_group(
        w, static_cast<unsigned>(w.size()), [&](auto& c, const std::vector<int>& mem) {
          const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
          for (std::size_t n : counts) {
            const unsigned seed = static_cast<unsigned>(n * 3 + 100 * mem.size());
            const auto in = small_blocks_for(n, seed, wme, {0});
            std::vector<std::int64_t> incl(n, -1), excl(n, -1);
            if (n % 2) {
              c.scan(in, incl, cairn::plus{});
              c.iexscan(in, excl, cairn::plus{}).wait();
            } else {
              auto a = c.iscan(in, incl, cairn::plus{});
              c.exscan(in, excl, cairn::plus{});
              a.wait();
            }
            std::vector<std::int64_t> expect(n, 0);  // over group ranks 0..me-1
            for (int r = 0; r < me; ++r)
              for (std::size_t i = 0; i < n; ++i)
                expect[i] += small_datum(seed, mem[static_cast<std::size_t>(r)], 0, i);
            ASSERT_EQ(mismatch(excl, me == 0 ? std::vector<std::int64_t>(n, -1) : expect), "")
                << "exscan n=" << n << " p=" << p << " rank " << me;
            for (std::size_t i = 0; i < n; ++i) expect[i] += in[i];
            ASSERT_EQ(mismatch(incl, expect), "") << "scan n=" << n << " p=" << p << " rank " << me;
            // Non-commutative: products in rank order.
            const std::size_t m = std::min<std::size_t>(n, 1000);
            std::vector<mat2> a(m);
            for (std::size_t i = 0; i < m; ++i) a[i] = mat_datum(seed, wme, 0, i);
            std::vector<mat2> pincl(m), pexcl(m, mat2{7, 7, 7, 7});
            c.scan(a, pincl, mat_product);
            c.exscan(a, pexcl, mat_product);
            std::vector<mat2> prod(m, mat2{1, 0, 0, 1});
            for (int r = 0; r < me; ++r)
              for (std::size_t i = 0; i < m; ++i)
                prod[i] = mul(prod[i], mat_datum(seed, mem[static_cast<std::size_t>(r)], 0, i));
            ASSERT_EQ(mat_mismatch(pexcl, me == 0 ? std::vector<mat2>(m, mat2{7, 7, 7, 7}) : prod),
                      "")
                << "exscan product m=" << m << " p=" << p << " rank " << me;
            for (std::size_t i = 0; i < m; ++i) prod[i] = mul(prod[i], a[i]);
            ASSERT_EQ(mat_mismatch(pincl, prod), "")
                << "scan product m=" << m << " p=" << p << " rank " << me;
          }
        });
  });
}

// Groups from ranges and lists; non-members hold the group but do not call; collectives on
// overlapping groups started back to back and completed in the opposite order.
TEST(Collectives, GroupsAndConcurrentOverlappingCollectives) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    auto evens = w.group(cairn::ranks{0, p, 2});
    std::vector<int> members;
    for (int r = p - 1; r >= 0; r -= 1 + (r % 3 == 0)) members.push_back(r);  // reversed, gaps
    auto odd_list = w.group(members);
    EXPECT_EQ(evens.size(), (p + 1) / 2);
    EXPECT_EQ(evens.rank(), me % 2 == 0 ? me / 2 : -1);
    std::vector<cairn::request> reqs;
    std::vector<std::int64_t> a = input(1000, me, 41), ra(1000), b = input(7, me, 42), rb(7),
                              c(1000);
    if (evens.rank() >= 0) reqs.push_back(evens.iallreduce(a, ra, cairn::plus{}));
    if (odd_list.rank() >= 0) reqs.push_back(odd_list.iallreduce(b, rb, cairn::plus{}));
    reqs.push_back(w.iallreduce(a, c, cairn::plus{}));
    std::reverse(reqs.begin(), reqs.end());
    cairn::wait_all(reqs);
    auto group_sum = [&](const cairn::group& g, std::size_t n, unsigned seed) {
      std::vector<std::int64_t> s(n, 0);
      for (int wr : g.members()) {
        auto v = input(n, wr, seed);
        for (std::size_t i = 0; i < n; ++i) s[i] += v[i];
      }
      return s;
    };
    if (evens.rank() >= 0) {
      EXPECT_EQ(ra, group_sum(evens, 1000, 41));
    }
    if (odd_list.rank() >= 0) {
      EXPECT_EQ(rb, group_sum(odd_list, 7, 42));
    }
    EXPECT_EQ(c, sum_of(1000, p, 41));
    // Bcast on the list group from its group rank 0 (the highest world rank).
    if (odd_list.rank() >= 0) {
      std::vector<int> v(5, odd_list.rank() == 0 ? 99 : 0);
      odd_list.bcast(v, 0);
      EXPECT_EQ(v, std::vector<int>(5, 99));
    }
  });
}

// Random mixtures of concurrent collectives on random overlapping groups: every rank derives
// the same mixture from the seed, starts the ones it belongs to in order, and waits for them
// in its own random order.
TEST(Collectives, RandomConcurrentMixtures) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const int mixtures =
        w.engine() == cairn::engine::threads ? 1000 / std::max(1, p / 4) + 50 : 150;
    for (int m = 0; m < mixtures; ++m) {
      std::mt19937 g(static_cast<unsigned>(m * 7919 + p));
      const int k = 1 + static_cast<int>(g() % 5);
      struct item {
        cairn::group grp;
        int kind;  // allreduce, bcast, reduce, gather, scatter, allgather, alltoall,
                   // reduce_scatter_block, scan, exscan
        std::size_t n;
        int root;
        std::vector<std::int64_t> in, out;
        std::vector<std::size_t> counts = {};  // v-collectives
      };
      std::vector<item> items;
      for (int i = 0; i < k; ++i) {
        std::vector<int> mem;
        for (int r = 0; r < p; ++r)
          if (g() % 3 != 0 || r == static_cast<int>(g() % static_cast<unsigned>(p)))
            mem.push_back(r);
        if (mem.empty()) mem.push_back(static_cast<int>(g() % static_cast<unsigned>(p)));
        std::shuffle(mem.begin(), mem.end(), g);
        item it{w.group(mem),
                static_cast<int>(g() % 12),
                static_cast<std::size_t>(g() % 300),
                0,
                {},
                {},
                {}};
        it.root = static_cast<int>(g() % static_cast<unsigned>(mem.size()));
        items.push_back(std::move(it));
      }
      std::vector<cairn::request> reqs;
      std::vector<std::size_t> mine;
      for (std::size_t i = 0; i < items.size(); ++i) {
        item& it = items[i];
        const int gr = it.grp.rank();
        if (gr < 0) continue;
        const unsigned seed = static_cast<unsigned>(m * 10 + static_cast<int>(i));
        const std::size_t gp = static_cast<std::size_t>(it.grp.size());
        it.in = input(it.n, me, seed);
        it.out.assign(it.n, -7);
        // Algorithms cycle with the mixture (every rank derives the same one).
        if (it.kind == 0)
          reqs.push_back(it.grp.iallreduce(it.in, it.out, cairn::plus{},
                                           static_cast<cairn::allreduce_algorithm>(m % 4)));
        else if (it.kind == 1) {
          if (gr == it.root) it.out = it.in;
          reqs.push_back(
              it.grp.ibcast(it.out, it.root, static_cast<cairn::bcast_algorithm>(m % 3)));
        } else if (it.kind == 2) {
          if (gr != it.root) it.out.clear();
          reqs.push_back(it.grp.ireduce(it.in, it.out, it.root, cairn::plus{},
                                        static_cast<cairn::reduce_algorithm>(m % 3)));
        } else if (it.kind == 3) {
          it.in = block(it.n, seed, me);
          it.out.assign(gr == it.root ? gp * it.n : 0, -7);
          reqs.push_back(it.grp.igather(it.in, it.out, it.root));
        } else if (it.kind == 4) {
          it.in = gr == it.root ? blocks_for(it.n, seed, me, it.grp.members())
                                : std::vector<std::int64_t>{};
          reqs.push_back(it.grp.iscatter(it.in, it.out, it.root));
        } else if (it.kind == 5) {
          it.in = block(it.n, seed, me);
          it.out.assign(gp * it.n, -7);
          reqs.push_back(
              it.grp.iallgather(it.in, it.out, static_cast<cairn::allgather_algorithm>(m % 4)));
        } else if (it.kind == 6) {
          it.in = blocks_for(it.n, seed, me, it.grp.members());
          it.out.assign(gp * it.n, -7);
          reqs.push_back(
              it.grp.ialltoall(it.in, it.out, static_cast<cairn::alltoall_algorithm>(m % 3)));
        } else if (it.kind == 7) {
          it.in = small_blocks_for(it.n, seed, me, it.grp.members());
          reqs.push_back(it.grp.ireduce_scatter_block(
              it.in, it.out, cairn::plus{},
              static_cast<cairn::reduce_scatter_block_algorithm>(m % 3)));
        } else if (it.kind == 8) {
          reqs.push_back(it.grp.iscan(it.in, it.out, cairn::plus{}));
        } else if (it.kind == 9) {
          reqs.push_back(it.grp.iexscan(it.in, it.out, cairn::plus{}));
        } else if (it.kind == 10) {  // allgatherv: member r sends (r % 3) x n / 2 elements
          it.counts = v_counts(it.n, gp);
          it.in = block(it.counts[static_cast<std::size_t>(gr)], seed, me);
          it.out.assign(std::accumulate(it.counts.begin(), it.counts.end(), std::size_t{0}), -7);
          reqs.push_back(it.grp.iallgatherv(it.in, it.out, it.counts));
        } else {  // reduce_scatter with the same counts
          it.counts = v_counts(it.n, gp);
          it.in.clear();
          for (std::size_t d = 0; d < gp; ++d) {
            const auto b =
                small_blocks_for(it.counts[d], seed, me, {it.grp.world_rank(static_cast<int>(d))});
            it.in.insert(it.in.end(), b.begin(), b.end());
          }
          it.out.assign(it.counts[static_cast<std::size_t>(gr)], -7);
          reqs.push_back(it.grp.ireduce_scatter(it.in, it.out, it.counts, cairn::plus{}));
        }
        mine.push_back(i);
      }
      std::vector<std::size_t> order(reqs.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::mt19937 mine_g(static_cast<unsigned>(m + 1000 * me));
      std::shuffle(order.begin(), order.end(), mine_g);
      for (std::size_t o : order) reqs[o].wait();
      for (std::size_t i : mine) {
        item& it = items[i];
        const unsigned seed = static_cast<unsigned>(m * 10 + static_cast<int>(i));
        const auto& mem = it.grp.members();
        if (it.kind == 3 && it.grp.rank() == it.root) {
          ASSERT_EQ(mismatch(it.out, blocks_from(it.n, seed, mem)), "")
              << "gather, mixture " << m << " item " << i;
        }
        if (it.kind == 4) {
          ASSERT_EQ(mismatch(it.out, block(it.n, seed, it.grp.world_rank(it.root), me)), "")
              << "scatter, mixture " << m;
        }
        if (it.kind == 5) {
          ASSERT_EQ(mismatch(it.out, blocks_from(it.n, seed, mem)), "")
              << "allgather, mixture " << m << " item " << i;
        }
        if (it.kind == 6) {
          ASSERT_EQ(mismatch(it.out, blocks_from(it.n, seed, mem, me)), "")
              << "alltoall, mixture " << m << " item " << i;
        }
        if (it.kind == 7) {
          ASSERT_EQ(mismatch(it.out, small_block_sum(it.n, seed, mem, me)), "")
              << "reduce_scatter_block, mixture " << m;
        }
        if (it.kind == 10) {
          std::vector<std::int64_t> expect;
          for (std::size_t r = 0; r < mem.size(); ++r) {
            const auto b = block(it.counts[r], seed, mem[r]);
            expect.insert(expect.end(), b.begin(), b.end());
          }
          ASSERT_EQ(mismatch(it.out, expect), "") << "allgatherv, mixture " << m << " item " << i;
          continue;
        }
        if (it.kind == 11) {
          ASSERT_EQ(
              mismatch(it.out, small_block_sum(it.counts[static_cast<std::size_t>(it.grp.rank())],
                                               seed, mem, me)),
              "")
              << "reduce_scatter, mixture " << m << " item " << i;
          continue;
        }
        if (it.kind >= 8) {  // scans: over group ranks 0..rank (exscan: ..rank-1; rank 0 keeps -7)
          const int gr = it.grp.rank();
          std::vector<std::int64_t> expect(it.n, it.kind == 9 && gr == 0 ? -7 : 0);
          for (int r = 0; r < gr + (it.kind == 8 ? 1 : 0); ++r) {
            const auto v = input(it.n, mem[static_cast<std::size_t>(r)], seed);
            for (std::size_t j = 0; j < it.n; ++j) expect[j] += v[j];
          }
          ASSERT_EQ(mismatch(it.out, expect), "")
              << (it.kind == 8 ? "scan" : "exscan") << ", mixture " << m;
        }
        if (it.kind >= 3) continue;
        std::vector<std::int64_t> sum(it.n, 0);
        for (int wr : it.grp.members()) {
          auto v = input(it.n, wr, static_cast<unsigned>(m * 10 + static_cast<int>(i)));
          for (std::size_t j = 0; j < it.n; ++j) sum[j] += v[j];
        }
        const int root_world = it.grp.world_rank(it.root);
        if (it.kind == 0) {
          ASSERT_EQ(it.out, sum) << "mixture " << m << " item " << i;
        }
        if (it.kind == 1) {
          ASSERT_EQ(it.out,
                    input(it.n, root_world, static_cast<unsigned>(m * 10 + static_cast<int>(i))));
        }
        if (it.kind == 2 && it.grp.rank() == it.root) {
          ASSERT_EQ(it.out, sum) << "mixture " << m;
        }
      }
    }
  });
}

TEST(Collectives, BadInput) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    std::vector<int> v(4), out(3);
    try {
      w.allreduce(v, out, cairn::plus{});
      ADD_FAILURE() << "size mismatch not reported";
    } catch (const cairn::error& e) {
      EXPECT_NE(std::string(e.what()).find("output holds 3 elements, input 4"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(w.bcast(v, p), cairn::error);
    EXPECT_THROW((void)w.group(cairn::ranks{0, p + 1}), cairn::error);
    EXPECT_THROW((void)w.group(std::vector<int>{0, 0}), cairn::error);
    EXPECT_THROW((void)w.group(std::vector<int>{}), cairn::error);
    // Block collectives: sizes checked against the group size, before anything is sent (only
    // the ranks that fail call, so nobody is left waiting).
    auto contains = [](const std::string& s, const std::string& part) {
      return s.find(part) != std::string::npos;
    };
    const std::size_t P = static_cast<std::size_t>(p);
    if (me == 0) {
      std::vector<int> small(4 * P - 1);
      std::string msg = message_of([&] { w.gather(v, small, 0); });
      EXPECT_TRUE(contains(msg, "cairn::gather: rank 0: output holds " + std::to_string(4 * P - 1) +
                                    " elements, needs " + std::to_string(4 * P)))
          << msg;
      msg = message_of([&] { (void)w.iscatter(small, v, 0); });
      EXPECT_TRUE(contains(msg, "cairn::iscatter: rank 0: input holds " +
                                    std::to_string(4 * P - 1) + " elements, needs " +
                                    std::to_string(4 * P)))
          << msg;
    }
    std::string msg = message_of([&] { w.gather(v, out, p); });
    EXPECT_TRUE(contains(msg, "root " + std::to_string(p) + " is outside the group")) << msg;
    msg = message_of([&] { w.scatter(v, out, -1); });
    EXPECT_TRUE(contains(msg, "root -1 is outside the group")) << msg;
    std::vector<int> gathered(4 * P - 2);
    msg = message_of([&] { w.allgather(v, gathered); });
    EXPECT_TRUE(contains(msg, "output holds " + std::to_string(4 * P - 2) + " elements, needs " +
                                  std::to_string(4 * P)))
        << msg;
    std::vector<int> whole(4 * P);
    msg = message_of([&] { w.allgather(std::span(whole).first(4), whole); });
    EXPECT_TRUE(contains(msg, "input and output overlap")) << msg;
    msg = message_of([&] { w.alltoall(whole, std::span(whole).first(4 * P - 1)); });
    EXPECT_TRUE(contains(msg, "output holds " + std::to_string(4 * P - 1) + " elements, needs " +
                                  std::to_string(4 * P)))
        << msg;
    msg = message_of([&] { w.alltoall(whole, whole); });
    EXPECT_TRUE(contains(msg, "input and output overlap")) << msg;
    if (p > 1) {
      std::vector<int> odd(4 * P + 1), odd_out(4 * P + 1);
      msg = message_of([&] { w.alltoall(odd, odd_out); });
      EXPECT_TRUE(contains(msg, "input holds " + std::to_string(4 * P + 1) +
                                    " elements, not a multiple of the " + std::to_string(p) +
                                    " ranks"))
          << msg;
    }
    // Reduce-scatter and scans: sizes, overlap and the ring's need for a commutative operation.
    std::vector<int> blocks(4 * P), one(4);
    msg = message_of([&] { w.reduce_scatter_block(std::span(blocks).first(4 * P - 1), one); });
    EXPECT_TRUE(contains(msg, "cairn::reduce_scatter_block: rank " + std::to_string(me) +
                                  ": input holds " + std::to_string(4 * P - 1) +
                                  " elements, needs " + std::to_string(4 * P)))
        << msg;
    msg = message_of([&] { (void)w.ireduce_scatter_block(blocks, std::span(blocks).last(4)); });
    EXPECT_TRUE(contains(msg, "cairn::ireduce_scatter_block: rank " + std::to_string(me) +
                                  ": input and output overlap"))
        << msg;
    msg = message_of([&] {
      w.reduce_scatter_block(blocks, one, cairn::op([](int a, int b) { return a - b; }, false),
                             cairn::reduce_scatter_block_algorithm::ring);
    });
    EXPECT_TRUE(contains(msg, "the ring algorithm needs a commutative operation")) << msg;
    msg = message_of([&] { w.scan(v, out); });
    EXPECT_TRUE(contains(
        msg, "cairn::scan: rank " + std::to_string(me) + ": output holds 3 elements, input 4"))
        << msg;
    std::vector<int> five(5);
    msg = message_of([&] { (void)w.iexscan(v, five); });
    EXPECT_TRUE(contains(
        msg, "cairn::iexscan: rank " + std::to_string(me) + ": output holds 5 elements, input 4"))
        << msg;
    msg = message_of([&] { w.exscan(std::span(whole).first(4), std::span(whole).subspan(2, 4)); });
    EXPECT_TRUE(contains(msg, "input and output overlap")) << msg;
    if (p > 1) {
      auto first = w.group(cairn::ranks{0, 1});
      if (me != 0) {
        EXPECT_THROW(first.barrier(), cairn::error);  // not a member
      }
      // Counts that differ across ranks are reported (rank 0 passes one element more), and
      // nobody hangs: by the receiver of a message of the wrong size, or (the first of the
      // group's collectives by messages, and every 128th) by the count check on every rank.
      const auto count_disagreement = [&](const std::string& what) {
        return contains(what, "do all ranks pass the same count") ||
               contains(what,
                        "ranks disagree on the call: rank 1 passes 80 bytes, rank 0 "
                        "passes 88 bytes");
      };
      // Unsigned elements: rank 0 sums scratch it never received into its extra element
      // (recycled scratch is not cleared), which must not be a signed overflow.
      std::vector<std::uint64_t> in(me == 0 ? 11 : 10, 1), res(in.size());
      bool threw = false;
      try {
        w.allreduce(in, res, cairn::plus{}, cairn::allreduce_algorithm::recursive_doubling);
      } catch (const cairn::error& e) {
        threw = true;
        EXPECT_TRUE(count_disagreement(e.what())) << e.what();
      }
      if (me == 0 || me == 1) {
        EXPECT_TRUE(threw) << "rank " << me;
      }
      w.barrier();
      // The same for a block collective: on the ring, rank 1 receives rank 0's long block and
      // rank 0 a short one (ranks further on receive rank 1's copy, which has the right size).
      std::vector<std::uint64_t> all(in.size() * P);
      threw = false;
      try {
        w.allgather(in, all, cairn::allgather_algorithm::ring);
      } catch (const cairn::error& e) {
        threw = true;
        EXPECT_TRUE(count_disagreement(e.what())) << e.what();
      }
      if (me == 0 || me == 1) {
        EXPECT_TRUE(threw) << "rank " << me;
      }
      w.barrier();
      // And for a scan: rank 1 receives rank 0's long partial in the first round.
      std::vector<std::uint64_t> prefix(in.size());
      threw = false;
      try {
        w.scan(in, prefix);
      } catch (const cairn::error& e) {
        threw = true;
        EXPECT_TRUE(count_disagreement(e.what())) << e.what();
      }
      if (me == 1) {
        EXPECT_TRUE(threw) << "rank " << me;
      }
      w.barrier();
    }
  });
}

// More non-blocking collectives in flight on one group than its tags tell apart (a tag holds
// up to 4096 sequence numbers). Collective 1 is a recursive-doubling allreduce; the others
// are binomial bcasts from group rank 2, which sends to group rank 0 at once. The last member
// starts late, so rank 0's allreduce still waits in its second round for rank 2 while rank 2's
// bcasts go out: bcast 4097, under the allreduce's tag, must not be taken for its message.
TEST(Collectives, MoreInFlightThanTagsTellApart) {
  run([](cairn::world& w) {
    const int gp = std::min(w.size(), 4);
    auto g = w.group(cairn::ranks{0, gp, 1});
    if (g.rank() < 0) return;
    const int me = g.rank(), root = 2 % gp;
    if (me == gp - 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    constexpr int total = 2 * 4096 + 4;
    std::vector<std::int64_t> in(total), out(total, -1);
    std::vector<cairn::request> reqs;
    reqs.reserve(total);
    for (int i = 0; i < total; ++i) {
      if (i == 1) {
        in[1] = 1000 + me;
        reqs.push_back(g.iallreduce(std::span(&in[1], 1), std::span(&out[1], 1), cairn::plus{},
                                    cairn::allreduce_algorithm::recursive_doubling));
      } else {
        if (me == root) out[static_cast<std::size_t>(i)] = i;
        reqs.push_back(g.ibcast(std::span(&out[static_cast<std::size_t>(i)], 1), root,
                                cairn::bcast_algorithm::binomial));
      }
    }
    cairn::wait_all(reqs);
    for (int i = 0; i < total; ++i) {
      const std::int64_t want = i == 1 ? 1000 * gp + gp * (gp - 1) / 2 : i;
      ASSERT_EQ(out[static_cast<std::size_t>(i)], want) << "collective " << i;
    }
  });
}
