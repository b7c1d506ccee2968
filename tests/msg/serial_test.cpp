// Channels of variable-size items and async calls, both engines: every item of 0 B to 1 MiB
// (strings, vectors, structs with a cereal serialize) arrives exactly once and intact on every
// route and buffer size; async calls with argument packs run once on their target; broadcast
// calls run exactly once per rank; ranks that run different registries are refused.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "cairn/msg/async.hpp"
#include "cairn/msg/serial_channel.hpp"
#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::run;

namespace {

// A struct serialized by cereal (not trivially copyable: it holds a string and a vector).
struct labelled {
  std::string label;
  std::vector<std::int32_t> values;
  std::int64_t id = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(label, values, id);
  }
  bool operator==(const labelled&) const = default;
};

// A trivially copyable struct (travels as its bytes).
struct point {
  double x, y;
  std::int32_t tag;
  bool operator==(const point&) const = default;
};

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

// Item i of rank r: its destination and contents, the same on every rank. Sizes span 0 B to
// 1 MiB: mostly small, some around the buffer size, a few far beyond it.
struct planned {
  int dest;
  std::string text;
};
planned plan_item(std::uint64_t seed, int rank, int i, int ranks) {
  std::mt19937_64 g(
      mix(seed + 1000003ULL * static_cast<std::uint64_t>(rank) + static_cast<std::uint64_t>(i)));
  const std::uint64_t pick = g() % 100;
  std::size_t len;
  if (pick < 70)
    len = g() % 40;
  else if (pick < 90)
    len = 50 + g() % 20000;
  else if (pick < 98)
    len = g() % 70000;
  else
    len = (std::size_t{1} << 20) - g() % 3;  // about 1 MiB
  if (pick == 0) len = 0;
  std::string s(len, '\0');
  for (auto& c : s) c = static_cast<char>('a' + g() % 26);
  return {static_cast<int>(g() % static_cast<std::uint64_t>(ranks)), std::move(s)};
}

template <class Route>
void exchange_strings(cairn::world& w, Route route, std::size_t buffer_bytes, bool queue_local,
                      std::uint64_t seed, int items) {
  std::vector<std::pair<int, std::string>> got;
  auto ch = cairn::make_channel<std::string>(
      w, cairn::hashed_distribution(w.size()),
      [&](const std::string& s, cairn::channel_context& c) { got.emplace_back(c.source(), s); },
      route,
      cairn::channel_options{
          .queue_local = queue_local, .name = "strings", .buffer_bytes = buffer_bytes});
  for (int i = 0; i < items; ++i) {
    planned p = plan_item(seed, w.rank(), i, w.size());
    ch.send_to(p.dest, p.text);
  }
  w.quiesce();
  std::vector<std::pair<int, std::string>> want;
  for (int r = 0; r < w.size(); ++r)
    for (int i = 0; i < items; ++i) {
      planned p = plan_item(seed, r, i, w.size());
      if (p.dest == w.rank()) want.emplace_back(r, std::move(p.text));
    }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  ASSERT_EQ(got.size(), want.size()) << "rank " << w.rank();
  EXPECT_TRUE(got == want) << "rank " << w.rank() << ": items differ";
}

TEST(SerialChannel, ItemsOfAnySizeArriveExactlyOnce) {
  run([](cairn::world& w) {
    std::mt19937_64 g(20261126);  // the same on every rank: configurations agree
    const int rounds = w.size() > 8 ? 6 : 12;
    for (int k = 0; k < rounds; ++k) {
      static constexpr std::size_t buffers[] = {64, 100, 1024, 16384, 65536};
      const std::size_t b = buffers[g() % 5];
      const bool queue_local = g() % 2 != 0;
      const std::uint64_t seed = g();
      const int items = 20 + static_cast<int>(g() % 40);
      switch (g() % 3) {
        case 0: exchange_strings(w, cairn::route::direct{}, b, queue_local, seed, items); break;
        case 1: exchange_strings(w, cairn::route::grid{}, b, queue_local, seed, items); break;
        default: exchange_strings(w, cairn::route::hypercube{}, b, queue_local, seed, items); break;
      }
      if (::testing::Test::HasFailure()) break;
    }
  });
}

