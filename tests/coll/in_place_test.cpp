// The in-place forms (cairn::in_place, MPI_IN_PLACE semantics) of reduce, allreduce, gather,
// scatter, allgather, alltoall, reduce_scatter_block, scan and exscan: every algorithm x counts
// {0, 1, 7, 1000} on the world and on a shuffled group against sequential references on seeded
// data; non-roots mix both forms; persistent forms restarted with new data; bad sizes.
#include <algorithm>
#include <span>
#include <string>

#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::block;
using cairn::test::blocks_for;
using cairn::test::blocks_from;
using cairn::test::has_text;
using cairn::test::mat2;
using cairn::test::mat_datum;
using cairn::test::mat_mismatch;
using cairn::test::mat_product;
using cairn::test::mat_product_of;
using cairn::test::mats;
using cairn::test::message_of;
using cairn::test::mismatch;
using cairn::test::mul;
using cairn::test::on_world_and_group;
using cairn::test::run;
using cairn::test::small_block_sum;
using cairn::test::small_blocks_for;
using cairn::test::small_datum;
using cairn::test::some_roots;

namespace {
const std::size_t counts[] = {0, 1, 7, 1000};
using vec = std::vector<std::int64_t>;

// Seed of a test case (every rank derives the same).
unsigned seed_of(std::size_t n, int a, int b, std::size_t members) {
  return static_cast<unsigned>(n * 131 + static_cast<std::size_t>(a) * 17 +
                               static_cast<std::size_t>(b) * 3 + 1000 * members);
}

// `buf` with block `r` (n elements) replaced by `b`.
vec with_block(vec buf, std::size_t n, int r, const vec& b) {
  std::copy(b.begin(), b.end(),
            buf.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(r)));
  return buf;
}

}  // namespace

TEST(InPlace, ReduceAndAllreduce) {
  run([](cairn::world& w) {
    on_world_and_group(w, 11, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
      for (std::size_t n : counts) {
        for (int root : some_roots(p))
          for (auto alg : {cairn::reduce_algorithm::automatic, cairn::reduce_algorithm::binomial,
                           cairn::reduce_algorithm::reduce_scatter_gather}) {
            const unsigned seed = seed_of(n, root, static_cast<int>(alg), mem.size());
            vec buf = small_blocks_for(n, seed, wme, {0});
            // The root in place; the other members alternate between both forms.
            if (me == root || me % 2 == 1) {
              if (n % 2) {
                c.reduce(cairn::in_place, buf, root, cairn::plus{}, alg);
              } else {
                c.ireduce(cairn::in_place, buf, root, cairn::plus{}, alg).wait();
              }
            } else {
              vec none;
              c.reduce(buf, none, root, cairn::plus{}, alg);
            }
            const vec want =
                me == root ? small_block_sum(n, seed, mem, 0) : small_blocks_for(n, seed, wme, {0});
            ASSERT_EQ(mismatch(buf, want), "")
                << "reduce n=" << n << " root=" << root << " alg=" << static_cast<int>(alg)
                << " p=" << p << " rank " << me;
            // Non-commutative: rank order (a tree rooted at 0, forwarded to the root).
            auto m = mats(n, seed, wme, 0);
            c.reduce(cairn::in_place, m, root, mat_product, alg);
            ASSERT_EQ(mat_mismatch(
                          m, me == root ? mat_product_of(n, seed, mem, 0) : mats(n, seed, wme, 0)),
                      "")
                << "reduce product n=" << n << " root=" << root << " alg=" << static_cast<int>(alg);
          }
        for (auto alg :
             {cairn::allreduce_algorithm::automatic, cairn::allreduce_algorithm::recursive_doubling,
              cairn::allreduce_algorithm::ring, cairn::allreduce_algorithm::rabenseifner,
              cairn::allreduce_algorithm::hierarchical}) {
          const unsigned seed = seed_of(n, 0, static_cast<int>(alg), mem.size());
          vec buf = small_blocks_for(n, seed, wme, {0});
          if (n % 2) {
            c.allreduce(cairn::in_place, buf, cairn::plus{}, alg);
          } else {
            c.iallreduce(cairn::in_place, buf, cairn::plus{}, alg).wait();
          }
          ASSERT_EQ(mismatch(buf, small_block_sum(n, seed, mem, 0)), "")
              << "allreduce n=" << n << " alg=" << static_cast<int>(alg);
        }
      }
    });
  });
}

