// Routes as tables, without communication: from every rank to every rank the next hops reach
// the owner within max_hops, grid hops change one coordinate, and a rank's peers number at
// most Σ(s_d − 1) on a grid and ⌈log2 P⌉ on the hypercube.
#include <bit>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/msg/route.hpp"

namespace {

using cairn::msg::grid_next_hops;
using cairn::msg::hypercube_next_hops;
using cairn::msg::node_aware_next_hops;

// Follows next hops from `src` to `dest`; returns the hop count (or -1 on a loop).
int walk(const std::vector<std::vector<int>>& tables, int src, int dest) {
  int at = src, hops = 0;
  while (at != dest) {
    const int next = tables[static_cast<std::size_t>(at)][static_cast<std::size_t>(dest)];
    if (next < 0 || next >= static_cast<int>(tables.size()) || next == at || ++hops > 64) return -1;
    at = next;
  }
  return hops;
}

std::set<int> peers_of(const std::vector<int>& table, int me) {
  std::set<int> p;
  for (int x : table)
    if (x != me) p.insert(x);
  return p;
}

TEST(Route, GridIsDimensionOrdered) {
  const std::vector<std::vector<int>> shapes = {
      {1}, {2}, {7}, {2, 2}, {2, 3}, {3, 2}, {4, 4}, {2, 3, 4}, {5, 1, 3}, {2, 2, 2, 2}, {6, 7}};
  for (const auto& dims : shapes) {
    int p = 1, buffers = 0, nontrivial = 0;
    for (int d : dims) {
      p *= d;
      buffers += d - 1;
      nontrivial += d > 1;
    }
    std::vector<std::vector<int>> t;
    for (int r = 0; r < p; ++r) t.push_back(grid_next_hops(r, dims));
    for (int r = 0; r < p; ++r) {
      EXPECT_LE(static_cast<int>(peers_of(t[static_cast<std::size_t>(r)], r).size()), buffers);
      for (int d = 0; d < p; ++d) {
        const int h = walk(t, r, d);
        ASSERT_GE(h, 0) << "loop from " << r << " to " << d;
        EXPECT_LE(h, nontrivial);
        // Each hop changes exactly one coordinate.
        const int next = t[static_cast<std::size_t>(r)][static_cast<std::size_t>(d)];
        int changed = 0, stride = p;
        for (int x : dims) {
          stride /= x;
          changed += (r / stride % x) != (next / stride % x);
        }
        EXPECT_EQ(changed, r == d ? 0 : 1);
      }
    }
  }
}

TEST(Route, BalancedGridDims) {
  for (int p = 1; p <= 300; ++p) {
    for (int per_node : {0, 1, 2, 4}) {
      const auto dims = cairn::msg::route::grid::balanced_dims(p, per_node);
      int prod = 1;
      for (int d : dims) prod *= d;
      EXPECT_EQ(prod, p) << p << " ranks, " << per_node << " per node";
      if (per_node > 1 && per_node < p && p % per_node == 0) {
        EXPECT_EQ(dims.back(), per_node);
      }
    }
  }
  EXPECT_EQ(cairn::msg::route::grid::balanced_dims(16, 0), (std::vector<int>{4, 4}));
  EXPECT_EQ(cairn::msg::route::grid::balanced_dims(64, 0), (std::vector<int>{8, 8}));
}

TEST(Route, HypercubeReachesEveryRankForAnySize) {
  for (int p = 1; p <= 70; ++p) {
    std::vector<std::vector<int>> t;
    for (int r = 0; r < p; ++r) t.push_back(hypercube_next_hops(r, p));
    const int bits = p > 1 ? std::bit_width(static_cast<unsigned>(p - 1)) : 0;
    for (int r = 0; r < p; ++r) {
      EXPECT_LE(static_cast<int>(peers_of(t[static_cast<std::size_t>(r)], r).size()), bits);
      for (int d = 0; d < p; ++d) {
        const int h = walk(t, r, d);
        ASSERT_GE(h, 0) << p << " ranks: loop from " << r << " to " << d;
        EXPECT_EQ(h, std::popcount(static_cast<unsigned>(r ^ d)));
      }
    }
  }
}

TEST(Route, NodeAwareCrossesNodesOnce) {
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 1, 1}, {0, 0, 0, 1, 1, 1, 2, 2, 2}, {0, 0, 0, 1, 2, 2}, {0, 1, 2, 3}, {0, 0, 0, 0}};
  for (const auto& node_of : layouts) {
    const int p = static_cast<int>(node_of.size());
    std::vector<std::vector<int>> t;
    for (int r = 0; r < p; ++r) t.push_back(node_aware_next_hops(r, node_of));
    for (int r = 0; r < p; ++r)
      for (int d = 0; d < p; ++d) {
        ASSERT_GE(walk(t, r, d), 0);
        EXPECT_LE(walk(t, r, d), 3);
        // Count node crossings along the path: exactly one between different nodes.
        int at = r, crossings = 0;
        while (at != d) {
          const int next = t[static_cast<std::size_t>(at)][static_cast<std::size_t>(d)];
          crossings +=
              node_of[static_cast<std::size_t>(at)] != node_of[static_cast<std::size_t>(next)];
          at = next;
        }
        EXPECT_EQ(
            crossings,
            node_of[static_cast<std::size_t>(r)] != node_of[static_cast<std::size_t>(d)] ? 1 : 0);
      }
  }
}

}  // namespace
