// The shared-memory collectives: barrier, bcast, reduce, allreduce, allgather and
// reduce_scatter_block through the node board on the world (src/coll/board/shared_memory_flat.cpp)
// and on groups (src/coll/board/shared_memory_group.cpp), through the slots and, past a slot's
// 16384 bytes, straight between the buffers (src/coll/board/shared_memory_direct.cpp), straight at
// every size (shared_memory_direct) and staged through node memory in chunks
// (src/coll/board/shared_memory_staged.cpp; the variant coll_shared_memory_staged_small_chunks
// runs it with chunks of 256 bytes), forced and chosen by the default table, blocking,
// non-blocking and persistent, against sequential references on seeded data; more collectives in
// flight than the board has slots, on overlapping groups; disagreeing ranks; refusals.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <thread>

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
// Up to the slot's 16384 bytes of int64 (2048 elements): one cache line, several, a full slot;
// then past it (moved straight between the buffers): just past, and long; and longer than the
// staging ring's depth of default chunks (560000 bytes: 5 chunks of 128 KiB, 4 in flight).
const std::size_t counts[] = {0, 1, 4, 7, 100, 2048, 2049, 30000, 70000};

// How a test calls a board collective: forced onto the board (slots, straight beyond), chosen
// by the table, forced straight between the buffers, forced through the staging rings.
enum class mode { board, automatic, direct, staged };

std::vector<int> everyone(int p) {
  std::vector<int> all(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) all[static_cast<std::size_t>(r)] = r;
  return all;
}

}  // namespace

TEST(SharedMemory, EveryCollectiveForcedAndAutomatic) {
  run([](cairn::world& w) {
    const int me = w.rank();
    // The world (its fixed slots) and a shuffled group (keyed slots); `all` in group order.
    cairn::test::on_world_and_group(w, 5, [&](auto& g, const std::vector<int>& all) {
      const int p = static_cast<int>(all.size());
      for (std::size_t n : counts) {
        for (mode how : {mode::board, mode::automatic, mode::direct, mode::staged}) {
          if (how == mode::direct && !cairn::test::long_collectives_move_direct(w)) continue;
          const unsigned seed = static_cast<unsigned>(n * 7) + static_cast<unsigned>(how);
          auto pick = [how](auto board, auto direct, auto staged) {
            using alg = decltype(board);
            return how == mode::board    ? board
                   : how == mode::direct ? direct
                   : how == mode::staged ? staged
                                         : alg::automatic;
          };
          using ar_alg = cairn::allreduce_algorithm;
          const auto ar = pick(ar_alg::shared_memory, ar_alg::shared_memory_direct,
                               ar_alg::shared_memory_staged);
          // allreduce: out of place, in place, non-blocking, and a non-commutative product.
          vec in = small_blocks_for(n, seed, me, {0}), out(n, -1);
          g.allreduce(in, out, cairn::plus{}, ar);
          ASSERT_EQ(mismatch(out, small_block_sum(n, seed, all, 0)), "")
              << "allreduce n=" << n << " mode=" << static_cast<int>(how);
          vec inout = in;
          g.allreduce(cairn::in_place, inout, cairn::plus{}, ar);
          ASSERT_EQ(mismatch(inout, out), "") << "in-place allreduce n=" << n;
          vec nb(n, -1);
          g.iallreduce(in, nb, cairn::plus{}, ar).wait();
          ASSERT_EQ(mismatch(nb, out), "") << "iallreduce n=" << n;
          const std::size_t m =
              std::min<std::size_t>(n, 1000);  // 32-byte matrices: 16384 bytes at 512
          auto mm = mats(m, seed, me, 0), prod = mm;
          g.allreduce(mm, prod, mat_product, ar);
          ASSERT_EQ(mat_mismatch(prod, mat_product_of(m, seed, all, 0)), "")
              << "product allreduce m=" << m;

          using rd_alg = cairn::reduce_algorithm;
          using bc_alg = cairn::bcast_algorithm;
          const auto rd = pick(rd_alg::shared_memory, rd_alg::shared_memory_direct,
                               rd_alg::shared_memory_staged);
          const auto bc = pick(bc_alg::shared_memory, bc_alg::shared_memory_direct,
                               bc_alg::shared_memory_staged);
          for (int root : some_roots(p)) {
            const bool at_root = g.rank() == root;
            const int wroot = all[static_cast<std::size_t>(root)];
            vec red(at_root ? n : 0, -1);
            g.reduce(in, red, root, cairn::plus{}, rd);
            if (at_root) {
              ASSERT_EQ(mismatch(red, out), "") << "reduce n=" << n << " root=" << root;
            }
            auto pm = mats(m, seed, me, 0);
            g.ireduce(cairn::in_place, pm, root, mat_product, rd).wait();
            ASSERT_EQ(
                mat_mismatch(pm, at_root ? mat_product_of(m, seed, all, 0) : mats(m, seed, me, 0)),
                "")
                << "in-place product reduce m=" << m << " root=" << root << " n=" << n
                << " mode=" << static_cast<int>(how);
            vec buf = at_root ? block(n, seed, wroot) : vec(n, -1);
            g.bcast(buf, root, bc);
            ASSERT_EQ(mismatch(buf, block(n, seed, wroot)), "")
                << "bcast n=" << n << " root=" << root;
          }
          // allgather, out of place, in place, non-blocking; blocks of n elements from every
          // member at its group rank's place.
          using ag_alg = cairn::allgather_algorithm;
          const auto ag = pick(ag_alg::shared_memory, ag_alg::shared_memory_direct,
                               ag_alg::shared_memory_staged);
          vec mine = block(n, seed, w.rank()), gathered(n * all.size(), -1), want;
          for (int q : all) {
            const vec b = block(n, seed, q);
            want.insert(want.end(), b.begin(), b.end());
          }
          g.allgather(mine, gathered, ag);
          ASSERT_EQ(mismatch(gathered, want), "")
              << "allgather n=" << n << " mode=" << static_cast<int>(how);
          vec whole(n * all.size(), -1);
          std::copy(mine.begin(), mine.end(),
                    whole.begin() + static_cast<std::ptrdiff_t>(n) * g.rank());
          g.allgather(cairn::in_place, whole, ag);
          ASSERT_EQ(mismatch(whole, want), "") << "in-place allgather n=" << n;
          vec nbg(n * all.size(), -1);
          g.iallgather(mine, nbg, ag).wait();
          ASSERT_EQ(mismatch(nbg, want), "") << "iallgather n=" << n;
          // reduce_scatter_block: a block of n for every member, out of place blocking and
          // non-blocking, in place, and a non-commutative product of matrices.
          using rs_alg = cairn::reduce_scatter_block_algorithm;
          const auto rs = pick(rs_alg::shared_memory, rs_alg::shared_memory_direct,
                               rs_alg::shared_memory_staged);
          const vec parts = small_blocks_for(n, seed, me, all);
          vec mine_sum(n, -1), nb_sum(n, -1);
          g.reduce_scatter_block(parts, mine_sum, cairn::plus{}, rs);
          ASSERT_EQ(mismatch(mine_sum, small_block_sum(n, seed, all, me)), "")
              << "reduce_scatter_block n=" << n << " mode=" << static_cast<int>(how);
          g.ireduce_scatter_block(parts, nb_sum, cairn::plus{}, rs).wait();
          ASSERT_EQ(mismatch(nb_sum, mine_sum), "") << "ireduce_scatter_block n=" << n;
          std::vector<mat2> mparts, mprod(m);
          for (int d : all) {
            const auto part = mats(m, seed, me, d);
            mparts.insert(mparts.end(), part.begin(), part.end());
          }
          g.reduce_scatter_block(mparts, mprod, mat_product, rs);
          ASSERT_EQ(mat_mismatch(mprod, mat_product_of(m, seed, all, me)), "")
              << "product reduce_scatter_block m=" << m;
          g.barrier();
        }
      }
    });
  });
}