// Keys that are not integers pick their owner through the distribution given (here by a
// callable); structs with cereal's serialize arrive equal; handlers send further items.
TEST(SerialChannel, StructsAndHandlerChains) {
  run([](cairn::world& w) {
    const int n = w.size();
    std::vector<labelled> got;
    auto owner = cairn::msg::distribution([n](const labelled& x) {
      return static_cast<int>(mix(static_cast<std::uint64_t>(x.id)) %
                              static_cast<std::uint64_t>(n));
    });
    cairn::msg::serial_channel<labelled, decltype(owner), std::function<void(const labelled&)>,
                               cairn::route::grid>* self = nullptr;
    cairn::msg::serial_channel<labelled, decltype(owner), std::function<void(const labelled&)>,
                               cairn::route::grid>
        ch(
            w, owner,
            [&](const labelled& x) {
              got.push_back(x);
              if (x.values.size() < 4) {  // a chain: send a longer copy on
                labelled next = x;
                next.values.push_back(static_cast<std::int32_t>(next.values.size()));
                next.id = x.id * 7 + 1;
                self->send(next);
              }
            },
            cairn::route::grid{}, cairn::channel_options{.buffer_bytes = 256});
    self = &ch;
    for (int i = 0; i < 50; ++i) {
      std::string label = "r";  // appended piece by piece (g++ 12's -Wrestrict false positive)
      label += std::to_string(w.rank());
      label += '.';
      label += std::to_string(i);
      ch.send(labelled{label, {}, w.rank() * 1000 + i});
    }
    w.quiesce();
    // Every start item makes a chain of 5 items; each item lands on the owner of its id.
    std::uint64_t mine = got.size(), all = 0;
    w.allreduce(std::span(&mine, 1), std::span(&all, 1), cairn::plus{});
    EXPECT_EQ(all, 5u * 50u * static_cast<std::uint64_t>(n));
    for (const auto& x : got) {
      EXPECT_EQ(owner.owner(x), w.rank());
      EXPECT_EQ(x.label.substr(0, 1), "r");
      for (std::size_t j = 0; j < x.values.size(); ++j)
        EXPECT_EQ(x.values[j], static_cast<std::int32_t>(j));
    }
  });
}

// What async calls record on a rank (the channel's state).
struct call_log {
  std::vector<std::tuple<int, int, std::string, std::vector<double>, point>> calls;
  std::vector<int> broadcasts;
  std::uint64_t chain_ends = 0;
};

struct relay {  // a named function object: it calls itself on the next rank
  template <class Ctx>
  void operator()(Ctx& ctx, int hops, std::uint64_t token) const {
    if (hops == 0) {
      ++ctx.state().chain_ends;
      return;
    }
    ctx.async((ctx.rank() + 1) % ctx.world().size(), relay{}, hops - 1, token);
  }
};

