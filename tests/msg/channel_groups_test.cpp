// Channels on groups, both engines: channels on overlapping groups alive at once (and beside
// a channel on the world), every route, each termination and combining, against a sequential
// reference; group ranks in handlers; the tags members agree on while they hold different
// numbers of channels; async calls forwarded around groups; errors.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "harness.hpp"

using cairn::test::random_dims;
using cairn::test::run;

namespace {

struct item {
  std::uint64_t key;
  std::uint32_t origin;  // the sender's group rank
  std::uint32_t weight;  // 1 per item sent; combining adds them up
};

// Groups every rank builds alike: the even ranks, a seeded shuffle of all ranks, the ranks
// above 0 in reverse order (all ranks on 1), the lower half (at least rank 0).
std::vector<cairn::group> test_groups(const cairn::world& w) {
  const int n = w.size();
  std::vector<cairn::group> groups;
  groups.push_back(w.group(cairn::ranks{0, n, 2}));
  std::vector<int> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), std::mt19937_64(20261128));
  groups.push_back(w.group(all));
  std::vector<int> upper;
  for (int r = n - 1; r >= (n > 1 ? 1 : 0); --r) upper.push_back(r);
  groups.push_back(w.group(upper));
  groups.push_back(w.group(cairn::ranks{0, std::max(1, n / 2)}));
  return groups;
}

// The keys group rank `r` sends in a round: the same on every rank that asks.
std::vector<std::uint64_t> keys_of(std::uint64_t seed, int r, std::uint64_t keys) {
  std::mt19937_64 g(seed * 1000003 + static_cast<std::uint64_t>(r));
  std::vector<std::uint64_t> out(40 + g() % 200);
  for (auto& k : out) k = g() % keys;
  return out;
}

// What this rank must hold after a round on `g`: items per key it owns (block distribution).
std::vector<std::uint64_t> expected_counts(const cairn::group& g, std::uint64_t seed,
                                           std::uint64_t keys) {
  const cairn::block_distribution dist(keys, g.size());
  std::vector<std::uint64_t> c(dist.local_size(g.rank()), 0);
  for (int q = 0; q < g.size(); ++q)
    for (std::uint64_t k : keys_of(seed, q, keys))
      if (static_cast<int>(dist.owner(k)) == g.rank()) ++c[dist.local_index(k)];
  return c;
}

// A histogram channel on one group and what it received.
struct tally {
  std::vector<std::uint64_t> counts;
  std::uint64_t wrong = 0;  // items whose context disagreed with the item
};

// Counts each item's weight at its key; flags items whose context disagrees with the item.
struct tally_handler {
  tally* t;
  cairn::block_distribution dist;
  std::uint64_t id;  // the group's
  int me;            // this rank's group rank
  bool combining;    // merged items carry no single origin
  void operator()(const item& x, cairn::channel_context& c) const {
    t->counts[dist.local_index(x.key)] += x.weight;
    if (c.rank() != me || !c.group() || c.group()->id() != id ||
        static_cast<int>(dist.owner(x.key)) != me ||
        (!combining && c.source() != static_cast<int>(x.origin)))
      ++t->wrong;
  }
};

template <class Route, class Combine = cairn::combine::none>
using tally_channel =
    cairn::msg::channel<item, cairn::block_distribution, tally_handler, Route, Combine>;

// A tally channel on `g` over `keys` keys, made in place (channels do not move).
template <class Route, class Combine>
std::unique_ptr<tally_channel<Route, Combine>> make_tally_channel(cairn::group& g, tally& t,
                                                                  std::uint64_t keys, Route route,
                                                                  Combine combine,
                                                                  std::size_t buffer_items) {
  const cairn::block_distribution dist(keys, g.size());
  t.counts.assign(dist.local_size(g.rank()), 0);
  return std::make_unique<tally_channel<Route, Combine>>(
      g, dist, tally_handler{&t, dist, g.id(), g.rank(), Combine::enabled}, std::move(route),
      std::move(combine),
      cairn::channel_options{.buffer_items = buffer_items, .name = "group-tally"});
}

constexpr auto item_key = [](const item& x) { return x.key; };
constexpr auto item_weight = &item::weight;