TEST(InPlace, GatherScatter) {
  run([](cairn::world& w) {
    on_world_and_group(w, 12, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
      const auto P = static_cast<std::size_t>(p);
      for (std::size_t n : counts)
        for (int root : some_roots(p)) {
          const unsigned seed = seed_of(n, root, 0, mem.size());
          // Gather: every block but the own one starts as -1; the root's fill in, a non-root's
          // buffer (in place) is only read.
          const vec mine = block(n, seed, wme);
          const vec before = with_block(vec(P * n, -1), n, me, mine);
          vec buf = before;
          if (me == root || me % 2 == 1) {
            if (n % 2) {
              c.gather(cairn::in_place, buf, root);
            } else {
              c.igather(cairn::in_place, buf, root).wait();
            }
          } else {
            vec none;
            c.gather(mine, none, root);
          }
          ASSERT_EQ(mismatch(buf, me == root ? blocks_from(n, seed, mem) : before), "")
              << "gather n=" << n << " root=" << root << " p=" << p << " rank " << me;
          // Scatter: the root's buffer is only read; a non-root in place gets its block at its
          // place, the rest untouched.
          const int wroot = mem[static_cast<std::size_t>(root)];
          const vec all = blocks_for(n, seed + 1, wroot, mem);
          const vec got = block(n, seed + 1, wroot, wme);
          if (me == root) {
            buf = all;
            if (n % 2) {
              c.scatter(buf, cairn::in_place, root);
            } else {
              c.iscatter(buf, cairn::in_place, root).wait();
            }
            ASSERT_EQ(mismatch(buf, all), "")
                << "scatter root n=" << n << " root=" << root << " p=" << p;
          } else if (me % 2 == 1) {
            buf.assign(P * n, -1);
            c.scatter(buf, cairn::in_place, root);
            ASSERT_EQ(mismatch(buf, with_block(vec(P * n, -1), n, me, got)), "")
                << "scatter in place n=" << n << " root=" << root << " p=" << p << " rank " << me;
          } else {
            vec out(n, -1);
            c.scatter(vec{}, out, root);
            ASSERT_EQ(mismatch(out, got), "")
                << "scatter n=" << n << " root=" << root << " p=" << p << " rank " << me;
          }
        }
    });
  });
}

TEST(InPlace, AllgatherAlltoall) {
  run([](cairn::world& w) {
    on_world_and_group(w, 13, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
      const auto P = static_cast<std::size_t>(p);
      for (std::size_t n : counts) {
        for (auto alg :
             {cairn::allgather_algorithm::automatic, cairn::allgather_algorithm::ring,
              cairn::allgather_algorithm::bruck, cairn::allgather_algorithm::recursive_doubling,
              cairn::allgather_algorithm::hierarchical}) {
          const unsigned seed = seed_of(n, 0, static_cast<int>(alg), mem.size());
          vec buf = with_block(vec(P * n, -1), n, me, block(n, seed, wme));
          if (n % 2) {
            c.allgather(cairn::in_place, buf, alg);
          } else {
            c.iallgather(cairn::in_place, buf, alg).wait();
          }
          ASSERT_EQ(mismatch(buf, blocks_from(n, seed, mem)), "")
              << "allgather n=" << n << " alg=" << static_cast<int>(alg) << " p=" << p << " rank "
              << me;
        }
        for (auto alg : {cairn::alltoall_algorithm::automatic, cairn::alltoall_algorithm::pairwise,
                         cairn::alltoall_algorithm::bruck}) {
          const unsigned seed = seed_of(n, 1, static_cast<int>(alg), mem.size());
          vec buf = blocks_for(n, seed, wme, mem);  // block j for member j
          if (n % 2) {
            c.alltoall(cairn::in_place, buf, alg);
          } else {
            c.ialltoall(cairn::in_place, buf, alg).wait();
          }
          ASSERT_EQ(mismatch(buf, blocks_from(n, seed, mem, wme)), "")
              << "alltoall n=" << n << " alg=" << static_cast<int>(alg) << " p=" << p << " rank "
              << me;
        }
      }
    });
  });
}