TEST(Async, CallsWithArgumentPacksRunOnceOnTheirTarget) {
  run([](cairn::world& w) {
    call_log log;
    auto a = cairn::make_async(w, log, cairn::route::grid{},
                               cairn::channel_options{.buffer_bytes = 512});
    const int calls = 200;
    auto plan = [&](int r, int i) {
      std::mt19937_64 g(
          mix(77 + static_cast<std::uint64_t>(r) * 100003 + static_cast<std::uint64_t>(i)));
      const int dest = static_cast<int>(g() % static_cast<std::uint64_t>(w.size()));
      std::string s(g() % 3 == 0 ? g() % 30000 : g() % 20, 'x');
      std::vector<double> v(g() % 5, 0.5 * static_cast<double>(i));
      point p{static_cast<double>(r), static_cast<double>(i),
              static_cast<std::int32_t>(g() % 1000)};
      return std::make_tuple(dest, s, v, p);
    };
    for (int i = 0; i < calls; ++i) {
      auto [dest, s, v, p] = plan(w.rank(), i);
      a.async(
          dest,
          [](auto& ctx, int index, const std::string& text, std::vector<double> values, point pt) {
            ctx.state().calls.emplace_back(ctx.source(), index, text, std::move(values), pt);
          },
          i, s, v, p);
    }
    a.async_bcast([](auto& ctx, int from) { ctx.state().broadcasts.push_back(from); }, w.rank());
    a.async(w.rank(), relay{}, 3 * w.size(), std::uint64_t{42});
    w.quiesce();

    decltype(log.calls) want;
    for (int r = 0; r < w.size(); ++r)
      for (int i = 0; i < calls; ++i) {
        auto [dest, s, v, p] = plan(r, i);
        if (dest == w.rank()) want.emplace_back(r, i, s, v, p);
      }
    std::sort(want.begin(), want.end(), [](const auto& x, const auto& y) {
      return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
    });
    auto got = log.calls;
    std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) {
      return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
    });
    ASSERT_EQ(got.size(), want.size()) << "rank " << w.rank();
    EXPECT_TRUE(got == want) << "rank " << w.rank();
    std::sort(log.broadcasts.begin(), log.broadcasts.end());
    std::vector<int> every(static_cast<std::size_t>(w.size()));
    for (int r = 0; r < w.size(); ++r) every[static_cast<std::size_t>(r)] = r;
    EXPECT_EQ(log.broadcasts, every) << "rank " << w.rank();
    std::uint64_t ends = log.chain_ends, all = 0;
    w.allreduce(std::span(&ends, 1), std::span(&all, 1), cairn::plus{});
    EXPECT_EQ(all, static_cast<std::uint64_t>(w.size()));
  });
}

// A broadcast item reaches every rank's handler exactly once, on every route, for fixed-size
// and serialized items alike.
TEST(SerialChannel, BroadcastItemsArriveOncePerRank) {
  run([](cairn::world& w) {
    std::vector<int> fixed_from, text_from;
    auto fixed = cairn::make_channel<int>(
        w, cairn::hashed_distribution(w.size()), [&](int from) { fixed_from.push_back(from); },
        cairn::route::grid{}, cairn::channel_options{.buffer_items = 3});
    auto text = cairn::make_channel<std::string>(
        w, cairn::hashed_distribution(w.size()),
        [&](const std::string& s) { text_from.push_back(std::stoi(s)); }, cairn::route::hypercube{},
        cairn::channel_options{.buffer_bytes = 64});
    for (int k = 0; k < 3; ++k) {
      fixed.broadcast(w.rank() * 10 + k);
      text.broadcast(std::to_string(w.rank() * 10 + k));
    }
    w.quiesce();
    std::vector<int> want;
    for (int r = 0; r < w.size(); ++r)
      for (int k = 0; k < 3; ++k) want.push_back(r * 10 + k);
    std::sort(fixed_from.begin(), fixed_from.end());
    std::sort(text_from.begin(), text_from.end());
    EXPECT_EQ(fixed_from, want) << "rank " << w.rank();
    EXPECT_EQ(text_from, want) << "rank " << w.rank();
  });
}

TEST(Async, BadTargetsAreRefusedBeforeAnythingIsSent) {
  run([](cairn::world& w) {
    auto a = cairn::make_async(w);
    const std::string m = cairn::test::message_of([&] {
      a.async(
          w.size(), [](int) {}, 1);
    });
    EXPECT_TRUE(cairn::test::has_text(
        m, "async: rank " + std::to_string(w.rank()) + ": target rank " + std::to_string(w.size()) +
               " is outside the world of " + std::to_string(w.size()) + " ranks"))
        << m;
    auto ch = cairn::make_channel<std::string>(w, cairn::hashed_distribution(w.size()),
                                               [](const std::string&) {});
    const std::string m2 = cairn::test::message_of([&] { ch.send_to(-1, "x"); });
    EXPECT_TRUE(cairn::test::has_text(m2, "channel::send_to: rank " + std::to_string(w.rank()) +
                                              ": target rank -1 is outside the world"))
        << m2;
    w.quiesce();
    EXPECT_EQ(a.stats().sent, 0u);
  });
}