// One round on `g`: every member sends its keys, then ends the phase as `terminate` says
// (0 group::quiesce, 1 wait(0), 2 done()), then compares with the reference.
template <class Route>
void round_on(cairn::group& g, Route route, int terminate, bool combining, std::size_t buffer_items,
              std::uint64_t seed) {
  const std::uint64_t keys = 50 * static_cast<std::uint64_t>(g.size()) + 3;
  tally t;
  const auto body = [&](auto& ch) {
    for (std::uint64_t k : keys_of(seed, g.rank(), keys))
      ch.send(k, item{k, static_cast<std::uint32_t>(g.rank()), 1});
    if (terminate == 0)
      g.quiesce();
    else if (terminate == 1)
      ch.wait(0);
    else
      ch.done().wait();
  };
  if (combining)
    body(*make_tally_channel(g, t, keys, route, cairn::combine::sum(item_key, item_weight, 64),
                             buffer_items));
  else
    body(*make_tally_channel(g, t, keys, route, cairn::combine::none{}, buffer_items));
  EXPECT_EQ(t.wrong, 0u);
  EXPECT_EQ(t.counts, expected_counts(g, seed, keys))
      << "group of " << g.size() << " (rank " << g.rank() << "), terminate " << terminate
      << ", combining " << combining << ", buffer " << buffer_items;
}

}  // namespace

// Random rounds on each group this rank is in, over every route, termination and combining.
TEST(ChannelGroups, EveryRouteTerminationAndCombining) {
  run([](cairn::world& w) {
    auto groups = test_groups(w);
    std::mt19937_64 gen(7);  // the same on every rank: members agree on each round
    for (int k = 0; k < 24; ++k)
      for (auto& g : groups) {
        const int route = static_cast<int>(gen() % 5);
        const int terminate = static_cast<int>(gen() % 3);
        const bool combining = gen() % 3 == 0;
        static constexpr std::size_t sizes[] = {1, 3, 16, 1024};
        const std::size_t buffer = sizes[gen() % 4];
        const std::uint64_t seed = gen();
        const auto dims = random_dims(gen, g.size());
        if (g.rank() < 0) continue;
        switch (route) {
          case 0: round_on(g, cairn::route::direct{}, terminate, combining, buffer, seed); break;
          case 1: round_on(g, cairn::route::grid{}, terminate, combining, buffer, seed); break;
          case 2: round_on(g, cairn::route::grid{dims}, terminate, combining, buffer, seed); break;
          case 3: round_on(g, cairn::route::hypercube{}, terminate, combining, buffer, seed); break;
          default: round_on(g, cairn::route::node_aware{}, terminate, combining, buffer, seed);
        }
        if (::testing::Test::HasFailure()) return;
      }
  });
}

// Channels on all the overlapping groups alive at once, group i holding i + 1 of them (so
// members hold different numbers of tags when they agree on the next), beside a channel on the
// world; every item checked, terminations group by group, then the world's.
TEST(ChannelGroups, OverlappingGroupsAtOnce) {
  run([](cairn::world& w) {
    auto groups = test_groups(w);
    struct live {
      std::size_t group;
      std::uint64_t seed;
      std::uint64_t keys;
      tally t;
      std::unique_ptr<tally_channel<cairn::route::grid>> ch;
    };
    std::vector<std::unique_ptr<live>> chans;
    // The world's channel: every rank counts the items it is sent.
    std::uint64_t world_got = 0;
    auto world_ch = cairn::make_channel<std::uint64_t>(
        w, cairn::cyclic_distribution(w.size()), [&](std::uint64_t) { ++world_got; },
        cairn::channel_options{.buffer_items = 5});
    for (std::size_t i = 0; i < groups.size(); ++i) {
      auto& g = groups[i];
      if (g.rank() < 0) continue;
      for (std::size_t c = 0; c <= i; ++c) {
        auto l = std::make_unique<live>();
        l->group = i;
        l->seed = 1000 * i + c;
        l->keys = 20 * static_cast<std::uint64_t>(g.size()) + c;
        l->ch =
            make_tally_channel(g, l->t, l->keys, cairn::route::grid{}, cairn::combine::none{}, 3);
        chans.push_back(std::move(l));
      }
    }
    for (std::uint64_t k = 0; k < 100; ++k) world_ch.send(k + static_cast<std::uint64_t>(w.rank()));
    // Items on every channel, interleaved.
    for (int turn = 0; turn < 240; ++turn)
      for (auto& l : chans) {
        const auto& g = groups[l->group];
        const auto ks = keys_of(l->seed, g.rank(), l->keys);
        if (turn < static_cast<int>(ks.size()))
          l->ch->send(
              ks[static_cast<std::size_t>(turn)],
              item{ks[static_cast<std::size_t>(turn)], static_cast<std::uint32_t>(g.rank()), 1});
      }
    for (auto& g : groups)
      if (g.rank() >= 0) g.quiesce();
    for (auto& l : chans) {
      const auto& g = groups[l->group];
      EXPECT_EQ(l->t.wrong, 0u);
      EXPECT_EQ(l->t.counts, expected_counts(g, l->seed, l->keys))
          << "group " << l->group << ", seed " << l->seed;
    }
    w.quiesce();
    std::uint64_t all = 0;
    w.allreduce(std::span<const std::uint64_t>(&world_got, 1), std::span<std::uint64_t>(&all, 1),
                cairn::plus{});
    EXPECT_EQ(all, 100u * static_cast<std::uint64_t>(w.size()));
  });
}