TEST(InPlace, ReduceScatterBlock) {
  run([](cairn::world& w) {
    on_world_and_group(w, 14, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
      // The board's paths where it runs every count (one node, straight copies allowed).
      using rsb = cairn::reduce_scatter_block_algorithm;
      std::vector<rsb> algs{rsb::automatic, rsb::recursive_halving, rsb::ring};
      std::vector<rsb> product_algs{rsb::automatic, rsb::recursive_halving};
      if (cairn::test::long_collectives_move_direct(w))
        for (rsb a : {rsb::shared_memory, rsb::shared_memory_direct}) {
          algs.push_back(a);
          product_algs.push_back(a);
        }
      // Staged through node memory: the world of one node. The output is the input's first
      // block, which rank 0 combines where it lies and the others staged before writing it.
      if (cairn::test::world_order(w, mem) && cairn::test::placement_of(w, mem).nodes == 1) {
        algs.push_back(rsb::shared_memory_staged);
        product_algs.push_back(rsb::shared_memory_staged);
      }
      for (std::size_t n : counts) {
        for (auto alg : algs) {
          const unsigned seed = seed_of(n, 0, static_cast<int>(alg), mem.size());
          const vec in = small_blocks_for(n, seed, wme, mem);
          vec buf = in;
          if (n % 2) {
            c.reduce_scatter_block(cairn::in_place, buf, cairn::plus{}, alg);
          } else {
            c.ireduce_scatter_block(cairn::in_place, buf, cairn::plus{}, alg).wait();
          }
          // The result in the first block, the rest as it was.
          ASSERT_EQ(mismatch(buf, with_block(in, n, 0, small_block_sum(n, seed, mem, wme))), "")
              << "n=" << n << " alg=" << static_cast<int>(alg) << " p=" << p << " rank " << me;
        }
        for (auto alg : product_algs) {
          const unsigned seed = seed_of(n, 1, static_cast<int>(alg), mem.size());
          std::vector<mat2> buf;
          for (int d : mem) {
            const auto m = mats(n, seed, wme, d);
            buf.insert(buf.end(), m.begin(), m.end());
          }
          c.reduce_scatter_block(cairn::in_place, buf, mat_product, alg);
          buf.resize(n);
          ASSERT_EQ(mat_mismatch(buf, mat_product_of(n, seed, mem, wme)), "")
              << "product n=" << n << " alg=" << static_cast<int>(alg) << " p=" << p;
        }
      }
    });
  });
}

TEST(InPlace, ScanExscan) {
  run([](cairn::world& w) {
    on_world_and_group(w, 15, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)];
      const auto below = std::span(mem).first(static_cast<std::size_t>(me));
      for (std::size_t n : counts) {
        const unsigned seed = seed_of(n, 0, 0, mem.size());
        const vec in = small_blocks_for(n, seed, wme, {0});
        vec incl = in, excl = in;
        if (n % 2) {
          c.scan(cairn::in_place, incl, cairn::plus{});
          c.iexscan(cairn::in_place, excl, cairn::plus{}).wait();
        } else {
          auto a = c.iscan(cairn::in_place, incl, cairn::plus{});
          c.exscan(cairn::in_place, excl, cairn::plus{});
          a.wait();
        }
        const vec prefix = small_block_sum(n, seed, {below.begin(), below.end()}, 0);
        ASSERT_EQ(mismatch(excl, me == 0 ? in : prefix), "")
            << "exscan n=" << n << " p=" << p << " rank " << me;
        ASSERT_EQ(mismatch(incl, small_block_sum(n, seed, {mem.begin(), mem.begin() + me + 1}, 0)),
                  "")
            << "scan n=" << n << " p=" << p << " rank " << me;
        // Non-commutative: products in rank order.
        auto pincl = mats(n, seed, wme, 0), pexcl = pincl;
        c.scan(cairn::in_place, pincl, mat_product);
        c.exscan(cairn::in_place, pexcl, mat_product);
        ASSERT_EQ(mat_mismatch(pexcl,
                               me == 0 ? mats(n, seed, wme, 0) : mat_product_of(n, seed, below, 0)),
                  "")
            << "exscan product n=" << n << " p=" << p << " rank " << me;
        ASSERT_EQ(
            mat_mismatch(pincl, mat_product_of(n, seed, std::span(mem).first(below.size() + 1), 0)),
            "")
            << "scan product n=" << n << " p=" << p << " rank " << me;
      }
    });
  });
}

