#pragma once
// Shared pieces of the collective tests: a non-commutative operation, seeded block data cheap to
// recompute on any rank, and readable comparisons.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
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
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
          x.c * y.b + x.d * y.d};
}
/// n pseudo-random matrices for a seed.
inline std::vector<mat2> random_mats(std::size_t n, std::uint64_t seed) {
  auto raw = random_values<std::uint32_t>(4 * n, seed);
  std::vector<mat2> m(n);
  if (n) std::memcpy(m.data(), raw.data(), n * sizeof(mat2));
  return m;
}

/// "" if equal, else where they first differ (no dump of 100000-element vectors on failure).
inline std::string mismatch(const std::vector<std::int64_t>& got,
                            const std::vector<std::int64_t>& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + ", expected " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + ", expected " +
             std::to_string(want[i]);
  return "";
}

/// Data of the block collectives, cheap to recompute on any rank: element i of the block that
/// world rank `from` contributes for world rank `to` (alltoall, scatter; 0 otherwise).
inline std::int64_t datum(unsigned seed, int from, int to, std::size_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull +
                    static_cast<std::uint64_t>(from) * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(to) * 0x94D049BB133111EBull + i;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;  // splitmix64's finalizer
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::int64_t>(x ^ (x >> 31));
}
inline std::vector<std::int64_t> block(std::size_t n, unsigned seed, int from, int to = 0) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = datum(seed, from, to, i);
  return v;
}
// The blocks of world ranks `from` (in order) for `to`, concatenated.
inline std::vector<std::int64_t> blocks_from(std::size_t n, unsigned seed,
                                             const std::vector<int>& from, int to = 0) {
  std::vector<std::int64_t> v;
  v.reserve(from.size() * n);
  for (int f : from)
    for (std::size_t i = 0; i < n; ++i) v.push_back(datum(seed, f, to, i));
  return v;
}
// The blocks of world rank `from` for each of `to` (in order), concatenated.
inline std::vector<std::int64_t> blocks_for(std::size_t n, unsigned seed, int from,
                                            const std::vector<int>& to) {
  std::vector<std::int64_t> v;
  v.reserve(to.size() * n);
  for (int d : to)
    for (std::size_t i = 0; i < n; ++i) v.push_back(datum(seed, from, d, i));
  return v;
}

// Summable data (exact sums over any number of ranks): a datum reduced to [0, 10^6).
inline std::int64_t small_value(std::int64_t datum_value) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(datum_value) % 1000000);
}
inline std::int64_t small_datum(unsigned seed, int from, int to, std::size_t i) {
  return small_value(datum(seed, from, to, i));
}
// The blocks of world rank `from` for each of `to` (in order), concatenated, as small data.
inline std::vector<std::int64_t> small_blocks_for(std::size_t n, unsigned seed, int from,
                                                  const std::vector<int>& to) {
  std::vector<std::int64_t> v = blocks_for(n, seed, from, to);
  for (auto& x : v) x = small_value(x);
  return v;
}
// Element-wise sum over world ranks `from` of their blocks for `to`.
inline std::vector<std::int64_t> small_block_sum(std::size_t n, unsigned seed,
                                                 const std::vector<int>& from, int to) {
  std::vector<std::int64_t> s(n, 0);
  for (int f : from)
    for (std::size_t i = 0; i < n; ++i) s[i] += small_datum(seed, f, to, i);
  return s;
}
// A matrix made of datum(): element i of the matrices world rank `from` contributes for `to`.
inline mat2 mat_datum(unsigned seed, int from, int to, std::size_t i) {
  const auto x = static_cast<std::uint64_t>(datum(seed, from, to, i));
  const auto y = static_cast<std::uint64_t>(datum(seed + 1, from, to, i));
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(x >> 32),
          static_cast<std::uint32_t>(y), static_cast<std::uint32_t>(y >> 32)};
}
inline std::string mat_mismatch(const std::vector<mat2>& got, const std::vector<mat2>& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + ", expected " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i])) return "element " + std::to_string(i) + " differs";
  return "";
}
/// The matrices world rank `from` contributes for `to`.
inline std::vector<mat2> mats(std::size_t n, unsigned seed, int from, int to) {
  std::vector<mat2> m(n);
  for (std::size_t i = 0; i < n; ++i) m[i] = mat_datum(seed, from, to, i);
  return m;
}
/// The element-wise product over world ranks `from` (in order) of their matrices for `to`.
inline std::vector<mat2> mat_product_of(std::size_t n, unsigned seed, std::span<const int> from,
                                        int to) {
  std::vector<mat2> prod(n, mat2{1, 0, 0, 1});
  for (int f : from)
    for (std::size_t i = 0; i < n; ++i) prod[i] = mul(prod[i], mat_datum(seed, f, to, i));
  return prod;
}
/// The product of 2x2 matrices as a non-commutative operation.
inline const auto mat_product =
    cairn::op([](const mat2& x, const mat2& y) { return mul(x, y); }, false);

