// The shared-memory collectives (src/coll/shared_memory_flat.cpp): barrier, bcast, reduce and
// allreduce on the world through the node board, forced and chosen by the default table,
// blocking, non-blocking and persistent, against sequential references on seeded data; more
// collectives in flight than the board has slots; disagreeing ranks; refusals.
#include <algorithm>
#include <string>

#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::block;
using cairn::test::has_text;
using cairn::test::mat2;
using cairn::test::mat_mismatch;
using cairn::test::mat_product;
using cairn::test::mat_product_of;
using cairn::test::mats;
using cairn::test::message_of;
using cairn::test::mismatch;
using cairn::test::run;
using cairn::test::small_block_sum;
using cairn::test::small_blocks_for;
using cairn::test::some_roots;

namespace {
using vec = std::vector<std::int64_t>;
// Up to the slot's 16384 bytes of int64 (2048 elements): one cache line, several, a full slot.
const std::size_t counts[] = {0, 1, 4, 7, 100, 2048};

std::vector<int> everyone(int p) {
  std::vector<int> all(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) all[static_cast<std::size_t>(r)] = r;
  return all;
}

}  // namespace

TEST(SharedMemory, EveryCollectiveForcedAndAutomatic) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const auto all = everyone(p);
    for (std::size_t n : counts) {
      for (bool forced : {true, false}) {
        const unsigned seed = static_cast<unsigned>(n * 7 + forced);
        const auto ar = forced ? cairn::allreduce_algorithm::shared_memory : cairn::allreduce_algorithm::automatic;
        // allreduce: out of place, in place, non-blocking, and a non-commutative product.
        vec in = small_blocks_for(n, seed, me, {0}), out(n, -1);
        w.allreduce(in, out, cairn::plus{}, ar);
        ASSERT_EQ(mismatch(out, small_block_sum(n, seed, all, 0)), "") << "allreduce n=" << n << " forced=" << forced;
        vec inout = in;
        w.allreduce(cairn::in_place, inout, cairn::plus{}, ar);
        ASSERT_EQ(mismatch(inout, out), "") << "in-place allreduce n=" << n;
        vec nb(n, -1);
        w.iallreduce(in, nb, cairn::plus{}, ar).wait();
        ASSERT_EQ(mismatch(nb, out), "") << "iallreduce n=" << n;
        const std::size_t m = std::min<std::size_t>(n, 512);  // 32-byte matrices: 16384 bytes
        auto mm = mats(m, seed, me, 0), prod = mm;
        w.allreduce(mm, prod, mat_product, ar);
        ASSERT_EQ(mat_mismatch(prod, mat_product_of(m, seed, all, 0)), "") << "product allreduce m=" << m;

        const auto rd = forced ? cairn::reduce_algorithm::shared_memory : cairn::reduce_algorithm::automatic;
        const auto bc = forced ? cairn::bcast_algorithm::shared_memory : cairn::bcast_algorithm::automatic;
        for (int root : some_roots(p)) {
          vec red(me == root ? n : 0, -1);
          w.reduce(in, red, root, cairn::plus{}, rd);
          if (me == root) {
            ASSERT_EQ(mismatch(red, out), "") << "reduce n=" << n << " root=" << root;
          }
          auto pm = mats(m, seed, me, 0);
          w.ireduce(cairn::in_place, pm, root, mat_product, rd).wait();
          ASSERT_EQ(mat_mismatch(pm, me == root ? mat_product_of(m, seed, all, 0) : mats(m, seed, me, 0)), "")
              << "in-place product reduce m=" << m << " root=" << root;
          vec buf = me == root ? block(n, seed, root) : vec(n, -1);
          w.bcast(buf, root, bc);
          ASSERT_EQ(mismatch(buf, block(n, seed, root)), "") << "bcast n=" << n << " root=" << root;
        }
        w.barrier();
      }
    }
  });
}