// Every persistent in-place form, started several times with new data in the bound buffers.
TEST(InPlace, PersistentRestartedWithNewData) {
  run([](cairn::world& w) {
    on_world_and_group(w, 16, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank(), wme = mem[static_cast<std::size_t>(me)], root = p - 1;
      const auto P = static_cast<std::size_t>(p);
      const std::size_t n = 7;
      vec red(n), ar(n), gat(P * n), sca(P * n), ag(P * n), a2a(P * n), a2a_b(P * n), rsb(P * n),
          rsb_r(P * n), sc(n), ex(n);
      std::vector<cairn::persistent_request> reqs;
      reqs.push_back(c.reduce_init(cairn::in_place, red, root));
      reqs.push_back(
          c.allreduce_init(cairn::in_place, ar, cairn::plus{}, cairn::allreduce_algorithm::ring));
      reqs.push_back(c.gather_init(cairn::in_place, gat, root));
      reqs.push_back(c.scatter_init(sca, cairn::in_place, root));
      reqs.push_back(c.allgather_init(cairn::in_place, ag));
      reqs.push_back(c.alltoall_init(cairn::in_place, a2a, cairn::alltoall_algorithm::pairwise));
      reqs.push_back(c.alltoall_init(cairn::in_place, a2a_b, cairn::alltoall_algorithm::bruck));
      reqs.push_back(c.reduce_scatter_block_init(cairn::in_place, rsb));
      reqs.push_back(c.reduce_scatter_block_init(cairn::in_place, rsb_r, cairn::plus{},
                                                 cairn::reduce_scatter_block_algorithm::ring));
      reqs.push_back(c.scan_init(cairn::in_place, sc));
      reqs.push_back(c.exscan_init(cairn::in_place, ex));
      // The plan keeps its algorithm's name in place (the count check compares names).
      EXPECT_EQ(reqs[5].plan().name, "alltoall/pairwise");
      EXPECT_EQ(reqs[10].plan().name, "exscan/recursive_doubling");
      for (unsigned it = 0; it < 3; ++it) {
        const unsigned seed = seed_of(n, static_cast<int>(it), 7, mem.size());
        const vec mine = small_blocks_for(n, seed, wme, {0}),
                  blocks = small_blocks_for(n, seed, wme, mem);
        const int wroot = mem[static_cast<std::size_t>(root)];
        // New data copied into the bound buffers (assigning would move the storage).
        for (vec* b : {&red, &ar, &sc, &ex}) std::copy(mine.begin(), mine.end(), b->begin());
        for (vec* b : {&a2a, &a2a_b, &rsb, &rsb_r})
          std::copy(blocks.begin(), blocks.end(), b->begin());
        std::fill(gat.begin(), gat.end(), -1);
        std::fill(ag.begin(), ag.end(), -1);
        std::copy(mine.begin(), mine.end(),
                  gat.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)));
        std::copy(mine.begin(), mine.end(),
                  ag.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)));
        const vec all = small_blocks_for(n, seed + 1, wroot, mem);
        if (me == root) {
          sca = all;  // (same size: the storage stays)
        } else {
          std::fill(sca.begin(), sca.end(), -1);
        }
        for (auto& r : reqs) r.start();
        for (auto& r : reqs) r.wait();
        const vec sum = small_block_sum(n, seed, mem, 0);
        std::vector<int> upto(mem.begin(), mem.begin() + me + 1);
        ASSERT_EQ(mismatch(red, me == root ? sum : mine), "") << "reduce_init, start " << it;
        ASSERT_EQ(mismatch(ar, sum), "") << "allreduce_init, start " << it;
        vec gathered;
        for (int r : mem) {
          const auto b = small_blocks_for(n, seed, r, {0});
          gathered.insert(gathered.end(), b.begin(), b.end());
        }
        ASSERT_EQ(mismatch(gat, me == root ? gathered : with_block(vec(P * n, -1), n, me, mine)),
                  "")
            << "gather_init, start " << it;
        ASSERT_EQ(
            mismatch(sca, me == root ? all
                                     : with_block(vec(P * n, -1), n, me,
                                                  small_blocks_for(n, seed + 1, wroot, {wme}))),
            "")
            << "scatter_init, start " << it;
        ASSERT_EQ(mismatch(ag, gathered), "") << "allgather_init, start " << it;
        vec from;
        for (int r : mem) {
          const auto b = small_blocks_for(n, seed, r, {wme});
          from.insert(from.end(), b.begin(), b.end());
        }
        ASSERT_EQ(mismatch(a2a, from), "") << "alltoall_init pairwise, start " << it;
        ASSERT_EQ(mismatch(a2a_b, from), "") << "alltoall_init bruck, start " << it;
        const vec rs = with_block(blocks, n, 0, small_block_sum(n, seed, mem, wme));
        ASSERT_EQ(mismatch(rsb, rs), "") << "reduce_scatter_block_init, start " << it;
        ASSERT_EQ(mismatch(rsb_r, rs), "") << "reduce_scatter_block_init ring, start " << it;
        ASSERT_EQ(mismatch(sc, small_block_sum(n, seed, upto, 0)), "") << "scan_init, start " << it;
        upto.pop_back();
        ASSERT_EQ(mismatch(ex, me == 0 ? mine : small_block_sum(n, seed, upto, 0)), "")
            << "exscan_init, start " << it;
      }
    });
  });
}

