#pragma once
/// \file
/// Graphs of the `bfs` benchmark: distributed generation (Erdős–Rényi and Graph500-style
/// Kronecker/R-MAT), a 1-D block-distributed CSR built with cairn's bulk alltoallv (no channels,
/// so the MPI baseline and cairn search the same graph built the same way), root selection,
/// and the Graph500 validation of a BFS tree.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"

namespace cairn::bench::graph {

/// Global vertex id (graphs here have fewer than 2^32 vertices).
using vertex = std::uint32_t;
/// "No parent" / "not reached".
inline constexpr vertex none = std::numeric_limits<vertex>::max();

/// splitmix64 finalizer: counter-based randomness, so ranks generate disjoint edge sets.
inline std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The two graph families of the benchmark.
enum class kind { erdos_renyi, kronecker };

/// Name in rows ("er", "kronecker").
inline const char* name_of(kind k) { return k == kind::erdos_renyi ? "er" : "kronecker"; }

/// Edges per vertex: Graph500's 16 for Kronecker; 8 for Erdős–Rényi (AP 4.4 gives no degree),
/// which also keeps the two graphs' rows apart (the row size is the edge list per rank).
inline int edge_factor(kind k) { return k == kind::erdos_renyi ? 8 : 16; }

/// An invertible scramble of [0, 2^bits) (odd multiplies and xorshifts): Graph500 relabels
/// Kronecker vertices so that high-degree vertices are not all on rank 0.
inline vertex scramble(std::uint64_t x, int bits) noexcept {
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  x = (x * 0xD1342543DE82EF95ULL + 0x1234567) & mask;
  x ^= x >> (bits / 2 + 1);
  x = (x * 0x9E3779B97F4A7C15ULL) & mask;
  x ^= x >> (bits / 3 + 1);
  return static_cast<vertex>(x);
}

/// This rank's part of an undirected graph (each edge stored at both endpoints), CSR.
struct csr {
  kind family = kind::erdos_renyi;
  int scale = 0;            ///< n = 2^scale vertices
  std::uint64_t n = 0;      ///< vertices
  int factor = 0;           ///< edges generated per vertex (edge_factor() unless chosen)
  std::uint64_t edges = 0;  ///< generated edges (factor · n), self loops included
  cairn::block_distribution dist{1, 1};
  std::uint64_t first = 0;             ///< first local vertex
  std::uint64_t local = 0;             ///< local vertices
  std::vector<std::uint64_t> offsets;  ///< local + 1 entries
  std::vector<vertex> adj;             ///< neighbours (global ids), self loops left out