// A handler on one channel of a group sends on another of the same group: group::quiesce ends
// both; a second round on the same channels starts with empty combining caches.
TEST(ChannelGroups, QuiesceCoversHandlerChainsAcrossTheGroupsChannels) {
  run([](cairn::world& w) {
    auto g = test_groups(w)[1];  // every rank, shuffled
    const cairn::cyclic_distribution dist(g.size());
    std::uint64_t second = 0;
    auto b = cairn::make_channel<std::uint64_t>(
        g, dist, [&](std::uint64_t) { ++second; }, cairn::route::hypercube{},
        cairn::channel_options{.buffer_items = 2});
    auto a = cairn::make_channel<std::uint64_t>(
        g, dist, [&](std::uint64_t k) { b.send(k * 7 + 1); }, cairn::route::grid{},
        cairn::channel_options{.buffer_items = 4});
    for (int round = 1; round <= 2; ++round) {
      for (std::uint64_t k = 0; k < 300; ++k) a.send(k * 31 + static_cast<std::uint64_t>(round));
      g.world().quiesce();  // the world's termination covers channels on groups too
      g.quiesce();
      std::uint64_t all = 0;
      g.allreduce(std::span<const std::uint64_t>(&second, 1), std::span<std::uint64_t>(&all, 1),
                  cairn::plus{});
      EXPECT_EQ(all, 300u * static_cast<std::uint64_t>(round * g.size()));
    }
  });
}

// Errors name the call, the rank and the values, before anything is sent.
TEST(ChannelGroups, BadUseIsReported) {
  run([](cairn::world& w) {
    auto evens = w.group(cairn::ranks{0, w.size(), 2});
    if (evens.rank() < 0) {
      try {
        auto ch =
            cairn::make_channel<int>(evens, cairn::cyclic_distribution(evens.size()), [](int) {});
        ADD_FAILURE() << "a channel made on a group this rank is not in";
      } catch (const cairn::error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("rank " + std::to_string(w.rank())), std::string::npos) << what;
        EXPECT_NE(what.find("not a member of the group"), std::string::npos) << what;
      }
      EXPECT_THROW(evens.quiesce(), cairn::error);
      return;
    }
    auto ch = cairn::make_channel<int>(evens, cairn::cyclic_distribution(evens.size()), [](int) {});
    try {
      ch.send_to(evens.size(), 1);
      ADD_FAILURE() << "no error for a target outside the group";
    } catch (const cairn::error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("target rank " + std::to_string(evens.size()) +
                          " is outside the group of " + std::to_string(evens.size())),
                std::string::npos)
          << what;
    }
    try {
      (void)cairn::route::grid{{evens.size() + 1}}.make(evens);
      ADD_FAILURE() << "no error for a grid larger than the group";
    } catch (const cairn::error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("but the group has " + std::to_string(evens.size()) + " ranks"),
                std::string::npos)
          << what;
    }
    EXPECT_THROW((cairn::make_channel<int>(evens, cairn::block_distribution(10, evens.size() + 1),
                                           [](int) {})),
                 cairn::error);
    evens.quiesce();
  });
}

// Items that are not trivially copyable (strings, serialized) on a group, beside a typed
// channel on an overlapping group: every string arrives once, at its owner, from its sender.
TEST(ChannelGroups, SerializedItemsOnAGroup) {
  run([](cairn::world& w) {
    auto groups = test_groups(w);
    auto& g = groups[2];  // the ranks above 0, reversed (all of them on 1 rank)
    if (g.rank() < 0) return;
    const cairn::cyclic_distribution dist(g.size());
    std::vector<std::string> got;
    std::uint64_t wrong = 0;
    auto ch = cairn::make_channel<std::string>(
        g, dist,
        [&](const std::string& s, cairn::channel_context& c) {
          got.push_back(s);
          if (c.rank() != g.rank() || s.rfind(std::to_string(c.source()) + ":", 0) != 0) ++wrong;
        },
        cairn::route::hypercube{}, cairn::channel_options{.buffer_bytes = 256});
    // Group rank r sends, to each member t, the strings "r:t:i" of i + 1 bytes of padding.
    for (int t = 0; t < g.size(); ++t)
      for (int i = 0; i < 30; ++i)
        ch.send_to(t, std::to_string(g.rank()) + ":" + std::to_string(t) + ":" +
                          std::string(static_cast<std::size_t>(i * 13), 'x'));
    g.quiesce();
    EXPECT_EQ(wrong, 0u);
    std::vector<std::string> expected;
    for (int r = 0; r < g.size(); ++r)
      for (int i = 0; i < 30; ++i)
        expected.push_back(std::to_string(r) + ":" + std::to_string(g.rank()) + ":" +
                           std::string(static_cast<std::size_t>(i * 13), 'x'));
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(got, expected);
  });
}