// Collectives on overlapping groups in flight at once on the board's keyed slots: every rank
// starts a round of non-blocking allreduces, reduces, bcasts and barriers on the world, on
// two overlapping halves and on pairs, more than the 8 slots per rank, and waits for them in
// its own order; in odd rounds the long ones go through the staging rings.
TEST(SharedMemory, OverlappingGroupsInFlight) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    std::vector<std::vector<int>> sets{everyone(p)};
    std::vector<int> low, high;
    for (int r = 0; r < p; ++r) {
      if (r <= p / 2) low.push_back(r);
      if (r >= (p - 1) / 2) high.push_back(r);  // overlaps low in the middle rank(s)
    }
    std::reverse(high.begin(), high.end());  // group order differs from world order
    sets.push_back(low);
    sets.push_back(high);
    sets.push_back({0, p - 1});
    if (p > 2) sets.push_back({p - 1, 1});
    for (unsigned round = 0; round < 6; ++round) {
      struct item {
        std::vector<int> mem;
        int kind;
        vec in, out;
      };
      std::vector<item> items;
      std::vector<cairn::request> reqs;
      items.reserve(64);
      for (int rep = 0; rep < 3; ++rep)
        for (std::size_t i = 0; i < sets.size(); ++i) {
          std::vector<int> mem = sets[i];
          mem.erase(std::unique(mem.begin(), mem.end()), mem.end());
          auto g = w.group(mem);
          if (g.rank() < 0) continue;
          const int kind = static_cast<int>((i + static_cast<std::size_t>(rep) + round) % 4);
          // Every fourth one past a slot's payload (moved straight between the buffers).
          const std::size_t n = ((i + static_cast<std::size_t>(rep) + round) % 4 == 1 ? 2049 : 1) +
                                (i * 37 + static_cast<std::size_t>(rep) * 11 + round) % 300;
          const unsigned seed =
              round * 100 + static_cast<unsigned>(rep * 10) + static_cast<unsigned>(i);
          items.push_back({mem, kind, small_blocks_for(n, seed, me, {0}), vec(n, -1)});
          item& it = items.back();
          // Odd rounds: the long ones forced through the keyed slots' staging rings.
          const bool staged = round % 2 == 1 && n > 2048;
          using ar = cairn::allreduce_algorithm;
          using rd = cairn::reduce_algorithm;
          using bc = cairn::bcast_algorithm;
          if (kind == 0)
            reqs.push_back(g.iallreduce(it.in, it.out, cairn::plus{},
                                        staged ? ar::shared_memory_staged : ar::automatic));
          if (kind == 1)
            reqs.push_back(g.ireduce(it.in, it.out, 0, cairn::plus{},
                                     staged ? rd::shared_memory_staged : rd::automatic));
          if (kind == 2) {
            it.out = g.rank() == 0 ? block(n, seed, mem[0]) : vec(n, -1);
            reqs.push_back(g.ibcast(it.out, 0, staged ? bc::shared_memory_staged : bc::automatic));
          }
          if (kind == 3) reqs.push_back(g.ibarrier());
        }
      std::vector<std::size_t> order(reqs.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::mt19937 mine(round * 31 + static_cast<unsigned>(me));
      std::shuffle(order.begin(), order.end(), mine);
      for (std::size_t o : order) reqs[o].wait();
      std::size_t k = 0;
      for (int rep = 0; rep < 3; ++rep)
        for (std::size_t i = 0; i < sets.size(); ++i) {
          std::vector<int> mem = sets[i];
          mem.erase(std::unique(mem.begin(), mem.end()), mem.end());
          if (std::find(mem.begin(), mem.end(), me) == mem.end()) continue;
          const item& it = items[k++];
          const std::size_t n = it.in.size();
          const unsigned seed =
              round * 100 + static_cast<unsigned>(rep * 10) + static_cast<unsigned>(i);
          if (it.kind == 0 || (it.kind == 1 && me == mem[0])) {
            ASSERT_EQ(mismatch(it.out, small_block_sum(n, seed, mem, 0)), "")
                << "round " << round << " set " << i;
          }
          if (it.kind == 2) {
            ASSERT_EQ(mismatch(it.out, block(n, seed, mem[0])), "")
                << "bcast, round " << round << " set " << i;
          }
        }
    }
  });
}