  [[nodiscard]] int owner(vertex v) const noexcept { return dist.owner(v); }
  [[nodiscard]] std::uint64_t index(vertex v) const noexcept { return dist.local_index(v); }
  [[nodiscard]] std::uint64_t degree(std::uint64_t li) const noexcept {
    return offsets[li + 1] - offsets[li];
  }
};

/// Generates edge `e` of the graph.
inline std::array<vertex, 2> make_edge(kind k, int scale, std::uint64_t e) noexcept {
  const std::uint64_t seed = mix(e * 2 + (k == kind::kronecker ? 1 : 0));
  if (k == kind::erdos_renyi) {
    const std::uint64_t mask = (std::uint64_t{1} << scale) - 1;
    return {static_cast<vertex>(seed & mask), static_cast<vertex>(mix(seed) & mask)};
  }
  // R-MAT with Graph500's A = 0.57, B = 0.19, C = 0.19 (D = 0.05): one quadrant per bit, four
  // 16-bit draws from each 64-bit random number.
  constexpr std::uint64_t a = 37355, ab = a + 12452, abc = ab + 12452;  // × 2^-16
  std::uint64_t u = 0, v = 0, r = seed;
  for (int bit = 0; bit < scale; ++bit) {
    if (bit % 4 == 0) r = mix(r);
    const std::uint64_t x = (r >> (16 * (bit % 4))) & 0xFFFF;
    const std::uint64_t bu = x >= ab, bv = (x >= a && x < ab) || x >= abc;
    u = u << 1 | bu;
    v = v << 1 | bv;
  }
  return {scramble(u, scale), scramble(v, scale)};
}

/// Builds the graph of `family` with 2^k vertices per rank (2^(k + floor(log2 P)) in all):
/// every rank generates its share of the edges and one bulk alltoallv takes each edge to both
/// endpoints' owners (collective). `factor`: edges per vertex, 0 for edge_factor(family).
inline csr build(cairn::world& w, kind family, int k, int factor = 0) {
  csr g;
  const int ranks = w.size();
  int log_p = 0;
  while ((2 << log_p) <= ranks) ++log_p;
  g.family = family;
  g.scale = k + log_p;
  g.n = std::uint64_t{1} << g.scale;
  g.factor = factor > 0 ? factor : edge_factor(family);
  g.edges = static_cast<std::uint64_t>(g.factor) * g.n;
  g.dist = cairn::block_distribution(g.n, ranks);
  g.first = g.dist.local_size(0) * static_cast<std::uint64_t>(w.rank());
  g.local = g.dist.local_size(w.rank());

  const auto nr = static_cast<std::size_t>(ranks);
  const std::uint64_t per = (g.edges + nr - 1) / nr;
  const std::uint64_t lo = std::min(g.edges, per * static_cast<std::uint64_t>(w.rank()));
  const std::uint64_t hi = std::min(g.edges, lo + per);
  std::vector<std::size_t> send_counts(nr, 0), recv_counts(nr, 0), at(nr, 0);
  // Two passes over the generator (count, then fill) rather than storing the edge list twice.
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<vertex> out;
    if (pass) {
      for (std::size_t r = 1; r < nr; ++r) at[r] = at[r - 1] + send_counts[r - 1];
      out.resize(2 * (at[nr - 1] + send_counts[nr - 1]));
    }
    for (std::uint64_t e = lo; e < hi; ++e) {
      const auto [u, v] = make_edge(family, g.scale, e);
      if (u == v) continue;
      for (const auto& [x, y] : {std::array<vertex, 2>{u, v}, std::array<vertex, 2>{v, u}}) {
        const auto o = static_cast<std::size_t>(g.owner(x));
        if (!pass) {
          ++send_counts[o];
        } else {
          out[2 * at[o]] = x;
          out[2 * at[o] + 1] = y;
          ++at[o];
        }
      }
    }
    if (!pass) continue;
    // Pairs travel as two vertex ids each.
    for (auto& c : send_counts) c *= 2;
    w.alltoall(send_counts, recv_counts);
    std::size_t total = 0;
    for (auto c : recv_counts) total += c;
    std::vector<vertex> in(total);
    w.alltoallv(out, send_counts, in, recv_counts);
    g.offsets.assign(g.local + 1, 0);
    for (std::size_t i = 0; i < total; i += 2) ++g.offsets[g.index(in[i]) + 1];
    for (std::uint64_t i = 0; i < g.local; ++i) g.offsets[i + 1] += g.offsets[i];
    std::vector<std::uint64_t> fill(g.offsets.begin(), g.offsets.end() - 1);
    g.adj.resize(total / 2);
    for (std::size_t i = 0; i < total; i += 2) g.adj[fill[g.index(in[i])]++] = in[i + 1];
  }
  return g;
}