namespace {

// What the async calls of a round on a group did on this rank.
struct call_log {
  std::vector<std::uint64_t> arrived;  // per key: calls that ended here
  std::uint64_t wrong = 0;             // calls whose context disagreed with the call
  int me = -1;                         // this rank's group rank
  std::uint64_t id = 0;                // the group's
};

// A call for `key` with `hops` left, issued by group rank `from`: forwards to the next member
// around the group until no hops are left, then counts the key.
struct hop_call {
  template <class Ctx>
  void operator()(Ctx& ctx, std::uint64_t key, int hops, int from) const {
    call_log& log = ctx.state();
    if (ctx.source() != from || ctx.rank() != log.me || !ctx.group() || ctx.group()->id() != log.id)
      ++log.wrong;
    if (hops > 0)
      ctx.async((ctx.rank() + 1) % ctx.size(), hop_call{}, key, hops - 1, ctx.rank());
    else
      ++log.arrived[key];
  }
};

}  // namespace

// Async calls on every overlapping group at once, each forwarding around its group: every
// call ends once, on the member the reference says, with group ranks in its context;
// terminated group by group with group::quiesce.
TEST(ChannelGroups, AsyncCallsOnOverlappingGroups) {
  run([](cairn::world& w) {
    auto groups = test_groups(w);
    constexpr std::uint64_t keys = 97;
    std::vector<std::unique_ptr<call_log>> logs;
    std::vector<std::unique_ptr<cairn::async_channel<cairn::route::grid, call_log>>> chans;
    std::vector<std::size_t> in;  // the groups this rank is in
    for (std::size_t i = 0; i < groups.size(); ++i) {
      auto& g = groups[i];
      if (g.rank() < 0) continue;
      in.push_back(i);
      auto& log = *logs.emplace_back(std::make_unique<call_log>());
      log.arrived.assign(keys, 0);
      log.me = g.rank();
      log.id = g.id();
      chans.push_back(std::make_unique<cairn::async_channel<cairn::route::grid, call_log>>(
          g, log, cairn::route::grid{}, cairn::channel_options{.buffer_bytes = 64}));
    }
    for (std::size_t j = 0; j < in.size(); ++j) {
      const auto& g = groups[in[j]];
      for (std::uint64_t k : keys_of(in[j] + 11, g.rank(), keys))
        chans[j]->async(static_cast<int>(k % static_cast<std::uint64_t>(g.size())), hop_call{}, k,
                        static_cast<int>(k % 4), g.rank());
    }
    for (std::size_t j = 0; j < in.size(); ++j) {
      auto& g = groups[in[j]];
      g.quiesce();
      std::vector<std::uint64_t> expected(keys, 0);
      for (int q = 0; q < g.size(); ++q)
        for (std::uint64_t k : keys_of(in[j] + 11, q, keys))
          if (static_cast<int>((k % static_cast<std::uint64_t>(g.size()) + k % 4) %
                               static_cast<std::uint64_t>(g.size())) == g.rank())
            ++expected[k];
      EXPECT_EQ(logs[j]->wrong, 0u) << "group " << in[j];
      EXPECT_EQ(logs[j]->arrived, expected) << "group " << in[j] << " of " << g.size();
    }
    // A target outside the group is refused on the rank that names it, before anything is sent.
    if (!chans.empty()) {
      const int n = groups[in[0]].size();
      try {
        chans[0]->async(n, hop_call{}, std::uint64_t{0}, 0, 0);
        ADD_FAILURE() << "no error for an async target outside the group";
      } catch (const cairn::error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("rank " + std::to_string(w.rank())), std::string::npos) << what;
        EXPECT_NE(what.find("target rank " + std::to_string(n) + " is outside the group of " +
                            std::to_string(n) + " ranks"),
                  std::string::npos)
            << what;
      }
    }
  });
}