TEST(SharedMemory, MoreInFlightThanSlotsAndPersistent) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const auto all = everyone(p);
    // 40 non-blocking allreduces (the board has 32 slots per rank), every third one past a
    // slot's payload, waited for in reverse order, with a blocking one in between.
    constexpr int k = 40;
    std::vector<vec> ins, outs;
    std::vector<cairn::request> reqs;
    ins.reserve(k);
    outs.reserve(k);
    for (int i = 0; i < k; ++i) {
      const std::size_t n = static_cast<std::size_t>(i % 3 == 2 ? 2048 + i * 100 : 1 + i * 25);
      ins.push_back(small_blocks_for(n, static_cast<unsigned>(i), me, {0}));
      outs.emplace_back(n, -1);
      reqs.push_back(w.iallreduce(ins.back(), outs.back(), cairn::plus{},
                                  cairn::allreduce_algorithm::shared_memory));
      if (i == k / 2) {
        vec one{me}, sum{0};
        w.allreduce(one, sum);
        ASSERT_EQ(sum[0], static_cast<std::int64_t>(p) * (p - 1) / 2);
      }
    }
    for (int i = k; i-- > 0;) {
      reqs[static_cast<std::size_t>(i)].wait();
      ASSERT_EQ(mismatch(outs[static_cast<std::size_t>(i)],
                         small_block_sum(outs[static_cast<std::size_t>(i)].size(),
                                         static_cast<unsigned>(i), all, 0)),
                "")
          << "iallreduce " << i;
    }
    // 70 non-blocking bcasts and reduces whose roots rotate, mixed with allreduces, on the
    // world's slots: most ranks return from most of them at once (eager), so their tails wrap
    // around the slots twice; waited for in reverse order, every result right.
    {
      constexpr int m = 70;
      std::vector<vec> bufs, rin, rout, ain, aout;
      std::vector<cairn::request> rs;
      for (int i = 0; i < m; ++i) {
        const int root = i % p;
        const std::size_t n = static_cast<std::size_t>(1 + i % 5);
        if (i % 3 == 0) {
          bufs.emplace_back(n, me == root ? i * 10 + root : -1);
          rs.push_back(w.ibcast(bufs.back(), root, cairn::bcast_algorithm::shared_memory));
        } else if (i % 3 == 1) {
          rin.emplace_back(n, me + i);
          rout.emplace_back(n, -1);
          rs.push_back(w.ireduce(rin.back(), rout.back(), root, cairn::plus{},
                                 cairn::reduce_algorithm::shared_memory));
        } else {
          ain.emplace_back(n, me * i);
          aout.emplace_back(n, -1);
          rs.push_back(w.iallreduce(ain.back(), aout.back(), cairn::plus{},
                                    cairn::allreduce_algorithm::shared_memory));
        }
      }
      for (int i = m; i-- > 0;) rs[static_cast<std::size_t>(i)].wait();
      std::size_t b = 0, r = 0, a = 0;
      const std::int64_t ranks = static_cast<std::int64_t>(p) * (p - 1) / 2;
      for (int i = 0; i < m; ++i) {
        const int root = i % p;
        if (i % 3 == 0) {
          ASSERT_EQ(mismatch(bufs[b], vec(bufs[b].size(), i * 10 + root)), "") << "ibcast " << i;
          ++b;
        } else if (i % 3 == 1) {
          if (me == root) {
            ASSERT_EQ(
                mismatch(rout[r], vec(rout[r].size(), ranks + static_cast<std::int64_t>(p) * i)),
                "")
                << "ireduce " << i;
          } else {
            ASSERT_EQ(mismatch(rout[r], vec(rout[r].size(), -1)), "")
                << "ireduce " << i << " wrote a non-root";
          }
          ++r;
        } else {
          ASSERT_EQ(mismatch(aout[a], vec(aout[a].size(), ranks * i)), "") << "iallreduce " << i;
          ++a;
        }
      }
    }
    // A root 40 bcasts ahead of ranks that are still asleep, then non-roots 40 reduces ahead
    // of their root: the early ones return at once until the window of 32 is full, and wait
    // there for the others to catch up (their tails fill the ring and wrap). In bcast #5 the
    // non-roots pass one element more: they report it at once; the root, whose tails check
    // it later, from one of its later calls.
    if (p > 1) {
      constexpr int m = 40;
      auto late_start = [](bool late) {
        if (late) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      };
      late_start(me != 0);
      int reports = 0;
      for (int i = 0; i < m; ++i) {
        vec b(i == 5 && me != 0 ? 4 : 3, me == 0 ? 1000 + i : -1);
        const std::string msg = message_of([&] { w.bcast(b, 0); });
        if (msg != "no error") {
          ++reports;
          EXPECT_TRUE(has_text(msg, "ranks disagree on the call")) << msg;
          EXPECT_TRUE(me == 0 ? i >= 5 && has_text(msg, "after this rank's bcast #") : i == 5)
              << "bcast " << i << ": " << msg;
        }
        if (i != 5 || me == 0) {
          ASSERT_EQ(mismatch(b, vec(3, 1000 + i)), "") << "bcast " << i;
        }
      }
      const std::string after = message_of([&] { w.barrier(); });
      if (after != "no error") ++reports;
      EXPECT_EQ(reports, 1) << after;
      late_start(me == 0);
      for (int i = 0; i < m; ++i) {
        vec x(2, me * 3 + i), y(2, -1);
        w.reduce(x, y, 0);
        const std::int64_t want =
            3 * static_cast<std::int64_t>(p) * (p - 1) / 2 + static_cast<std::int64_t>(p) * i;
        ASSERT_EQ(mismatch(y, vec(2, me == 0 ? want : -1)), "") << "reduce " << i;
      }
    }
    // Persistent: restarted with new data; the plan names the algorithm.
    vec in(9), out(9), buf(3);
    auto ar = w.allreduce_init(in, out, cairn::plus{}, cairn::allreduce_algorithm::shared_memory);
    auto bc = w.bcast_init(buf, p - 1, cairn::bcast_algorithm::shared_memory);
    auto bar = w.barrier_init();
    EXPECT_EQ(ar.plan().name, "allreduce/shared_memory");
    EXPECT_EQ(ar.plan().group_size, p);
    // Plans are cached: a second init of the same collective shares the first's.
    EXPECT_EQ(
        &w.allreduce_init(in, out, cairn::plus{}, cairn::allreduce_algorithm::shared_memory).plan(),
        &ar.plan());
    EXPECT_NE(&bc.plan(), &ar.plan());
    // The default table's choice on one node (both engines here): the board (through the slots
    // or straight between the buffers: selection_table_test checks which) up to 16384 bytes,
    // and past that where ranks can copy straight between their buffers (the threads engine;
    // MPI when the launch probe allowed cross-memory copies).
    vec full(2048), full_out(2048), more(2049), more_out(2049);
    using cairn::test::on_board_plan;
    EXPECT_PRED1(on_board_plan, w.allreduce_init(full, full_out).plan().name);
    EXPECT_PRED1(on_board_plan, w.bcast_init(full, 0).plan().name);
    EXPECT_PRED1(on_board_plan, w.reduce_init(full, full_out, 0).plan().name);
    EXPECT_EQ(w.barrier_init().plan().name, "barrier/shared_memory");
    const std::string past = w.allreduce_init(more, more_out).plan().name;
    if (w.engine() == cairn::engine::threads) {
      EXPECT_EQ(past, "allreduce/shared_memory_direct");
    } else {
      EXPECT_TRUE(on_board_plan(past) || past == "allreduce/recursive_doubling") << past;
    }
    if (p > 1) {  // and on groups
      auto some = w.group(cairn::ranks{0, p - 1});
      if (me < p - 1) {
        EXPECT_PRED1(on_board_plan, some.allreduce_init(full, full_out).plan().name);
        EXPECT_EQ(some.allreduce_init(full, full_out).plan().group_size, p - 1);
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
      ASSERT_EQ(mismatch(buf, vec(3, static_cast<std::int64_t>(it))), "")
          << "bcast_init start " << it;
    }
  });
}