/// `count` search roots with at least one edge, the same on every rank (collective):
/// candidates from a fixed sequence, kept when their owner sees a non-zero degree.
inline std::vector<vertex> roots(cairn::world& w, const csr& g, int count) {
  std::vector<vertex> out;
  for (std::uint64_t c = 0; static_cast<int>(out.size()) < count && c < 64 * g.n; ++c) {
    const auto v = static_cast<vertex>(mix(c ^ 0xB0057) & (g.n - 1));
    std::uint64_t deg = g.owner(v) == w.rank() ? g.degree(g.index(v)) : 0, all = 0;
    w.allreduce(std::span(&deg, 1), std::span(&all, 1), cairn::plus{});
    if (all > 0) out.push_back(v);
  }
  if (static_cast<int>(out.size()) < count) throw std::runtime_error("bfs: the graph has no edges");
  return out;
}

/// A search's result on this rank: parent and level of each local vertex (none if unreached).
struct tree {
  std::vector<vertex> parent;
  std::vector<vertex> level;
  void reset(const csr& g) {
    parent.assign(g.local, none);
    level.assign(g.local, none);
  }
};

/// Graph500's validation (collective; throws with the first problem found on any rank):
/// the root is its own parent at level 0; every other reached vertex has a reached parent one
/// level up that is one of its neighbours; every edge joins two reached or two unreached
/// vertices whose levels differ by at most one; unreached vertices have no parent. Levels of
/// remote vertices come from one allgatherv. Returns the edges traversed (input edges, self
/// loops left out, with both endpoints in the root's component), the numerator of TEPS.
inline std::uint64_t validate(cairn::world& w, const csr& g, vertex root, const tree& t,
                              const std::string& who) {
  const auto nr = static_cast<std::size_t>(w.size());
  std::vector<std::size_t> counts(nr);
  for (std::size_t r = 0; r < nr; ++r) counts[r] = g.dist.local_size(static_cast<int>(r));
  std::vector<vertex> lv(g.n);
  w.allgatherv(t.level, lv, counts);
  std::string problem;
  std::uint64_t degree_sum = 0;
  for (std::uint64_t i = 0; i < g.local && problem.empty(); ++i) {
    const auto v = static_cast<vertex>(g.first + i);
    const vertex p = t.parent[i], l = t.level[i];
    const std::string at = "vertex " + std::to_string(v);
    if (v == root) {
      if (p != root || l != 0)
        problem = "root " + std::to_string(root) + " has parent " + std::to_string(p) + ", level " +
                  std::to_string(l);
    } else if (l == none) {
      if (p != none) problem = at + " is unreached but has parent " + std::to_string(p);
    } else if (p == none || p >= g.n || lv[p] == none || lv[p] + 1 != l) {
      problem = at + " at level " + std::to_string(l) + " has parent " + std::to_string(p) +
                " that is not one level up" + " (root " + std::to_string(root) + ", parent level " +
                (p < g.n ? std::to_string(lv[p]) : std::string("?")) + ")";
    } else if (std::find(g.adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[i]),
                         g.adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[i + 1]),
                         p) == g.adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[i + 1])) {
      problem = at + "'s parent " + std::to_string(p) + " is not a neighbour";
    }
    for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1] && problem.empty(); ++e) {
      const vertex u = g.adj[e], lu = lv[u];
      if ((l == none) != (lu == none))
        problem = "edge " + std::to_string(v) + "-" + std::to_string(u) +
                  " joins a reached and an unreached vertex";
      else if (l != none && (l > lu + 1 || lu > l + 1))
        problem = "edge " + std::to_string(v) + "-" + std::to_string(u) + " spans levels " +
                  std::to_string(l) + " and " + std::to_string(lu);
    }
    if (l != none) degree_sum += g.degree(i);
  }
  std::array<std::uint64_t, 2> mine{problem.empty() ? 0u : 1u, degree_sum}, all{};
  w.allreduce(std::span(mine), std::span(all), cairn::plus{});
  if (!problem.empty())
    throw std::runtime_error("bfs (" + who + "): rank " + std::to_string(w.rank()) + ": " +
                             problem);
  if (all[0] != 0) throw std::runtime_error("bfs (" + who + "): validation failed on another rank");
  return all[1] / 2;
}

}  // namespace cairn::bench::graph