// Roots 0, the middle and the last rank.
inline std::vector<int> some_roots(int p) {
  std::vector<int> r;
  for (int root : {0, p / 2, p - 1})
    if (r.empty() || r.back() != root) r.push_back(root);
  return r;
}

/// True if a plan's name ("allreduce/shared_memory_direct") is one of the node board's.
inline bool on_board_plan(const std::string& name) {
  return name.find("/shared_memory") != std::string::npos;
}

/// True if `members` (world ranks in group order) are the world in world order: the board runs
/// such a group's collectives on the world's slots (and stages them).
inline bool world_order(cairn::world& w, const std::vector<int>& members) {
  if (members.size() != static_cast<std::size_t>(w.size())) return false;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i] != static_cast<int>(i)) return false;
  return true;
}

/// Whether board collectives past a slot's 16384 bytes can move straight between the ranks'
/// buffers in this run (not on MPI without cross-memory copies): the board refuses it else.
inline bool long_collectives_move_direct(cairn::world& w) {
  std::vector<std::int64_t> a(2049), b(2049);
  try {  // refused on every rank alike, before anything moves
    (void)w.allreduce_init(a, b, cairn::plus{}, cairn::allreduce_algorithm::shared_memory_direct);
    return true;
  } catch (const cairn::error&) {
    return false;
  }
}

/// Where a group's members sit (the hierarchical algorithms' conditions, worked out here from
/// world::node_of independently of the library's group_members).
struct placement {
  int nodes = 0;            ///< nodes the members sit on
  bool consecutive = true;  ///< each node's members are consecutive in group order
  bool equal = true;        ///< every node holds as many members
};
inline placement placement_of(cairn::world& w, const std::vector<int>& members) {
  placement where;
  std::vector<int> seen;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int n = w.node_of(members[i]);
    if (i > 0 && n == w.node_of(members[i - 1])) continue;
    if (std::find(seen.begin(), seen.end(), n) != seen.end())
      where.consecutive = false;
    else
      seen.push_back(n);
  }
  where.nodes = static_cast<int>(seen.size());
  for (int n : seen) {
    std::size_t on_n = 0;
    for (int m : members) on_n += w.node_of(m) == n;
    where.equal = where.equal && on_n * seen.size() == members.size();
  }
  return where;
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

/// Runs `body(c, members)` on the world, on odd ranks in reverse order, and on a shuffled group
/// without rank 1 (members: world ranks in group order).
template <class Body>
void on_groups(cairn::world& w, unsigned seed, Body body) {
  std::vector<int> all(static_cast<std::size_t>(w.size()));
  std::iota(all.begin(), all.end(), 0);
  body(w, all);
  std::vector<int> odd;
  for (int r = w.size() - 1; r >= 0; --r)
    if (r % 2 == 1) odd.push_back(r);
  if (odd.empty()) odd.push_back(0);
  auto g = w.group(odd);
  if (g.rank() >= 0) body(g, odd);
  cairn::test::on_world_and_group(w, seed, [&](auto& c, const std::vector<int>& mem) {
    if (mem.size() != all.size()) body(c, mem);
  });
}

}  // namespace cairn::test
