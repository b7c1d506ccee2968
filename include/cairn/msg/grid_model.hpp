#pragma once
/// \file
/// TRAM's cost model of a grid route (TRAM 3.4.3, Table 3.2): on a virtual grid of extents
/// s_0 × … × s_{N−1} with dimension-ordered routing (route::grid), an item from rank j to rank k
/// takes one message per coordinate in which j and k differ, so the number of destinations an
/// item reaches in exactly a messages is the same from every rank: the a-th elementary
/// symmetric sum of (s_d − 1) — C(N, a)·(s − 1)^a on a symmetric grid. A rank keeps one
/// buffer per grid neighbour, Σ(s_d − 1) of them. `cairn-info tram` prints the model.
///
///     auto m = cairn::msg::model_grid({32, 32, 32});
///     // m.ranks_at == {1, 93, 2883, 29791}, m.peers == 93
///     std::cout << m.describe();

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cairn::msg {

/// The model of one grid shape (a value: print it with describe()).
struct grid_model {
  std::vector<int> dims;  ///< extents, slowest first (as route::grid)
  /// ranks_at[a]: destinations an item from any rank reaches in exactly a messages
  /// (a = 0 … dims.size(); a = 0 is the rank itself, delivered without a message).
  std::vector<std::uint64_t> ranks_at;
  int peers = 0;                 ///< buffers a rank keeps (its grid neighbours): Σ(s_d − 1)
  std::size_t buffer_bytes = 0;  ///< bytes of one buffer

  /// Ranks of the grid (the product of the extents).
  [[nodiscard]] std::uint64_t ranks() const noexcept;
  /// Messages per item to a uniformly random destination (the rank itself included).
  [[nodiscard]] double mean_messages() const noexcept;
  /// Messages to send one item from one rank to every rank: Σ a · ranks_at[a].
  [[nodiscard]] std::uint64_t messages_to_all() const noexcept;
  /// Buffer memory a rank holds when every buffer is allocated: peers × buffer_bytes.
  [[nodiscard]] std::uint64_t buffer_memory() const noexcept {
    return static_cast<std::uint64_t>(peers) * buffer_bytes;
  }
  /// The table of TRAM's Table 3.2 (messages, destinations, share) with peers and memory.
  [[nodiscard]] std::string describe() const;
};

/// The model of a grid of extents `dims` whose buffers hold `buffer_bytes` each. Throws
/// cairn::error if an extent is below 1 or the grid has more than 2^62 points.
[[nodiscard]] grid_model model_grid(std::vector<int> dims, std::size_t buffer_bytes = 16384);

}  // namespace cairn::msg
