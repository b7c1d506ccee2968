// Channels on both engines: exactly-once delivery over thousands of random configurations
// (route, grid shape, buffer size, combining, handler chains of random depth), termination
// never declared early, backpressure under the memory cap, combining semantics, bad input.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

using cairn::test::run;

using cairn::test::random_dims;

namespace {

// An item of a handler chain: delivered at the owner of `key`; while `hops_left` > 0 its
// handler sends a child item. Payloads are summed as the checksum of what was delivered.
struct chain_item {
  std::uint64_t key;
  std::uint64_t payload;
  std::uint32_t hops_left;
  std::uint32_t spin;  // busy-wait in the handler: delays that expose early termination
};

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

// The child of an item (deterministic, so each rank can predict its chains' checksums).
chain_item child_of(const chain_item& it, std::uint64_t keys) {
  const std::uint64_t h = mix(it.key * 31 + it.payload);
  return {h % keys, (it.payload * 7 + 3) & 0xffffffffu, it.hops_left - 1, it.spin};
}

struct config {
  int route =
      0;  // 0 direct, 1 grid (default dims), 2 grid (explicit dims), 3 hypercube, 4 node-aware
  std::size_t buffer_items = 1;
  int max_depth = 0;  // handler chain depth
  int items = 0;      // items each rank starts
  bool queue_local = false;
  bool combine_sum = false;  // sum-combining of payloads (preserves the checksum)
  std::uint32_t spin = 0;
  int terminate = 0;   // 0 world::quiesce, 1 channel::wait(max_depth), 2 channel::done() phase
  bool batch = false;  // the handler takes a std::span of items
};

config random_config(std::mt19937_64& g, int size) {
  config c;
  c.route = static_cast<int>(g() % 5);
  static constexpr std::size_t sizes[] = {1, 2, 3, 7, 16, 64, 255, 1024, 4096};
  c.buffer_items = sizes[g() % std::size(sizes)];
  c.max_depth = static_cast<int>(g() % 4);
  c.items = static_cast<int>(g() % (size > 8 ? 40 : 120));
  c.queue_local = g() % 2 == 0;
  c.combine_sum = g() % 4 == 0;
  if (c.combine_sum) c.max_depth = 0;  // merged payloads would change the children
  c.spin = g() % 8 == 0 ? 2000 : 0;
  c.terminate = static_cast<int>(g() % 3);
  c.batch = g() % 2 == 0;
  return c;
}

// Runs one configuration with route R and checks exactly-once delivery of every chain item.
template <class Route, class Combine>
void run_config(cairn::world& w, const config& c, Route route, Combine combine,
                std::uint64_t seed) {
  const std::uint64_t keys = 1000 * static_cast<std::uint64_t>(w.size()) + 17;
  const cairn::block_distribution dist(keys, w.size());
  std::uint64_t delivered = 0, checksum = 0, misplaced = 0;
  cairn::channel_options o;
  o.buffer_items = c.buffer_items;
  o.queue_local = c.queue_local;
  // The channel is referenced by its own handler (chains send from handlers).
  std::function<void(const chain_item&)> resend;
  auto on_item = [&](const chain_item& it) {
    ++delivered;
    checksum += it.payload;
    if (dist.owner(it.key) != w.rank()) ++misplaced;
    for (std::uint32_t s = 0; s < it.spin; ++s) asm volatile("" ::: "memory");
    if (it.hops_left > 0) resend(child_of(it, keys));
  };
  auto keyed = dist.of([](const chain_item& it) { return it.key; });
  std::uint64_t expect_count = 0, expect_sum = 0;
  const auto send_and_terminate = [&](auto handler) {
    using channel_t =
        cairn::msg::channel<chain_item, decltype(keyed), decltype(handler), Route, Combine>;
    channel_t ch(w, keyed, handler, route, combine, o);
    resend = [&](const chain_item& it) { ch.send(it); };
    std::mt19937_64 g(seed * 977 + static_cast<std::uint64_t>(w.rank()));
    for (int i = 0; i < c.items; ++i) {
      chain_item it{g() % keys, g() & 0xffffffffu,
                    static_cast<std::uint32_t>(g() % (c.max_depth + 1)), c.spin};
      for (chain_item x = it;; x = child_of(x, keys)) {  // the whole chain, predicted here
        ++expect_count;
        expect_sum += x.payload;
        if (x.hops_left == 0) break;
      }
      ch.send(it);
    }
    switch (c.terminate) {
      case 0: w.quiesce(); break;
      case 1: ch.wait(c.max_depth); break;
      default: {
        auto phase = ch.done();
        while (!phase.test()) std::this_thread::yield();  // oversubscribed runs: let others run
      }
    }
  };
  if (c.batch)
    send_and_terminate([&](std::span<const chain_item> items) {
      for (const chain_item& it : items) on_item(it);
    });
  else
    send_and_terminate(on_item);
  // Sum-combining merges items: counts shrink but the payload sum is exact.
  std::array<std::uint64_t, 5> mine{delivered, checksum, misplaced, expect_count, expect_sum},
      all{};
  w.allreduce(mine, all, cairn::plus{});
  if constexpr (Combine::enabled) {
    EXPECT_LE(all[0], all[3]);
  } else {
    EXPECT_EQ(all[0], all[3]) << "items delivered vs sent (route " << c.route << ", buffer "
                              << c.buffer_items << ", depth " << c.max_depth << ")";
  }
  EXPECT_EQ(all[1], all[4]) << "payload checksum (route " << c.route << ", buffer "
                            << c.buffer_items << ")";
  EXPECT_EQ(all[2], 0u) << "items delivered at a rank that does not own them";
  if (::testing::Test::HasFailure()) ADD_FAILURE() << "termination mode " << c.terminate;
  // Nothing may arrive after quiesce returned.
  const std::uint64_t before = delivered;
  w.barrier();
  w.progress();
  EXPECT_EQ(delivered, before);
}

template <class Route>
void run_with_route(cairn::world& w, const config& c, Route route, std::uint64_t seed) {
  if (c.combine_sum) {
    run_config(w, c, route,
               cairn::combine::sum([](const chain_item& it) { return it.key * 64 + it.hops_left; },
                                   [](auto& it) -> auto& { return it.payload; }, 64),
               seed);
  } else {
    run_config(w, c, route, cairn::combine::none{}, seed);
  }
}

TEST(Channel, ExactlyOnceOverRandomConfigurations) {
  // ≥ 10,000 configurations across the registered runs: 1500 on each of the 7 runs up to 8 ranks,
  // a quarter of that at 16 ranks.
  const int configs =
      std::getenv("CAIRN_CHANNEL_CONFIGS") ? std::atoi(std::getenv("CAIRN_CHANNEL_CONFIGS")) : 1500;
  run([&](cairn::world& w) {
    std::mt19937_64 g(20261122);  // same on every rank: configurations must agree
    const int n = w.size() > 8 ? configs / 4 : configs;
    for (int k = 0; k < n; ++k) {
      const config c = random_config(g, w.size());
      const auto dims = random_dims(g, w.size());
      const std::uint64_t seed = g();
      switch (c.route) {
        case 0: run_with_route(w, c, cairn::route::direct{}, seed); break;
        case 1: run_with_route(w, c, cairn::route::grid{}, seed); break;
        case 2: run_with_route(w, c, cairn::route::grid{dims}, seed); break;
        case 3: run_with_route(w, c, cairn::route::hypercube{}, seed); break;
        default: run_with_route(w, c, cairn::route::node_aware{}, seed); break;
      }
      if (::testing::Test::HasFailure()) break;
    }
  });
}

// Deep chains with delays on a small buffer: items sit in buffers at every hop while other
// ranks already wait in quiesce.
TEST(Channel, QuiesceIsNeverEarly) {
  run([](cairn::world& w) {
    for (int round = 0; round < 6; ++round) {
      config c;
      c.route = 1;
      c.buffer_items = round % 2 ? 3 : 64;
      c.max_depth = 12;
      c.items = w.rank() == 0 ? 200 : 0;  // one rank starts everything; the others only wait
      c.spin = 5000;
      run_with_route(w, c, cairn::route::grid{}, 99 + static_cast<std::uint64_t>(round));
    }
  });
}

// One channel through several phases of each kind of termination, in turn.
TEST(Channel, TerminationPhasesAreReusable) {
  run([](cairn::world& w) {
    const cairn::cyclic_distribution dist(w.size());
    std::uint64_t got = 0;
    auto ch = cairn::make_channel<std::uint64_t>(
        w, dist, [&](std::uint64_t) { ++got; }, cairn::route::hypercube{},
        cairn::channel_options{.buffer_items = 7});
    std::uint64_t sent = 0;
    for (int phase = 0; phase < 9; ++phase) {
      for (std::uint64_t i = 0; i < 100 + static_cast<std::uint64_t>(phase); ++i, ++sent)
        ch.send(i * 13 + static_cast<std::uint64_t>(phase));
      if (phase % 3 == 0)
        w.quiesce();
      else if (phase % 3 == 1)
        ch.wait(0);
      else
        ch.done().wait();
      std::array<std::uint64_t, 2> mine{got, sent}, all{};
      w.allreduce(mine, all, cairn::plus{});
      EXPECT_EQ(all[0], all[1]) << "after phase " << phase;
    }
  });
}

TEST(Channel, BackpressureKeepsSendBuffersUnderTheCap) {
  run([](cairn::world& w) {
    const std::uint64_t n = 4096;
    const cairn::cyclic_distribution dist(w.size());
    std::uint64_t got = 0;
    cairn::channel_options o;
    o.buffer_items = 16;
    o.memory_cap_bytes = 4 * (16 * 8 + 8);  // four buffers
    auto ch = cairn::make_channel<std::uint64_t>(
        w, dist, [&](std::uint64_t) { ++got; }, o);
    for (std::uint64_t i = 0; i < 30000; ++i)
      ch.send(i % (n * static_cast<std::uint64_t>(w.size())));
    w.quiesce();
    EXPECT_LE(ch.stats().peak_send_bytes, o.memory_cap_bytes);
    EXPECT_EQ(ch.stats().over_cap, 0u);
    std::array<std::uint64_t, 1> mine{got}, all{};
    w.allreduce(mine, all, cairn::plus{});
    EXPECT_EQ(all[0], 30000u * static_cast<std::uint64_t>(w.size()));
  });
}

// A done() phase with three contributors per rank: it never ends before the last of them
// called done(), even when every item sent so far has long been delivered.
TEST(Channel, DoneWithSeveralContributorsIsNeverEarly) {
  run([](cairn::world& w) {
    const cairn::cyclic_distribution dist(w.size());
    std::uint64_t got = 0;
    auto ch = cairn::make_channel<std::uint64_t>(
        w, dist, [&](std::uint64_t) { ++got; }, cairn::route::grid{},
        cairn::channel_options{.buffer_items = 8, .contributors = 3});
    std::uint64_t sent = 0;
    for (int round = 0; round < 3; ++round) {
      std::vector<cairn::channel_phase> phases;
      for (int c = 0; c < 2; ++c) {  // two of the three contributors finish
        for (std::uint64_t i = 0; i < 50; ++i, ++sent)
          ch.send(i * 31 + static_cast<std::uint64_t>(c));
        phases.push_back(ch.done());
      }
      for (int k = 0; k < 2000; ++k) {
        ASSERT_FALSE(phases[static_cast<std::size_t>(k % 2)].test())
            << "rank " << w.rank() << ": the phase ended before its third contributor was done";
      }
      for (std::uint64_t i = 0; i < 70; ++i, ++sent) ch.send(i * 17 + 5);
      phases.push_back(ch.done());
      phases[2].wait();
      EXPECT_TRUE(phases[0].test());  // every contributor's phase object sees the end
      EXPECT_TRUE(phases[1].test());
      std::array<std::uint64_t, 2> mine{got, sent}, all{};
      w.allreduce(mine, all, cairn::plus{});
      EXPECT_EQ(all[0], all[1]) << "round " << round;
    }
  });
}

// Backpressure on a routed channel: while a send waits for a free buffer, arriving items are
// forwarded into the very buffers it waits to fill; none may be lost.
TEST(Channel, BackpressureOnRoutesLosesNothing) {
  run([](cairn::world& w) {
    const cairn::cyclic_distribution dist(w.size());
    std::uint64_t got = 0;
    cairn::channel_options o;
    o.buffer_items = 4;
    o.memory_cap_bytes = 2 * (4 * 8 + 8 + 4 * 4);  // two buffers with their destinations
    auto ch = cairn::make_channel<std::uint64_t>(
        w, dist, [&](std::uint64_t) { ++got; }, cairn::route::grid{}, o);
    for (std::uint64_t i = 0; i < 20000; ++i)
      ch.send(i * 7919 + static_cast<std::uint64_t>(w.rank()));
    w.quiesce();
    std::array<std::uint64_t, 1> mine{got}, all{};
    w.allreduce(mine, all, cairn::plus{});
    EXPECT_EQ(all[0], 20000u * static_cast<std::uint64_t>(w.size()));
  });
}

// Combining at the source and at every hop: dedup with an idempotent handler, keep_min
// (BFS-like labels), sum (histogram). Results equal the sequential reference.
TEST(Channel, CombiningKeepsResults) {
  run([](cairn::world& w) {
    const std::uint64_t keys = 64 * static_cast<std::uint64_t>(w.size());
    const cairn::block_distribution dist(keys, w.size());
    const std::size_t local = dist.local_size(w.rank());
    struct kv {
      std::uint64_t key;
      std::uint64_t value;
    };
    auto key_of = [](const kv& x) { return x.key; };
    auto keyed = dist.of(key_of);
    std::vector<std::uint64_t> seen(local, 0), best(local, ~std::uint64_t{0}), count(local, 0);
    std::mt19937_64 g(7 + static_cast<std::uint64_t>(w.rank()));
    std::vector<kv> items(20000);
    for (auto& x : items) x = {g() % keys, g() % 1000};
    {
      auto ch = cairn::make_channel<kv>(
          w, keyed, [&](const kv& x) { seen[dist.local_index(x.key)] = 1; }, cairn::route::grid{},
          cairn::combine::dedup(256), cairn::channel_options{.buffer_items = 32});
      for (auto& x : items) ch.send(kv{x.key, 0});
      w.quiesce();
      if (w.size() > 1) {
        EXPECT_GT(ch.stats().combined_source + ch.stats().combined_hops, 0u);
      }
    }
    {
      auto ch = cairn::make_channel<kv>(
          w, keyed,
          [&](const kv& x) {
            auto& b = best[dist.local_index(x.key)];
            b = std::min(b, x.value);
          },
          cairn::route::hypercube{},
          cairn::combine::keep_min(
              key_of, [](const kv& x) { return x.value; }, 512),
          cairn::channel_options{.buffer_items = 32});
      for (auto& x : items) ch.send(x);
      w.quiesce();
    }
    {
      auto ch = cairn::make_channel<kv>(
          w, keyed, [&](const kv& x) { count[dist.local_index(x.key)] += x.value; },
          cairn::route::grid{},
          cairn::combine::sum(
              key_of, [](auto& x) -> auto& { return x.value; }, 512),
          cairn::channel_options{.buffer_items = 64});
      for (auto& x : items) ch.send(kv{x.key, 1});
      w.quiesce();
    }
    // A user's merge: the largest value and how many items it stands for, per key.
    struct mk {
      std::uint64_t key, value, items;
    };
    std::vector<std::uint64_t> most(local, 0), merged(local, 0);
    {
      auto ch = cairn::make_channel<mk>(
          w, dist.of([](const mk& x) { return x.key; }),
          [&](const mk& x) {
            auto& m = most[dist.local_index(x.key)];
            m = std::max(m, x.value);
            merged[dist.local_index(x.key)] += x.items;
          },
          cairn::route::grid{},
          cairn::combine::merge([](const mk& x) { return x.key; },
                                [](mk& held, const mk& x) {
                                  held.value = std::max(held.value, x.value);
                                  held.items += x.items;
                                },
                                512),
          cairn::channel_options{.buffer_items = 64});
      for (auto& x : items) ch.send(mk{x.key, x.value, 1});
      w.quiesce();
      if (w.size() > 1) {
        EXPECT_GT(ch.stats().combined_source + ch.stats().combined_hops, 0u);
      }
    }
    // Reference: every rank's items, regenerated.
    const std::uint64_t first = static_cast<std::uint64_t>(w.rank()) * dist.local_size(0);
    std::vector<std::uint64_t> rseen(local, 0), rbest(local, ~std::uint64_t{0}), rcount(local, 0),
        rmost(local, 0);
    for (int r = 0; r < w.size(); ++r) {
      std::mt19937_64 gr(7 + static_cast<std::uint64_t>(r));
      for (int i = 0; i < 20000; ++i) {
        const std::uint64_t k = gr() % keys, v = gr() % 1000;
        if (dist.owner(k) != w.rank()) continue;
        const std::size_t li = static_cast<std::size_t>(k - first);
        rseen[li] = 1;
        rbest[li] = std::min(rbest[li], v);
        rmost[li] = std::max(rmost[li], v);
        ++rcount[li];
      }
    }
    EXPECT_EQ(seen, rseen);
    EXPECT_EQ(best, rbest);
    EXPECT_EQ(count, rcount);
    EXPECT_EQ(most, rmost);
    EXPECT_EQ(merged, rcount);
  });
}

// Handlers with a context see the item's origin, also after forwarding hops.
TEST(Channel, ContextGivesTheOrigin) {
  run([](cairn::world& w) {
    struct item {
      int origin;
      int target;
    };
    int wrong = 0, got = 0;
    auto ch = cairn::make_channel<item>(
        w, cairn::msg::distribution([](const item& x) { return x.target; }),
        [&](const item& x, cairn::channel_context& c) {
          ++got;
          if (c.source() != x.origin || c.rank() != x.target) ++wrong;
        },
        cairn::route::grid{}, cairn::channel_options{.buffer_items = 5});
    for (int t = 0; t < w.size(); ++t)
      for (int k = 0; k < 10; ++k) ch.send(item{w.rank(), t});
    w.quiesce();
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(got, 10 * w.size());
  });
}

// Batch handlers: a message's items for this rank in one call, in the order one source sent
// them; on routes, runs of one origin (the context's source); items a rank sends itself (also
// from inside its handler) in batches of at most a buffer's worth.
TEST(Channel, BatchHandlersSeeRunsInOrder) {
  struct item {
    int origin;
    int target;
    std::uint32_t seq;  // per (origin, target), in the order sent
  };
  const auto check = [](cairn::world& w, auto route, std::size_t cap) {
    constexpr bool direct = std::is_same_v<decltype(route), cairn::route::direct>;
    const int p = w.size();
    std::vector<std::uint32_t> next(static_cast<std::size_t>(p), 0);  // per origin
    std::uint64_t got = 0, wrong_origin = 0, wrong_target = 0, out_of_order = 0, too_big = 0;
    std::uint64_t calls = 0, echoes = 0;
    std::function<void(const item&)> echo;
    auto ch = cairn::make_channel<item>(
        w, cairn::msg::distribution([](const item& x) { return x.target; }),
        [&](std::span<const item> xs, cairn::channel_context& c) {
          ++calls;
          too_big += xs.empty() || xs.size() > cap;
          for (const item& x : xs) {
            if (x.origin == -1) {  // sent by this rank's handler to itself
              ++echoes;
              continue;
            }
            ++got;
            wrong_origin += c.source() != x.origin;
            wrong_target += x.target != w.rank();
            auto& n = next[static_cast<std::size_t>(x.origin)];
            out_of_order += x.seq != n;
            n = x.seq + 1;
            if (x.seq % 97 == 0) echo(item{-1, w.rank(), 0});
          }
        },
        route, cairn::channel_options{.buffer_items = cap});
    echo = [&](const item& x) { ch.send(x); };
    std::mt19937_64 g(20261128 + static_cast<std::uint64_t>(w.rank()));
    const int per_target = 300;
    std::vector<std::uint32_t> sent(static_cast<std::size_t>(p), 0);
    for (int k = 0; k < per_target * p; ++k) {
      // Random interleaving over the targets, in order per target.
      int t = static_cast<int>(g() % static_cast<std::uint64_t>(p));
      while (sent[static_cast<std::size_t>(t)] == per_target) t = (t + 1) % p;
      ch.send(item{w.rank(), t, sent[static_cast<std::size_t>(t)]++});
    }
    w.quiesce();
    std::array<std::uint64_t, 7> mine{got,     wrong_origin, wrong_target, out_of_order,
                                      too_big, calls,        echoes},
        all{};
    w.allreduce(mine, all, cairn::plus{});
    const auto total = static_cast<std::uint64_t>(per_target) * static_cast<std::uint64_t>(p) *
                       static_cast<std::uint64_t>(p);
    EXPECT_EQ(all[0], total);
    EXPECT_EQ(all[1], 0u) << "items whose origin is not the context's source";
    EXPECT_EQ(all[2], 0u) << "items delivered at a rank that does not own them";
    EXPECT_EQ(all[3], 0u) << "items of one origin out of the order sent";
    EXPECT_EQ(all[4], 0u) << "empty batches or batches above " << cap << " items";
    EXPECT_EQ(all[6], static_cast<std::uint64_t>(p) * static_cast<std::uint64_t>(p) * 4)
        << "items a handler sent to its own rank (seq 0, 97, 194, 291 of each pair)";
    // Direct messages hold one origin: a message's items arrive in one call.
    if constexpr (direct) {
      EXPECT_LT(all[5] * 4, total) << "batches of 4 items or fewer on average";
    }
  };
  run([&](cairn::world& w) {
    check(w, cairn::route::direct{}, 64);
    check(w, cairn::route::grid{}, 7);
    check(w, cairn::route::hypercube{}, 1);
  });
}

// for_each_prefetched visits every item once, in order, whatever the distance, and asks for
// the place of every item (the first `distance` up front, the rest `distance` ahead).
TEST(Channel, ForEachPrefetchedVisitsInOrder) {
  std::vector<std::uint64_t> items(37);
  for (std::size_t k = 0; k < items.size(); ++k) items[k] = k * 3 + 1;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, items.size()})
    for (const std::size_t distance : {0, 1, 4, 16, 40}) {
      const std::span<const std::uint64_t> some(items.data(), n);
      std::vector<std::uint64_t> used, placed;
      cairn::for_each_prefetched(
          some,
          [&](std::uint64_t x) {
            placed.push_back(x);
            return &items[0];
          },
          [&](std::uint64_t x) { used.push_back(x); }, distance);
      EXPECT_EQ(used, std::vector<std::uint64_t>(some.begin(), some.end()));
      std::sort(placed.begin(), placed.end());
      EXPECT_EQ(placed, std::vector<std::uint64_t>(some.begin(), some.end()))
          << n << " items, distance " << distance;
    }
}