TEST(SharedMemory, DisagreementsAndRefusals) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    if (p > 1) {
      // A rank whose part needs no other rank's data (a bcast's root, a reduce's non-root, a
      // generalized reduce's participant that receives nothing) may return before the others'
      // calls are visible: it reports a disagreement from its next board collective, `next`,
      // once that completed. The report, from the call or from `next`:
      auto reported = [](const std::string& msg, const std::function<void()>& next) {
        const std::string later = message_of(next);
        if (msg != "no error") {
          EXPECT_EQ(later, "no error");
          return msg;
        }
        EXPECT_TRUE(has_text(later, "had returned")) << later;
        return later;
      };
      // Rank 0 passes one element more: every rank reports it, nobody hangs, nothing is written.
      vec in(me == 0 ? 11 : 10, 1), out(in.size(), -5);
      const std::string msg = message_of(
          [&] { w.allreduce(in, out, cairn::plus{}, cairn::allreduce_algorithm::shared_memory); });
      EXPECT_TRUE(has_text(msg, "ranks disagree on the call")) << msg;
      EXPECT_TRUE(has_text(msg, me == 0 ? "this rank allreduce with 88 bytes"
                                        : "rank 0 called allreduce with 88 bytes"))
          << msg;
      EXPECT_EQ(mismatch(out, vec(out.size(), -5)), "");
      // The same count by two paths (rank 0 staged, the others straight between the buffers):
      // the signatures name the path, so every rank reports it and nothing is written.
      if (cairn::test::long_collectives_move_direct(w)) {
        using alg = cairn::allreduce_algorithm;
        vec pin(100, 1), pout(100, -5);
        const std::string pmsg = message_of([&] {
          w.allreduce(pin, pout, cairn::plus{},
                      me == 0 ? alg::shared_memory_staged : alg::shared_memory_direct);
        });
        EXPECT_TRUE(has_text(pmsg, me == 0 ? "this rank allreduce with 800 bytes staged through "
                                             "node memory"
                                           : "rank 0 called allreduce with 800 bytes staged "
                                             "through node memory"))
            << pmsg;
        EXPECT_TRUE(has_text(pmsg, "straight between the buffers")) << pmsg;
        EXPECT_EQ(mismatch(pout, vec(pout.size(), -5)), "");
      }
      // Counts on either side of a slot's payload, chosen by the default table: rank 0's 16384
      // bytes go through its slot, the others' 16392 straight between the buffers. Both are
      // board collectives, so the signatures meet: every rank reports it, nothing is written.
      // (Where long collectives run by messages instead, their gate meets the board's ranks:
      // CountsStraddlingTheBoardFailEverywhere.)
      vec probe(2049), probe_out(2049);
      if (cairn::test::on_board_plan(w.allreduce_init(probe, probe_out).plan().name)) {
        vec sin(me == 0 ? 2048 : 2049, 1), sout(sin.size(), -5);
        const std::string smsg = message_of([&] { w.allreduce(sin, sout); });
        EXPECT_TRUE(has_text(smsg, me == 0 ? "this rank allreduce with 16384 bytes"
                                           : "rank 0 called allreduce with 16384 bytes"))
            << smsg;
        EXPECT_EQ(mismatch(sout, vec(sout.size(), -5)), "");
        std::vector<int> odd = everyone(p);
        std::rotate(odd.begin(), odd.begin() + 1, odd.end());  // a group: keyed slots
        vec bbuf(me == p - 1 ? 2048 : 4000, me);
        auto rotated = w.group(odd);
        const std::string bmsg =
            reported(message_of([&] { rotated.bcast(bbuf, 0); }), [&] { rotated.barrier(); });
        EXPECT_TRUE(has_text(bmsg, "ranks disagree on the call") && has_text(bmsg, "on a group of"))
            << bmsg;
        EXPECT_EQ(mismatch(bbuf, vec(bbuf.size(), me)), "");
      }
      // Roots that differ, non-blocking: reported by wait().
      vec buf(4, me);
      auto r = w.ibcast(buf, me == 0 ? 1 : 0, cairn::bcast_algorithm::shared_memory);
      EXPECT_TRUE(has_text(message_of([&] { r.wait(); }), "and root")) << "rank " << me;
      w.barrier();  // the board goes on
      // The same on a group in another order (keyed slots): the readers report it.
      std::vector<int> rev = everyone(p);
      std::reverse(rev.begin(), rev.end());
      auto back = w.group(rev);
      vec gin(me == 0 ? 3 : 2, 1), gout(gin.size(), -5);
      const std::string gmsg = message_of([&] { back.allreduce(gin, gout); });
      EXPECT_TRUE(has_text(gmsg, me == 0 ? "this rank allreduce with 24 bytes"
                                         : "rank 0 called allreduce with 24 bytes"))
          << gmsg;
      EXPECT_TRUE(has_text(gmsg, "on a group of " + std::to_string(p) + " ranks")) << gmsg;
      EXPECT_EQ(mismatch(gout, vec(gout.size(), -5)), "");
      back.barrier();
      // Calls that differ on a group: every member reads every slot, so every rank reports
      // the disagreement (at once or, having returned first, from the next barrier), nobody
      // waits for a slot nobody writes, and nothing is written.
      auto barrier = [&] { back.barrier(); };
      // A reduce whose root differs: world rank 0 (the group's last) names group rank p - 2.
      if (p > 2) {
        vec rin(4, me), rout(4, -5);
        auto r = back.ireduce(rin, rout, me == 0 ? p - 2 : 0, cairn::plus{},
                              cairn::reduce_algorithm::shared_memory);
        const std::string rmsg = reported(message_of([&] { r.wait(); }), barrier);
        EXPECT_TRUE(has_text(
            rmsg, me == 0
                      ? "rank " + std::to_string(p - 1) + " called reduce with 32 bytes and root 0"
                      : "rank 0 called reduce with 32 bytes and root " + std::to_string(p - 2)))
            << rmsg;
        EXPECT_EQ(mismatch(rout, vec(4, -5)), "");
      }
      // A bcast root named by one rank that the others take for a non-root (with roles by
      // kind, it waited for a slot its root never wrote), then a kind that differs.
      {
        vec buf(3, me);
        const int root = me == p - 1 ? 1 : 0;
        const std::string bmsg = reported(message_of([&] { back.bcast(buf, root); }), barrier);
        EXPECT_TRUE(has_text(bmsg, "ranks disagree on the call")) << bmsg;
        EXPECT_TRUE(has_text(bmsg, "and root")) << bmsg;
        EXPECT_EQ(mismatch(buf, vec(3, me)), "");
        vec kin(2, me), kout(2, -5);
        const std::string kmsg = reported(message_of([&] {
                                            if (me == 0)
                                              back.bcast(kin, 0);
                                            else
                                              back.reduce(kin, kout, 0);
                                          }),
                                          barrier);
        EXPECT_TRUE(has_text(
            kmsg, me == 0 ? "this rank bcast with 16 bytes" : "called bcast with 16 bytes"))
            << kmsg;
        EXPECT_EQ(mismatch(kout, vec(2, -5)), "");
      }
      // A generalized reduce whose receiver sets differ (same members, so the same group).
      {
        const std::vector<int> all = everyone(p), r1{0}, r2{p - 1};
        vec gin2(2, me + 1), gout2(2, -5);
        const std::string smsg =
            reported(message_of([&] {
                       w.reduce(all, me == 0 ? r2 : r1, gin2, gout2, cairn::plus{},
                                {.algorithm = cairn::generalized_reduce_algorithm::shared_memory});
                     }),
                     barrier);
        EXPECT_TRUE(has_text(smsg, "other participants or receivers")) << smsg;
        EXPECT_EQ(mismatch(gout2, vec(2, -5)), "");
      }
      // The same count staged on one rank and through the slots on the others: the
      // signatures name the path, so every rank reports it and nothing is written.
      {
        using alg = cairn::allreduce_algorithm;
        vec sin(4, me), sout(4, -5);
        const std::string smsg =
            reported(message_of([&] {
                       back.allreduce(sin, sout, cairn::plus{},
                                      me == 0 ? alg::shared_memory_staged : alg::shared_memory);
                     }),
                     barrier);
        EXPECT_TRUE(has_text(smsg, "ranks disagree on the call")) << smsg;
        EXPECT_TRUE(has_text(smsg, "32 bytes staged through node memory")) << smsg;
        EXPECT_EQ(mismatch(sout, vec(4, -5)), "");
      }
      // Nothing leaked: more collectives on the group than it has slots, all right.
      for (int i = 0; i < 20; ++i) {
        vec x(2, me + i), y(2);
        back.allreduce(x, y);
        const std::int64_t want =
            static_cast<std::int64_t>(p) * (p - 1) / 2 + static_cast<std::int64_t>(p) * i;
        ASSERT_EQ(mismatch(y, vec(2, want)), "") << "round " << i;
      }
      w.barrier();
    }
    // Past a slot's payload the generalized reduce, forced onto the board, moves its data
    // straight between the buffers where allreduce does; elsewhere (MPI without cross-memory
    // copies) the board refuses it.
    vec big(2049);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::int64_t>(i) * 5 + me;
    cairn::generalized_reduce_options board;
    board.algorithm = cairn::generalized_reduce_algorithm::shared_memory;
    const std::vector<int> all = everyone(p), first_half(all.begin(), all.begin() + (p + 1) / 2),
                           last{p - 1};
    const bool participates = me < (p + 1) / 2, receives = me == p - 1;
    vec gin = participates ? big : vec{}, gout(receives ? big.size() : 0, -1);
    const std::string msg =
        participates || receives
            ? message_of([&] { w.reduce(first_half, last, gin, gout, cairn::plus{}, board); })
            : "no error";  // ranks in neither set do not call
    if (cairn::test::long_collectives_move_direct(w)) {
      EXPECT_EQ(msg, "no error");
      if (receives) {
        const std::int64_t q = (p + 1) / 2;
        for (std::size_t i = 0; i < gout.size(); ++i)
          ASSERT_EQ(gout[i], static_cast<std::int64_t>(i) * 5 * q + q * (q - 1) / 2)
              << "element " << i;
      }
    } else if (participates || receives) {
      EXPECT_TRUE(has_text(
          msg, "cairn::reduce: rank " + std::to_string(me) +
                   ": the shared_memory algorithm needs at most 16384 bytes per rank where "
                   "processes cannot copy from each other"))
          << msg;
    }
    if (!cairn::test::long_collectives_move_direct(w)) {  // nor straight at any size
      vec din(4, me), dout(4);
      const std::string dmsg = message_of([&] {
        w.allreduce(din, dout, cairn::plus{}, cairn::allreduce_algorithm::shared_memory_direct);
      });
      EXPECT_TRUE(has_text(dmsg,
                           "the shared_memory_direct algorithm needs ranks that can copy "
                           "from each other"))
          << dmsg;
    }
    w.barrier();
  });
}

