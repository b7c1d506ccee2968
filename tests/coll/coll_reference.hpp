#pragma once
// Shared pieces of the collective tests: a non-commutative operation and readable comparisons.

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "harness.hpp"

namespace cairn::test {

/// 2x2 matrices modulo 2^32: associative, not commutative (checks rank order).
struct mat2 {
  std::uint32_t a, b, c, d;
  friend bool operator==(const mat2&, const mat2&) = default;
};
inline mat2 mul(const mat2& x, const mat2& y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}
/// n pseudo-random matrices for a seed.
inline std::vector<mat2> random_mats(std::size_t n, std::uint64_t seed) {
  auto raw = random_values<std::uint32_t>(4 * n, seed);
  std::vector<mat2> m(n);
  if (n) std::memcpy(m.data(), raw.data(), n * sizeof(mat2));
  return m;
}

/// "" if equal, else where they first differ (no dump of 100000-element vectors on failure).
inline std::string mismatch(const std::vector<std::int64_t>& got, const std::vector<std::int64_t>& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + ", expected " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + ", expected " +
             std::to_string(want[i]);
  return "";
}

/// Runs body(collectives, members) on the world and, where this rank belongs to it, on a group
/// of members shuffled by `shuffle_seed` (all ranks but world rank 1 when there are at least
/// 3): `members` lists the world ranks in group-rank order.
template <class Body>
void on_world_and_group(cairn::world& w, unsigned shuffle_seed, Body body) {
  std::vector<int> all(static_cast<std::size_t>(w.size()));
  std::iota(all.begin(), all.end(), 0);
  body(w, all);
  std::vector<int> mem;
  for (int r = 0; r < w.size(); ++r)
    if (w.size() < 3 || r != 1) mem.push_back(r);
  std::mt19937 g(shuffle_seed);
  std::shuffle(mem.begin(), mem.end(), g);
  auto grp = w.group(mem);
  if (grp.rank() >= 0) body(grp, mem);
}

}  // namespace cairn::test