TEST(Async, StatelessCallsWithoutContext) {
  run([](cairn::world& w) {
    static std::array<std::uint64_t, 256> sums{};  // per rank (ranks may be threads of one process)
    sums[static_cast<std::size_t>(w.rank())] = 0;
    w.barrier();
    auto a = cairn::make_async(w);
    for (int i = 0; i < 1000; ++i)
      a.async(
          i % w.size(),
          [](std::uint64_t x, std::string s) {
            (void)s;
            __atomic_fetch_add(&sums[static_cast<std::size_t>(x >> 32)], x & 0xffffffffu,
                               __ATOMIC_RELAXED);
          },
          (static_cast<std::uint64_t>(i % w.size()) << 32) | static_cast<std::uint64_t>(i),
          std::string("s"));
    w.quiesce();
    std::uint64_t want = 0;
    for (int i = w.rank(); i < 1000; i += w.size()) want += static_cast<std::uint64_t>(i);
    EXPECT_EQ(sums[static_cast<std::size_t>(w.rank())],
              want * static_cast<std::uint64_t>(w.size()));
  });
}

}  // namespace

// unpack_all reads arguments of known packed size straight from the bytes and the rest through
// cereal: on both paths a record too short, one with bytes to spare and a count past its end
// are refused with the same cairn::error, never read beyond the record.
TEST(Packing, RecordsThatDoNotHoldTheirValuesAreRefused) {
  namespace md = cairn::msg::detail;
  std::vector<std::byte> b(4 + 8 + 4 + 3);
  std::byte* at = b.data();
  md::pack_to(at, std::uint32_t{7});
  md::pack_to(at, std::uint64_t{1} << 40);
  md::pack_to(at, std::string("abc"));
  ASSERT_EQ(at, b.data() + b.size());
  std::uint32_t u = 0;
  std::uint64_t v = 0;
  std::string s;
  md::unpack_all(b, "async", 3, u, v, s);
  EXPECT_EQ(u, 7u);
  EXPECT_EQ(v, std::uint64_t{1} << 40);
  EXPECT_EQ(s, "abc");
  const std::span<const std::byte> all(b);
  EXPECT_TRUE(has_text(message_of([&] { md::unpack_all(all.first(18), "async", 3, u, v, s); }),
                       "async: rank 3: a record of 18 bytes does not hold (") &&
              has_text(message_of([&] { md::unpack_all(all.first(18), "async", 3, u, v, s); }),
                       "a count past the end of the record"));
  EXPECT_TRUE(has_text(message_of([&] { md::unpack_all(all.first(10), "async", 3, u, v); }),
                       "read past the end of the message"));
  EXPECT_TRUE(has_text(message_of([&] { md::unpack_all(all, "async", 3, u, v); }),
                       "async: rank 3: a record of 19 bytes has 7 bytes more than its values"));
  // The cereal path: a struct with a string and a vector.
  std::vector<std::byte> c;
  md::pack_all(c, labelled{"x", {1, 2}, 5});
  labelled got;
  md::unpack_all(c, "channel", 1, got);
  EXPECT_EQ(got, (labelled{"x", {1, 2}, 5}));
  const std::span<const std::byte> some(c.data(), c.size() - 1);
  EXPECT_TRUE(has_text(
      message_of([&] { md::unpack_all(some, "channel", 1, got); }),
      "channel: rank 1: a record of " + std::to_string(some.size()) + " bytes does not hold ("));
  c.push_back(std::byte{0});
  EXPECT_TRUE(has_text(message_of([&] { md::unpack_all(c, "channel", 1, got); }),
                       "bytes has 1 bytes more than its values"));
}