namespace {
double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

// Short automatic allreduces on the world (at most a slot's 16384 bytes) and barriers run without
// being planned when nothing else of the rank's is on the board (run_short_allreduce): here beside
// what makes them take the general path instead (a non-blocking collective in flight, a bcast's
// tail, a slot not yet free after a window of eager bcasts) and beside ranks that arrive late (the
// wait moves to the general loop), with sums, a non-commutative product (rank order) and the value
// form; then a disagreement on the count, which every rank reports. On the threads engine the
// table moves those of 1 KiB and more straight between the buffers, as the short path does then.
TEST(SharedMemory, ShortCollectivesBesideOthers) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const std::vector<int> all = everyone(p);
    std::mt19937 pick(20261204);  // the same choices on every rank
    for (unsigned it = 0; it < 300; ++it) {
      // 8..128 bytes of int64, or 4096, 4104 and either side of a slot's 16384 (2048; one
      // more moves straight between the buffers or by messages; the threads engine does so
      // from 1 KiB)
      const std::size_t sizes[] = {1 + pick() % 16, 512, 513, 2048, 2049};
      const std::size_t n = sizes[pick() % 5 == 0 ? 1 + pick() % 4 : 0];
      const std::size_t m = 1 + pick() % 8;  // 16..128 bytes of mat2
      const unsigned before = pick() % 5, late = pick() % static_cast<unsigned>(p);
      const bool sleeps = p > 1 && pick() % 8 == 0;
      vec pending_out(3, -1);
      const vec pending_in = small_blocks_for(3, it + 7, me, {0});
      cairn::request pending;
      if (before == 1) pending = w.iallreduce(pending_in, pending_out, cairn::plus{});
      if (before == 2) {
        vec b(2, me == 0 ? static_cast<std::int64_t>(it) : -1);
        w.bcast(b, 0);
        ASSERT_EQ(mismatch(b, vec(2, static_cast<std::int64_t>(it))), "") << "bcast " << it;
      }
      if (before == 3)  // a window of eager bcasts: the root's slots fill up
        for (int k = 0; k < 40; ++k) {
          vec b(1, me == 0 ? k : -1);
          w.bcast(b, 0);
          ASSERT_EQ(b[0], k) << "bcast " << k << " of allreduce " << it;
        }
      if (sleeps && me == static_cast<int>(late))
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      const vec in = small_blocks_for(n, it, me, {0});
      vec out(n, -5);
      w.allreduce(in, out, cairn::plus{});
      ASSERT_EQ(mismatch(out, small_block_sum(n, it, all, 0)), "") << "allreduce " << it;
      std::vector<mat2> x = mats(m, it, me, 0);
      w.allreduce(x, mat_product);  // in place
      ASSERT_EQ(mat_mismatch(x, mat_product_of(m, it, all, 0)), "") << "product " << it;
      const std::int64_t one = w.allreduce(static_cast<std::int64_t>(me + it), cairn::plus{});
      ASSERT_EQ(one, static_cast<std::int64_t>(p) * it + p * (p - 1) / 2) << "value " << it;
      // A barrier: nobody leaves before the last rank entered (steady_clock is one clock for
      // the node's processes too).
      if (sleeps && me == static_cast<int>(late))
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      const double entered = seconds_now();
      w.barrier();
      const double left = seconds_now();
      const double last_entry = w.allreduce(entered, cairn::max{});
      ASSERT_GE(left, last_entry) << "barrier " << it;
      if (before == 1) {
        pending.wait();
        ASSERT_EQ(mismatch(pending_out, small_block_sum(3, it + 7, all, 0)), "")
            << "iallreduce " << it;
      }
    }
    // Rank 0 passes one element more (88 bytes against 80; 4104 against 4096, which the threads
    // engine moves between the buffers): every rank reports it and nothing is written.
    for (std::size_t count : {std::size_t{10}, std::size_t{512}}) {
      if (p == 1) break;
      vec in(me == 0 ? count + 1 : count, 1), out(in.size(), -5);
      const std::string msg = message_of([&] { w.allreduce(in, out, cairn::plus{}); });
      EXPECT_TRUE(has_text(
          msg, "cairn::allreduce: rank " + std::to_string(me) + ": ranks disagree on the call"))
          << msg;
      const std::string longer = "allreduce with " + std::to_string((count + 1) * 8) + " bytes";
      EXPECT_TRUE(has_text(msg, me == 0 ? "this rank " + longer : "rank 0 called " + longer))
          << msg;
      EXPECT_EQ(mismatch(out, vec(out.size(), -5)), "");
      w.barrier();  // the board goes on after the report
      EXPECT_EQ(w.allreduce(1, cairn::plus{}), p);
    }
  });
}

