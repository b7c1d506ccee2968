// Channels across phases and at the edges of their domains, on both engines:
// - a combining cache lives for one phase: two asynchronous BFS searches (keep_min) on one
//   channel, and rounds of keep_min and dedup with the same keys and worse values, each phase
//   against a sequential reference on seeded random inputs, for every route and every kind of
//   termination (items forwarded by ranks still inside the last termination included);
// - a key outside a distribution's domain is refused by send() on the sending rank, with the
//   call, the rank, the key and the domain in the message, and nothing is sent.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::run;

using cairn::test::random_dims;

namespace {

constexpr std::uint32_t unreached = std::numeric_limits<std::uint32_t>::max();

// Runs f(route, name) for every route: direct, grid (default and random extents), hypercube
// and node-aware.
template <class F>
void for_each_route(cairn::world& w, std::uint64_t seed, F&& f) {
  std::mt19937_64 g(seed);
  f(cairn::route::direct{}, "direct");
  f(cairn::route::grid{}, "grid");
  f(cairn::route::grid{random_dims(g, w.size())}, "grid (random extents)");
  f(cairn::route::hypercube{}, "hypercube");
  f(cairn::route::node_aware{}, "node-aware");
}

// Ends a phase of `ch`: 0 world::quiesce, 1 channel::wait(depth), 2 a done() phase.
template <class Channel>
void end_phase(cairn::world& w, Channel& ch, int how, int depth) {
  switch (how) {
    case 0: w.quiesce(); break;
    case 1: ch.wait(depth); break;
    default: {
      auto phase = ch.done();
      while (!phase.test()) std::this_thread::yield();  // oversubscribed runs: let others run
    }
  }
}

// A random graph every rank knows whole (adjacency lists, degree 0 to 5).
std::vector<std::vector<std::uint64_t>> random_graph(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::vector<std::uint64_t>> adj(n);
  for (auto& a : adj) {
    const std::uint64_t deg = g() % 6;
    for (std::uint64_t e = 0; e < deg; ++e) a.push_back(g() % n);
  }
  return adj;
}

std::vector<std::uint32_t> bfs_levels(const std::vector<std::vector<std::uint64_t>>& adj,
                                      std::uint64_t root) {
  std::vector<std::uint32_t> level(adj.size(), unreached);
  std::vector<std::uint64_t> frontier{root}, next;
  level[root] = 0;
  for (std::uint32_t d = 1; !frontier.empty(); ++d, frontier.swap(next), next.clear())
    for (const std::uint64_t u : frontier)
      for (const std::uint64_t v : adj[u])
        if (level[v] == unreached) {
          level[v] = d;
          next.push_back(v);
        }
  return level;
}

struct label {
  std::uint64_t v;
  std::uint32_t dist;
  std::uint32_t pad = 0;
};

// AP's asynchronous label-correcting BFS with keep_min, run twice on one channel from two
// roots (one termination per search). Without the cache's reset the second search's labels
// that do not improve on the first's are dropped: wrong levels.
TEST(ChannelPhases, TwoBfsSearchesOnOneChannel) {
  run([](cairn::world& w) {
    for (int how : {0, 2}) {  // a search's depth is not known: quiesce or a done() phase
      for_each_route(w, 31 + static_cast<std::uint64_t>(how), [&](auto route, const char* name) {
        const std::uint64_t n = 40 * static_cast<std::uint64_t>(w.size()) + 3;
        const std::uint64_t seed = 1000 + n + static_cast<std::uint64_t>(how);
        const auto adj = random_graph(n, seed);
        const cairn::block_distribution dist(n, w.size());
        const std::uint64_t first = static_cast<std::uint64_t>(w.rank()) * dist.local_size(0);
        std::vector<std::uint32_t> level(dist.local_size(w.rank()), unreached);
        std::function<void(const label&)> relay;
        auto ch = cairn::make_channel<label>(
            w, dist.of([](const label& x) { return x.v; }),
            [&](const label& x) {
              auto& l = level[dist.local_index(x.v)];
              if (x.dist >= l) return;
              l = x.dist;
              for (const std::uint64_t v : adj[x.v]) relay(label{v, x.dist + 1});
            },
            route,
            cairn::combine::keep_min([](const label& x) { return x.v; },
                                     [](const label& x) { return x.dist; }, 4096),
            cairn::channel_options{.buffer_items = 4});
        relay = [&](const label& x) { ch.send(x); };
        std::mt19937_64 g(seed);
        for (int search = 0; search < 2; ++search) {
          const std::uint64_t root = g() % n;
          if (dist.owner(root) == w.rank()) ch.send(label{root, 0});
          end_phase(w, ch, how, 0);
          const auto ref = bfs_levels(adj, root);
          std::uint64_t wrong = 0;
          for (std::size_t i = 0; i < level.size(); ++i) wrong += level[i] != ref[first + i];
          // Ready for the next search before the collective below: a rank that leaves it
          // first may start the next search, whose items arrive while this one waits in it.
          std::fill(level.begin(), level.end(), unreached);
          std::uint64_t all = 0;
          w.allreduce(std::span(&wrong, 1), std::span(&all, 1), cairn::plus{});
          EXPECT_EQ(all, 0u) << "vertices with a wrong level in search " << search << " from "
                             << root << " (route " << name << ", termination " << how << ")";
        }
      });
    }
  });
}

struct kv {
  std::uint64_t key;
  std::uint64_t value;
};

// Rounds of keep_min whose values only get worse, and rounds of dedup repeating the same
// items, on one channel: each round (one phase) delivers what a new channel would.
TEST(ChannelPhases, CombiningRoundsWithTheSameKeys) {
  run([](cairn::world& w) {
    constexpr int rounds = 4;
    const std::uint64_t keys = 24 * static_cast<std::uint64_t>(w.size()) + 5;
    const cairn::block_distribution dist(keys, w.size());
    const std::uint64_t first = static_cast<std::uint64_t>(w.rank()) * dist.local_size(0);
    const std::size_t local = dist.local_size(w.rank());
    const int items = 300;
    auto key_of = [](const kv& x) { return x.key; };
    // Items of `rank` in round r: keys as in every round, values of round r (worse each round).
    auto item = [&](std::mt19937_64& g, int r) {
      const std::uint64_t k = g() % keys, v = g() % 1000;
      return kv{k, static_cast<std::uint64_t>(r) * 1000 + v};
    };
    for (int how = 0; how < 3; ++how) {
      for_each_route(w, 57 + static_cast<std::uint64_t>(how), [&](auto route, const char* name) {
        std::vector<std::uint64_t> best(local, ~std::uint64_t{0}), seen(local, 0);
        auto keep = cairn::make_channel<kv>(
            w, dist.of(key_of),
            [&](const kv& x) {
              auto& b = best[dist.local_index(x.key)];
              b = std::min(b, x.value);
            },
            route,
            cairn::combine::keep_min(
                key_of, [](const kv& x) { return x.value; }, 1024),
            cairn::channel_options{.buffer_items = 8});
        auto once = cairn::make_channel<kv>(
            w, dist.of(key_of), [&](const kv& x) { ++seen[dist.local_index(x.key)]; }, route,
            cairn::combine::dedup(1024), cairn::channel_options{.buffer_items = 8});
        for (int r = 0; r < rounds; ++r) {
          std::mt19937_64 g(7 + static_cast<std::uint64_t>(w.rank()));  // same keys each round
          for (int i = 0; i < items; ++i) {
            const kv x = item(g, r);
            keep.send(x);
            once.send(kv{x.key, 0});
          }
          if (how == 0) {
            w.quiesce();
          } else {
            end_phase(w, keep, how, 0);
            end_phase(w, once, how, 0);
          }
          std::vector<std::uint64_t> rbest(local, ~std::uint64_t{0}), rseen(local, 0);
          for (int q = 0; q < w.size(); ++q) {
            std::mt19937_64 gq(7 + static_cast<std::uint64_t>(q));
            for (int i = 0; i < items; ++i) {
              const kv x = item(gq, r);
              if (dist.owner(x.key) != w.rank()) continue;
              auto& b = rbest[x.key - first];
              b = std::min(b, x.value);
              rseen[x.key - first] = 1;
            }
          }
          // dedup drops repeats within a phase only as far as its cache reaches: every key
          // sent in the round arrives at least once, and no key that was not sent.
          std::uint64_t wrong = 0;
          for (std::size_t i = 0; i < local; ++i)
            wrong += (best[i] != rbest[i]) + ((seen[i] > 0) != (rseen[i] > 0));
          // Ready for the next round before the collective below (see TwoBfsSearches...).
          std::fill(best.begin(), best.end(), ~std::uint64_t{0});
          std::fill(seen.begin(), seen.end(), 0);
          std::uint64_t all = 0;
          w.allreduce(std::span(&wrong, 1), std::span(&all, 1), cairn::plus{});
          EXPECT_EQ(all, 0u) << "keys with a wrong result in round " << r << " (route " << name
                             << ", termination " << how << ")";
        }
      });
    }
  });
}

// A rank that saw the end of a phase sends the next phase's items at once, while the others
// have not yet looked (they test their done() phase only every 2 ms): the items reach them,
// still inside the old phase, and are forwarded through their caches full of the old phase's
// entries (every key with the better value 0). They must travel on.
TEST(ChannelPhases, NextPhaseThroughRanksStillInsideTheLast) {
  run([](cairn::world& w) {
    const std::uint64_t keys = 16 * static_cast<std::uint64_t>(w.size());
    const cairn::cyclic_distribution dist(keys, w.size());
    auto key_of = [](const kv& x) { return x.key; };
    auto check = [&](auto route, const char* name) {
      // Items arrive per phase value: a rank may get the next phase's items before it left
      // the last one, so the count of items of value p per key is kept apart for every p.
      constexpr std::uint64_t phases = 4;
      std::vector<std::array<std::uint64_t, phases>> got(dist.local_index(keys - 1) + 1);
      auto ch = cairn::make_channel<kv>(
          w, dist.of(key_of), [&](const kv& x) { ++got[dist.local_index(x.key)][x.value]; }, route,
          cairn::combine::keep_min(
              key_of, [](const kv& x) { return x.value; }, 4096),
          cairn::channel_options{.buffer_items = 2});
      for (std::uint64_t phase = 0; phase < phases; ++phase) {
        // Phase 0: everyone sends value 0 for every key; later phases: rank 0 alone, value p.
        if (phase == 0 || w.rank() == 0)
          for (std::uint64_t k = 0; k < keys; ++k) ch.send(kv{k, phase});
        auto done = ch.done();
        while (!done.test())
          if (w.rank() == 0)
            std::this_thread::yield();
          else
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      // Checked after the last phase (a collective in between would hold rank 0 back): every
      // key got value p in phase p.
      std::array<std::uint64_t, phases> wrong{};
      for (std::uint64_t k = static_cast<std::uint64_t>(w.rank()); k < keys;
           k += static_cast<std::uint64_t>(w.size()))
        for (std::uint64_t phase = 0; phase < phases; ++phase)
          wrong[phase] += got[dist.local_index(k)][phase] == 0;
      std::array<std::uint64_t, phases> all{};
      w.allreduce(wrong, all, cairn::plus{});
      for (std::uint64_t phase = 0; phase < phases; ++phase)
        EXPECT_EQ(all[phase], 0u) << "keys without their value in phase " << phase << " (route "
                                  << name << ")";
    };
    check(cairn::route::grid{}, "grid");
    check(cairn::route::hypercube{}, "hypercube");
    check(cairn::route::node_aware{}, "node-aware");
  });
}

// reset_combining() empties the cache between two uses that end no phase in between.
TEST(ChannelPhases, ResetCombiningLetsItemsTravelAgain) {
  run([](cairn::world& w) {
    const cairn::cyclic_distribution dist(w.size());
    std::uint64_t got = 0;
    auto ch = cairn::make_channel<std::uint64_t>(
        w, dist, [&](std::uint64_t) { ++got; }, cairn::route::direct{}, cairn::combine::dedup(64));
    const auto to = static_cast<std::uint64_t>((w.rank() + 1) % w.size());
    ch.send(to);
    ch.send(to);  // a repeat: dropped
    ch.reset_combining();
    ch.send(to);  // travels again
    w.quiesce();
    if (w.size() > 1) {  // items a rank sends itself are handled at once, never combined
      EXPECT_EQ(got, 2u);
      EXPECT_EQ(ch.stats().combined_source, 1u);
    } else {
      EXPECT_EQ(got, 3u);
    }
  });
}

// The message of send(key) on a channel of `dist` with item type K.
template <class K, class Dist>
void expect_refused(cairn::world& w, const Dist& dist, K key, const std::string& domain) {
  std::uint64_t got = 0;
  auto ch = cairn::make_channel<K>(
      w, dist, [&](K) { ++got; }, cairn::route::grid{}, cairn::channel_options{.name = "edges"});
  ch.send(K{0});
  const std::string what = message_of([&] { ch.send(key); });
  const std::string rank = "rank " + std::to_string(w.rank()) + ":";
  EXPECT_TRUE(has_text(what, "cairn::channel::send: " + rank)) << what;
  EXPECT_TRUE(has_text(what, "key " + std::to_string(key) + " is outside")) << what;
  EXPECT_TRUE(has_text(what, "domain [0, " + domain + ")")) << what;
  EXPECT_TRUE(has_text(what, "channel 'edges'")) << what;
  EXPECT_EQ(ch.stats().sent, 1u) << "only the valid item counts as sent";
  // The keyed form: send(target, item).
  const std::string keyed = message_of([&] { ch.send(static_cast<long long>(key), K{1}); });
  EXPECT_TRUE(has_text(keyed, "key " + std::to_string(static_cast<long long>(key)) + " is"))
      << keyed;
  EXPECT_EQ(ch.stats().sent, 1u);
  w.quiesce();  // the channel still works: the valid item arrives, nothing else
  std::uint64_t all = 0;
  w.allreduce(std::span(&got, 1), std::span(&all, 1), cairn::plus{});
  EXPECT_EQ(all, static_cast<std::uint64_t>(w.size()));
}

TEST(ChannelPhases, KeysOutsideTheDomainAreRefused) {
  run([](cairn::world& w) {
    const std::uint64_t n = 10 * static_cast<std::uint64_t>(w.size()) + 3;
    const std::string ns = std::to_string(n);
    const std::string all = std::to_string(cairn::all_keys);
    const cairn::block_distribution block(n, w.size());
    const cairn::cyclic_distribution cyclic(n, w.size());
    const cairn::block_cyclic_distribution block_cyclic(3, w.size(), n);
    expect_refused<std::uint64_t>(w, block, n, ns);
    expect_refused<std::int64_t>(w, block, -1, ns);
    expect_refused<std::int32_t>(w, block, -7, ns);
    expect_refused<std::uint64_t>(w, cyclic, n, ns);
    expect_refused<std::int64_t>(w, cyclic, -1, ns);
    expect_refused<std::uint64_t>(w, block_cyclic, n + 100, ns);
    expect_refused<std::int64_t>(w, block_cyclic, -1, ns);
    // Without a size: every key but negative ones (and the largest 64-bit value).
    expect_refused<std::int64_t>(w, cairn::cyclic_distribution(w.size()), -1, all);
    expect_refused<std::int32_t>(w, cairn::block_cyclic_distribution(2, w.size()), -1, all);
    // The last key of the domain is accepted and lands on the last owner, in its local part.
    {
      std::uint64_t wrong = 0, got = 0;
      auto ch = cairn::make_channel<std::uint64_t>(w, block, [&](std::uint64_t k) {
        ++got;
        wrong += block.owner(k) != w.rank() || block.local_index(k) >= block.local_size(w.rank());
      });
      ch.send(n - 1);
      w.quiesce();
      std::array<std::uint64_t, 2> mine{got, wrong}, sum{};
      w.allreduce(mine, sum, cairn::plus{});
      EXPECT_EQ(sum[0], static_cast<std::uint64_t>(w.size()));
      EXPECT_EQ(sum[1], 0u);
    }
    // Keyed distributions check the key of the item.
    {
      auto ch = cairn::make_channel<kv>(
          w, block.of([](const kv& x) { return x.key; }), [](const kv&) {},
          cairn::channel_options{.name = "keyed"});
      const std::string what = message_of([&] { ch.send(kv{n, 5}); });
      EXPECT_TRUE(has_text(what, "cairn::channel::send: rank " + std::to_string(w.rank()) +
                                     ": key " + ns + " is outside the distribution's domain [0, " +
                                     ns + ")"))
          << what;
      w.quiesce();
    }
    // A hashed distribution owns every key.
    {
      std::uint64_t got = 0;
      auto ch = cairn::make_channel<std::int64_t>(w, cairn::hashed_distribution(w.size()),
                                                  [&](std::int64_t) { ++got; });
      ch.send(-1);
      w.quiesce();
      std::uint64_t sum = 0;
      w.allreduce(std::span(&got, 1), std::span(&sum, 1), cairn::plus{});
      EXPECT_EQ(sum, static_cast<std::uint64_t>(w.size()));
    }
    // A distribution over more ranks than the world: refused when the channel is made.
    const std::string wide = message_of([&] {
      (void)cairn::make_channel<std::uint64_t>(w, cairn::block_distribution(n, w.size() + 1),
                                               [](std::uint64_t) {});
    });
    EXPECT_TRUE(has_text(wide, "the distribution spans " + std::to_string(w.size() + 1) +
                                   " ranks, more than the world's " + std::to_string(w.size())))
        << wide;
    w.quiesce();
  });
}

}  // namespace
