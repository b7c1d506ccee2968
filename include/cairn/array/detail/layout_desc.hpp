#pragma once
/// \file
/// Internal: a layout without its element type or compile-time rank (what planning works on).

#include <array>
#include <cstdint>
#include <iosfwd>

#include "cairn/array/dim_dist.hpp"

namespace cairn {
class group;

namespace detail {

/// Largest number of dimensions of a layout.
inline constexpr int max_dims = 8;

/// One dimension, reduced to block_cyclic(k) over g coordinates (block is one round, cyclic is
/// k = 1); a replicated dimension is one block of n held by every coordinate.
struct dim_map {
  std::int64_t n = 0;  ///< global extent
  int g = 1;           ///< grid extent
  std::int64_t k = 1;  ///< effective block size (>= 1)
  bool rep = false;    ///< replicated
  dim_dist d{};        ///< the format as given

  /// Grid coordinate owning global index i (0 for a replicated dimension).
  [[nodiscard]] int owner(std::int64_t i) const noexcept {
    return rep ? 0 : static_cast<int>((i / k) % g);
  }
  /// Local index of global index i on its owner.
  [[nodiscard]] std::int64_t local(std::int64_t i) const noexcept {
    return rep ? i : (i / (k * g)) * k + i % k;
  }
  /// Global index of local index l on coordinate c.
  [[nodiscard]] std::int64_t global(std::int64_t l, int c) const noexcept {
    return rep ? l : (l / k) * (k * g) + static_cast<std::int64_t>(c) * k + l % k;
  }
  /// Number of indices held by coordinate c.
  [[nodiscard]] std::int64_t extent(int c) const noexcept {
    if (rep) return n;
    const std::int64_t period = k * g;
    const std::int64_t full = n / period;
    const std::int64_t rest = n - full * period - static_cast<std::int64_t>(c) * k;
    return full * k + (rest <= 0 ? 0 : (rest < k ? rest : k));
  }
};

/// A layout without its element type or compile-time rank: what planning works on.
struct layout_desc {
  int ndim = 0;                          ///< number of dimensions
  std::array<dim_map, max_dims> dims{};  ///< per dimension
  /// Row-major grid coordinates of group rank r.
  void coords_of(int r, int* c) const noexcept {
    for (int d = ndim - 1; d >= 0; --d) {
      c[d] = r % dims[static_cast<std::size_t>(d)].g;
      r /= dims[static_cast<std::size_t>(d)].g;
    }
  }
  /// Local extents `s` of the grid position with coordinates `c`.
  void extents_at(const int* c, std::int64_t* s) const noexcept {
    for (int d = 0; d < ndim; ++d) s[d] = dims[static_cast<std::size_t>(d)].extent(c[d]);
  }
  /// Local extents `s` of group rank r.
  void local_shape_of(int r, std::int64_t* s) const noexcept {
    int c[max_dims] = {};
    coords_of(r, c);
    extents_at(c, s);
  }
  /// Number of grid positions (the group size).
  [[nodiscard]] int grid_size() const noexcept {
    int p = 1;
    for (int d = 0; d < ndim; ++d) p *= dims[static_cast<std::size_t>(d)].g;
    return p;
  }
  /// Same global shape, distribution and grid.
  friend bool operator==(const layout_desc& a, const layout_desc& b) noexcept;
};

/// Checks and builds a layout description (`call` and `rank` name the caller in errors). A grid
/// of all zeros asks for a balanced grid over the non-replicated dimensions.
layout_desc make_layout_desc(const char* call, int rank, int group_size, int ndim,
                             const std::int64_t* shape, const dim_dist* dists, const int* grid);

/// Prints "[n0 x n1] (block, cyclic(3)) on grid 2x2".
std::ostream& operator<<(std::ostream& os, const layout_desc& d);

/// World rank of the caller for error messages: its rank in `g` mapped to the world, else -1.
int caller_rank(const cairn::group& g);

}  // namespace detail

}  // namespace cairn