// Long collectives between buffers at every distance modulo a page: the direct path copies
// with node/copy_bytes.hpp, which avoids `rep movsb` where the destination starts just
// after the source (modulo 4096); those offsets must copy as right as the others.
TEST(SharedMemory, DirectCopiesAtPageDistances) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const std::size_t n = 8192;                          // 64 KiB of int64: a whole number of pages
    for (std::size_t shift : {0, 1, 2, 6, 7, 8, 256}) {  // elements: distances 0 .. 2048 bytes
      std::vector<std::int64_t> storage(2 * n + shift, -1);
      std::span<std::int64_t> in(storage.data(), n), out(storage.data() + n + shift, n);
      for (std::size_t i = 0; i < n; ++i)
        in[i] = static_cast<std::int64_t>(i * 3 + static_cast<std::size_t>(me));
      w.allreduce(in, out);
      const std::int64_t ranks = static_cast<std::int64_t>(p) * (p - 1) / 2;
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i], static_cast<std::int64_t>(i * 3) * p + ranks)
            << "shift " << shift << " element " << i;
      std::fill(out.begin(), out.end(), me == 0 ? 7 : -1);
      w.bcast(out, 0);
      ASSERT_EQ(std::count(out.begin(), out.end(), 7), static_cast<std::ptrdiff_t>(n))
          << "bcast, shift " << shift;
    }
  });
}