// Wrong in-place buffer sizes are reported by the calling rank before anything is sent (every
// rank fails here, so nobody waits); the other forms still reject overlapping buffers.
TEST(InPlace, BadInput) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const auto P = static_cast<std::size_t>(p);
    const std::string rank = ": rank " + std::to_string(me) + ": ";
    const std::string odd = "in-place buffer holds " + std::to_string(4 * P + 1) +
                            " elements, not a multiple of the " + std::to_string(p) + " ranks";
    std::vector<int> bad(4 * P + 1), whole(4 * P);
    if (p > 1) {
      EXPECT_TRUE(has_text(message_of([&] { w.allgather(cairn::in_place, bad); }),
                           "cairn::allgather" + rank + odd));
      EXPECT_TRUE(has_text(message_of([&] { (void)w.ialltoall(cairn::in_place, bad); }),
                           "cairn::ialltoall" + rank + odd));
      EXPECT_TRUE(has_text(message_of([&] { w.gather(cairn::in_place, bad, 0); }),
                           "cairn::gather" + rank + odd));
      EXPECT_TRUE(has_text(message_of([&] { (void)w.scatter_init(bad, cairn::in_place, 0); }),
                           "cairn::scatter_init" + rank + odd));
      EXPECT_TRUE(has_text(message_of([&] { w.reduce_scatter_block(cairn::in_place, bad); }),
                           "cairn::reduce_scatter_block" + rank + odd));
    }
    EXPECT_TRUE(has_text(message_of([&] { w.reduce(cairn::in_place, whole, p); }),
                         "root " + std::to_string(p) + " is outside"));
    EXPECT_TRUE(has_text(message_of([&] {
                           w.reduce_scatter_block(
                               cairn::in_place, whole,
                               cairn::op([](int a, int b) { return a - b; }, false),
                               cairn::reduce_scatter_block_algorithm::ring);
                         }),
                         "the ring algorithm needs a commutative operation"));
    // The normal forms keep rejecting overlap.
    EXPECT_TRUE(has_text(message_of([&] { w.allgather(std::span(whole).first(4), whole); }),
                         "input and output overlap"));
    EXPECT_TRUE(has_text(message_of([&] { w.scan(whole, whole); }), "input and output overlap"));
  });
}