TEST(Channel, BadInputIsReportedBeforeSending) {
  run([](cairn::world& w) {
    auto ch = cairn::make_channel<int>(w, cairn::cyclic_distribution(w.size()), [](int) {});
    try {
      ch.send_to(w.size(), 1);
      ADD_FAILURE() << "no error for a target outside the world";
    } catch (const cairn::error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("target rank " + std::to_string(w.size())), std::string::npos) << what;
      EXPECT_NE(what.find("rank " + std::to_string(w.rank())), std::string::npos) << what;
    }
    EXPECT_THROW(ch.send_to(-1, 1), cairn::error);
    EXPECT_THROW(cairn::route::grid{{w.size() + 1}}.make(w), cairn::error);
    EXPECT_THROW((cairn::make_channel<int>(
                     w, cairn::cyclic_distribution(w.size()), [](int) {},
                     cairn::channel_options{.memory_cap_bytes = 1})),
                 cairn::error);
    // Creation failed on every rank alike (options are checked before the channel registers),
    // so the channels created so far still match.
    w.quiesce();
  });
}

TEST(Channel, UseAfterTheRunEndedIsAnError) {
  cairn::world kept;
  run([&](cairn::world& w) {
    if (w.rank() == 0) kept = w;
  });
  EXPECT_THROW((cairn::make_channel<int>(kept, cairn::cyclic_distribution(1), [](int) {})),
               cairn::error);
}

}  // namespace