// Counts on either side of the board's boundary: one rank's count runs on the board, another's
// by messages (a CAIRN_COLL range, the 16 KiB slot where processes cannot copy from each other,
// the generalized reduce past a slot). The messages' ranks first meet the others on the board
// (prepared::gate), so every rank reports the disagreement, none waits forever, nothing is
// written, and the group goes on. Registered again with such environments (CMakeLists.txt).
TEST(SharedMemory, CountsStraddlingTheBoardFailEverywhere) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    if (p == 1) return;
    std::vector<int> odd = everyone(p);
    std::rotate(odd.begin(), odd.begin() + 1, odd.end());  // a group: keyed slots
    cairn::group whole = w.group(everyone(p)),
                 rotated = w.group(odd);  // the world's slots, keyed ones
    int straddles = 0;
    for (cairn::group* g : {&whole, &rotated}) {
      const int gp = g->size();
      const int root = gp - 1;
      // kind 0 bcast, 1 reduce, 2 allreduce, 3 allgather (n elements per rank): the plan's
      // name at n elements, and the call.
      const auto gathered = [gp](std::size_t n) { return n * static_cast<std::size_t>(gp); };
      auto plan_of = [&](int kind, std::size_t n) {
        vec a(n), b(kind == 3 ? gathered(n) : n);
        if (kind == 0) return g->bcast_init(a, root).plan().name;
        if (kind == 1) return g->reduce_init(a, b, root).plan().name;
        if (kind == 3) return g->allgather_init(a, b).plan().name;
        return g->allreduce_init(a, b).plan().name;
      };
      auto call = [&](int kind, vec& in, vec& out, bool blocking) {
        if (kind == 0 && blocking)
          g->bcast(in, root);
        else if (kind == 0)
          g->ibcast(in, root).wait();
        else if (kind == 1 && blocking)
          g->reduce(in, out, root);
        else if (kind == 1)
          g->ireduce(in, out, root).wait();
        else if (kind == 3 && blocking)
          g->allgather(in, out);
        else if (kind == 3)
          g->iallgather(in, out).wait();
        else if (blocking)
          g->allreduce(in, out);
        else
          g->iallreduce(in, out).wait();
      };
      for (int kind = 0; kind < 4; ++kind)
        for (const auto& [na, nb] : {std::pair<std::size_t, std::size_t>{127, 128}, {2048, 2049}}) {
          // One side on the board and the other by messages, or both by messages (the gates
          // of two counts meet).
          if (cairn::test::on_board_plan(plan_of(kind, na)) &&
              cairn::test::on_board_plan(plan_of(kind, nb)))
            continue;
          ++straddles;
          for (bool blocking : {true, false}) {
            const std::size_t n = g->rank() == 0 ? na : nb;
            const std::size_t n_out = kind == 3 ? gathered(n) : n;
            vec in(n, me + 100), out(n_out, -5);
            const std::string msg = message_of([&] { call(kind, in, out, blocking); });
            const std::string where = "kind " + std::to_string(kind) + ", " + std::to_string(na) +
                                      " / " + std::to_string(nb) + " elements, blocking " +
                                      std::to_string(blocking);
            // A rank whose part needs no other rank's data (a reduce's non-root) may return
            // before the others' calls are visible: it reports the disagreement from its next
            // board collective, once that one completed.
            const bool may_be_late =
                kind == 1 && g->rank() != root && cairn::test::on_board_plan(plan_of(kind, n));
            const bool late = msg == "no error" && may_be_late;
            if (!late) {
              EXPECT_TRUE(has_text(msg, "ranks disagree on the call") &&
                          has_text(msg, "by messages"))
                  << where << ": " << msg;
            }
            EXPECT_EQ(mismatch(in, vec(n, me + 100)), "") << where;
            EXPECT_EQ(mismatch(out, vec(n_out, -5)), "") << where;
            // The numbering stayed alike on every rank: the same call goes through.
            vec rin(nb, me + 1), rout(kind == 3 ? gathered(nb) : nb, -5);
            const std::string next = message_of([&] { call(kind, rin, rout, blocking); });
            if (late) {
              EXPECT_TRUE(has_text(next, "ranks disagree on the call") &&
                          has_text(next, "by messages") && has_text(next, "had returned"))
                  << where << ": " << next;
            } else {
              EXPECT_EQ(next, "no error") << where;
            }
            const std::int64_t sum = static_cast<std::int64_t>(p) * (p + 1) / 2;
            const int root_world = g == &whole ? root : odd[static_cast<std::size_t>(root)];
            const vec& got = kind == 0 ? rin : rout;
            const std::int64_t want = kind == 0 ? root_world + 1 : sum;
            if (kind == 3) {  // block q: group rank q's world rank + 1
              vec blocks;
              for (int q = 0; q < gp; ++q)
                blocks.insert(blocks.end(), nb,
                              (g == &whole ? q : odd[static_cast<std::size_t>(q)]) + 1);
              EXPECT_EQ(mismatch(got, blocks), "") << where;
            } else if (kind != 1 || g->rank() == root) {
              EXPECT_EQ(mismatch(got, vec(nb, want)), "") << where;
            }
          }
        }
    }
    // The generalized reduce runs on the board up to a slot's 16384 bytes, and beyond it where
    // the ranks can copy straight between their buffers or stage through node memory; by
    // messages elsewhere.
    const std::vector<int> all = everyone(p), to{p - 1};
    auto generalized_plan = [&](std::size_t n) {
      vec a(n), b(n);
      return w.ireduce_init(all, to, a, b).plan().name;
    };
    if (generalized_plan(2048) == "reduce_generalized/shared_memory" &&
        !cairn::test::on_board_plan(generalized_plan(2049))) {
      ++straddles;
      const std::size_t n = me == 0 ? 2048 : 2049;
      vec in(n, me + 1), out(n, -5);
      std::string msg = message_of([&] { w.reduce(all, to, in, out, cairn::plus{}); });
      EXPECT_EQ(mismatch(out, vec(n, -5)), "");
      vec rin(2049, me + 1), rout(2049, -5);
      const std::string next = message_of([&] { w.reduce(all, to, rin, rout, cairn::plus{}); });
      if (msg == "no error" &&
          me == 0) {  // rank 0 on the board receives nothing: it may return first
        EXPECT_TRUE(has_text(next, "had returned")) << next;
        msg = next;
      } else {
        EXPECT_EQ(next, "no error");
      }
      EXPECT_TRUE(has_text(msg, "ranks disagree on the call") && has_text(msg, "by messages"))
          << msg;
      if (me == p - 1) {
        EXPECT_EQ(mismatch(rout, vec(2049, static_cast<std::int64_t>(p) * (p + 1) / 2)), "");
      }
    }
    if (me == 0) std::printf("straddling pairs tested: %d\n", straddles);
    // Some count runs by messages where a CAIRN_COLL range says so; elsewhere the board takes
    // every count (past the slots straight between the buffers, or staged through node memory
    // where processes cannot copy from each other) and nothing straddles.
    EXPECT_EQ(straddles > 0, std::getenv("CAIRN_COLL") != nullptr)
        << straddles << " straddling pairs";
  });
}
