// TRAM's grid model (include/cairn/msg/grid_model.hpp): the counts of TRAM's Table 3.2, a
// brute-force count on uneven shapes, and on both engines the messages a channel on route::grid
// actually sends when every rank sends one item to every rank.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cairn/msg/grid_model.hpp"
#include "harness.hpp"

using cairn::test::run;
namespace msg = cairn::msg;

namespace {
// Destinations of rank `me` by the number of coordinates in which they differ from it.
std::vector<std::uint64_t> count_by_brute_force(const std::vector<int>& dims, int me) {
  int total = 1;
  for (int d : dims) total *= d;
  std::vector<std::uint64_t> by(dims.size() + 1, 0);
  for (int k = 0; k < total; ++k) {
    std::size_t differ = 0;
    for (int a = me, b = k, d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      differ += a % dims[static_cast<std::size_t>(d)] != b % dims[static_cast<std::size_t>(d)];
      a /= dims[static_cast<std::size_t>(d)];
      b /= dims[static_cast<std::size_t>(d)];
    }
    ++by[differ];
  }
  return by;
}

struct item {
  std::int32_t dest, src;
};
}  // namespace

// TRAM's Table 3.2. (Its 8.3 % for two messages on 32^3 reads 8.8 % from its own count,
// 2883 / 32768.)
TEST(GridModel, TramTable) {
  const auto cube = msg::model_grid({32, 32, 32});
  EXPECT_EQ(cube.ranks_at, (std::vector<std::uint64_t>{1, 93, 2883, 29791}));
  EXPECT_EQ(cube.ranks(), 32768u);
  EXPECT_EQ(cube.peers, 93);
  EXPECT_EQ(cube.buffer_memory(), 93u * 16384u);
  const auto four = msg::model_grid({16, 16, 16, 16}, 1000);
  EXPECT_EQ(four.ranks_at, (std::vector<std::uint64_t>{1, 60, 1350, 13500, 50625}));
  EXPECT_EQ(four.peers, 60);
  EXPECT_EQ(four.buffer_memory(), 60000u);
  EXPECT_DOUBLE_EQ(four.mean_messages(), (60.0 + 2 * 1350 + 3 * 13500 + 4 * 50625) / 65536);
  EXPECT_NE(four.describe().find("      4         50625            77.2"), std::string::npos)
      << four.describe();
}

TEST(GridModel, UnevenShapesMatchACount) {
  for (const std::vector<int>& dims :
       std::vector<std::vector<int>>{{1}, {7}, {3, 1, 4, 2}, {2, 5}, {6, 1, 1}, {2, 3, 4, 5}}) {
    const auto m = msg::model_grid(dims);
    int total = 1;
    for (int d : dims) total *= d;
    for (int me : {0, total / 2, total - 1})
      EXPECT_EQ(m.ranks_at, count_by_brute_force(dims, me)) << m.describe();
    int peers = 0;
    for (int d : dims) peers += d - 1;
    EXPECT_EQ(m.peers, peers);
  }
  EXPECT_THROW((void)msg::model_grid({4, 0}), cairn::error);
}

// Every rank sends one item to every rank over route::grid; the messages that carried items,
// summed over all ranks, are the model's count from every rank, and the forwarded ones the
// rest after each item's last message.
TEST(GridModel, ChannelsSendWhatTheModelCounts) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    std::vector<std::vector<int>> shapes{msg::route::grid::balanced_dims(p, 0)};
    if (p == 16) shapes.push_back({2, 2, 2, 2});
    if (p == 64) shapes.push_back({4, 4, 4});
    if (p == 256) shapes.push_back({4, 4, 4, 4});
    for (const auto& dims : shapes) {
      std::vector<int> from(static_cast<std::size_t>(p), 0);
      int wrong = 0;
      auto dist = msg::distribution([](const item& x) { return x.dest; });
      auto ch = cairn::make_channel<item>(
          w, dist,
          [&](const item& x) {
            wrong += x.dest != me;
            ++from[static_cast<std::size_t>(x.src)];
          },
          msg::route::grid{dims});
      for (int k = 0; k < p; ++k) ch.send(item{(me + k) % p, me});
      w.quiesce();
      EXPECT_EQ(wrong, 0);
      EXPECT_EQ(from, std::vector<int>(static_cast<std::size_t>(p), 1));
      const auto model = msg::model_grid(dims);
      std::vector<std::uint64_t> mine{ch.stats().items_in_buffers, ch.stats().forwarded}, all(2);
      w.allreduce(mine, all, cairn::plus{});
      const auto ranks = static_cast<std::uint64_t>(p);
      EXPECT_EQ(all[0], ranks * model.messages_to_all()) << model.describe();
      EXPECT_EQ(all[1], ranks * model.messages_to_all() - ranks * (ranks - 1)) << model.describe();
    }
  });
}