TEST(SharedMemory, MoreInFlightThanSlotsAndPersistent) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const auto all = everyone(p);
    // 20 non-blocking allreduces (the board has 8 slots per rank), waited for in reverse
    // order, with a blocking one and a point-to-point exchange in between.
    constexpr int k = 20;
    std::vector<vec> ins, outs;
    std::vector<cairn::request> reqs;
    ins.reserve(k);
    outs.reserve(k);
    for (int i = 0; i < k; ++i) {
      const std::size_t n = static_cast<std::size_t>(1 + i * 25);
      ins.push_back(small_blocks_for(n, static_cast<unsigned>(i), me, {0}));
      outs.emplace_back(n, -1);
      reqs.push_back(w.iallreduce(ins.back(), outs.back(), cairn::plus{}, cairn::allreduce_algorithm::shared_memory));
      if (i == k / 2) {
        vec one{me}, sum{0};
        w.allreduce(one, sum);
        ASSERT_EQ(sum[0], static_cast<std::int64_t>(p) * (p - 1) / 2);
      }
    }
    for (int i = k; i-- > 0;) {
      reqs[static_cast<std::size_t>(i)].wait();
      ASSERT_EQ(mismatch(outs[static_cast<std::size_t>(i)], small_block_sum(outs[static_cast<std::size_t>(i)].size(),
                                                                              static_cast<unsigned>(i), all, 0)),
                "")
          << "iallreduce " << i;
    }
    // Persistent: restarted with new data; the plan names the algorithm.
    vec in(9), out(9), buf(3);
    auto ar = w.allreduce_init(in, out, cairn::plus{}, cairn::allreduce_algorithm::shared_memory);
    auto bc = w.bcast_init(buf, p - 1, cairn::bcast_algorithm::shared_memory);
    auto bar = w.barrier_init();
    EXPECT_EQ(ar.plan().name, "allreduce/shared_memory");
    EXPECT_EQ(ar.plan().group_size, p);
    // The default table's choice on one node (both engines here), up to 16384 bytes.
    vec full(2048), full_out(2048), more(2049), more_out(2049);
    EXPECT_EQ(w.allreduce_init(full, full_out).plan().name, "allreduce/shared_memory");
    EXPECT_EQ(w.bcast_init(full, 0).plan().name, "bcast/shared_memory");
    EXPECT_EQ(w.reduce_init(full, full_out, 0).plan().name, "reduce/shared_memory");
    EXPECT_EQ(w.barrier_init().plan().name, "barrier/shared_memory");
    EXPECT_NE(w.allreduce_init(more, more_out).plan().name, "allreduce/shared_memory");
    if (p > 1) {
      auto some = w.group(cairn::ranks{0, p - 1});
      if (me < p - 1) {
        EXPECT_NE(some.allreduce_init(full, full_out).plan().name, "allreduce/shared_memory");
      }
    }
    for (unsigned it = 0; it < 12; ++it) {
      const vec fresh = small_blocks_for(9, it, me, {0});
      std::copy(fresh.begin(), fresh.end(), in.begin());
      if (me == p - 1) std::fill(buf.begin(), buf.end(), static_cast<std::int64_t>(it));
      ar.start();
      bc.start();
      bar.start();
      bar.wait();
      bc.wait();
      ar.wait();
      ASSERT_EQ(mismatch(out, small_block_sum(9, it, all, 0)), "") << "allreduce_init start " << it;
      ASSERT_EQ(mismatch(buf, vec(3, static_cast<std::int64_t>(it))), "") << "bcast_init start " << it;
    }
  });
}

TEST(SharedMemory, DisagreementsAndRefusals) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    if (p > 1) {
      // Rank 0 passes one element more: every rank reports it, nobody hangs, nothing is written.
      vec in(me == 0 ? 11 : 10, 1), out(in.size(), -5);
      const std::string msg =
          message_of([&] { w.allreduce(in, out, cairn::plus{}, cairn::allreduce_algorithm::shared_memory); });
      EXPECT_TRUE(has_text(msg, "ranks disagree on the call")) << msg;
      EXPECT_TRUE(has_text(msg, me == 0 ? "this rank allreduce with 88 bytes" : "rank 0 called allreduce with 88 bytes"))
          << msg;
      EXPECT_EQ(mismatch(out, vec(out.size(), -5)), "");
      // Roots that differ, non-blocking: reported by wait().
      vec buf(4, me);
      auto r = w.ibcast(buf, me == 0 ? 1 : 0, cairn::bcast_algorithm::shared_memory);
      EXPECT_TRUE(has_text(message_of([&] { r.wait(); }), "and root")) << "rank " << me;
      w.barrier();  // the board goes on
      // Not the world (the group of rank 0 alone): refused before anything is shared.
      auto first = w.group(cairn::ranks{0, 1});
      if (me == 0) {
        vec one(1), res(1);
        const std::string why = message_of(
            [&] { first.allreduce(one, res, cairn::plus{}, cairn::allreduce_algorithm::shared_memory); });
        EXPECT_TRUE(has_text(why, "the shared_memory algorithm runs on the world only")) << why;
      }
    }
    vec big(2049), res(2049);
    EXPECT_TRUE(has_text(
        message_of([&] { w.allreduce(big, res, cairn::plus{}, cairn::allreduce_algorithm::shared_memory); }),
        "cairn::allreduce: rank " + std::to_string(me) + ": the shared_memory algorithm needs at most 16384 bytes"));
    w.barrier();
  });
}
