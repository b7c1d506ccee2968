#pragma once
/// \file
/// `cairn::layout<N>`: how an N-d global array is spread over a process grid made of a group's
/// ranks — per dimension BLOCK, CYCLIC, BLOCK_CYCLIC(k) or replicated (HPF's `*`).

#include <array>
#include <cstdint>
#include <iosfwd>

#include "cairn/runtime/group.hpp"

namespace cairn {

/// Distribution of one array dimension over its process-grid dimension.
struct dim_dist {
  /// The HPF distribution formats.
  enum class kind : std::uint8_t {
    block,         ///< contiguous blocks of ceil(n / g)
    cyclic,        ///< element i on grid coordinate i mod g
    block_cyclic,  ///< blocks of `size` dealt round-robin
    replicated,    ///< not distributed: every grid coordinate holds the whole dimension
  };
  kind k = kind::block;   ///< the format
  std::int64_t size = 0;  ///< block size (block_cyclic only)
  /// Equal formats (and block sizes).
  friend bool operator==(const dim_dist&, const dim_dist&) = default;
};

/// The distribution formats, for layout constructors: `{dist::block, dist::replicated}`.
namespace dist {
/// BLOCK: contiguous blocks of ceil(n / g).
inline constexpr dim_dist block{dim_dist::kind::block, 0};
/// CYCLIC: element i on grid coordinate i mod g.
inline constexpr dim_dist cyclic{dim_dist::kind::cyclic, 1};
/// `*`: the dimension is not distributed; with a grid extent g > 1 it is replicated g times.
inline constexpr dim_dist replicated{dim_dist::kind::replicated, 0};
/// BLOCK_CYCLIC(k): blocks of k dealt round-robin over the grid dimension.
constexpr dim_dist block_cyclic(std::int64_t k) { return {dim_dist::kind::block_cyclic, k}; }
}  // namespace dist

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

/// An N-d global shape spread over a process grid of a group's ranks (row-major: group rank r
/// has grid coordinates of r in row-major order over `grid()`). A value: copyable, comparable,
/// printable. Ranks outside the group may hold it too (their local part is empty).
template <int N>
class layout {
  static_assert(N >= 1 && N <= detail::max_dims, "cairn::layout: 1 to 8 dimensions");

 public:
  /// An index (global or local) of N components.
  using index = std::array<std::int64_t, N>;

  /// An empty layout (no group).
  layout() = default;

  /// `shape` spread over group `g` by `dists`; `grid` gives the process grid (its product must
  /// be the group size); all zeros (the default) chooses a balanced grid over the distributed
  /// dimensions. Throws cairn::error on a negative extent, a block size < 1 or a grid that does
  /// not match the group.
  layout(const cairn::group& g, const index& shape, const std::array<dim_dist, N>& dists,
         const std::array<int, N>& grid = {})
      : group_(g),
        desc_(detail::make_layout_desc("layout", detail::caller_rank(g), g.size(), N, shape.data(),
                                       dists.data(), grid.data())) {
    if (g.rank() >= 0) desc_.coords_of(g.rank(), coords_.data());
  }

  /// The group whose ranks form the grid.
  [[nodiscard]] const cairn::group& group() const noexcept { return group_; }
  /// The global shape.
  [[nodiscard]] index shape() const noexcept {
    index s{};
    for (int d = 0; d < N; ++d) s[d] = dim(d).n;
    return s;
  }
  /// Number of global elements.
  [[nodiscard]] std::int64_t global_size() const noexcept {
    std::int64_t s = 1;
    for (int d = 0; d < N; ++d) s *= dim(d).n;
    return s;
  }
  /// The process grid.
  [[nodiscard]] std::array<int, N> grid() const noexcept {
    std::array<int, N> g{};
    for (int d = 0; d < N; ++d) g[d] = dim(d).g;
    return g;
  }
  /// The distribution of dimension d.
  [[nodiscard]] dim_dist distribution(int d) const noexcept { return dim(d).d; }
  /// Grid coordinates of group rank r.
  [[nodiscard]] std::array<int, N> coords(int r) const noexcept {
    std::array<int, N> c{};
    desc_.coords_of(r, c.data());
    return c;
  }
  /// Group rank at grid coordinates c.
  [[nodiscard]] int rank_at(const std::array<int, N>& c) const noexcept {
    int r = 0;
    for (int d = 0; d < N; ++d) r = r * dim(d).g + c[d];
    return r;
  }
  /// Group rank owning global index gi (for replicated dimensions: the replica at coordinate 0).
  [[nodiscard]] int owner(const index& gi) const noexcept {
    std::array<int, N> c{};
    for (int d = 0; d < N; ++d) c[d] = dim(d).owner(gi[d]);
    return rank_at(c);
  }
  /// True when group rank r holds global index gi (any replica).
  [[nodiscard]] bool holds(int r, const index& gi) const noexcept {
    if (r < 0) return false;
    const auto c = coords(r);
    for (int d = 0; d < N; ++d)
      if (!dim(d).rep && dim(d).owner(gi[d]) != c[d]) return false;
    return true;
  }
  /// True when this rank holds global index gi.
  [[nodiscard]] bool is_local(const index& gi) const noexcept { return holds(group_.rank(), gi); }
  /// Local extents of group rank r (zeros for r = -1, a rank outside the group).
  [[nodiscard]] index local_shape(int r) const noexcept {
    index s{};
    if (r < 0) return s;
    const auto c = coords(r);
    for (int d = 0; d < N; ++d) s[d] = dim(d).extent(c[d]);
    return s;
  }
  /// This rank's local extents.
  [[nodiscard]] index local_shape() const noexcept { return local_shape(group_.rank()); }
  /// Number of local elements of this rank.
  [[nodiscard]] std::int64_t local_size() const noexcept {
    const index s = local_shape();
    std::int64_t n = 1;
    for (int d = 0; d < N; ++d) n *= s[d];
    return n;
  }
  /// Local index (on its owner) of global index gi.
  [[nodiscard]] index to_local(const index& gi) const noexcept {
    index l{};
    for (int d = 0; d < N; ++d) l[d] = dim(d).local(gi[d]);
    return l;
  }
  /// Global index of local index li on group rank r.
  [[nodiscard]] index to_global(const index& li, int r) const noexcept {
    const auto c = coords(r);
    index gi{};
    for (int d = 0; d < N; ++d) gi[d] = dim(d).global(li[d], c[d]);
    return gi;
  }
  /// Global index of this rank's local index li.
  [[nodiscard]] index to_global(const index& li) const noexcept {
    return to_global(li, group_.rank());
  }
  /// Same shape, distributions, grid and group members.
  friend bool operator==(const layout& a, const layout& b) noexcept {
    return a.desc_ == b.desc_ && a.group_.members() == b.group_.members();
  }
  /// The rank-independent description (for planning).
  [[nodiscard]] const detail::layout_desc& desc() const noexcept { return desc_; }

 private:
  [[nodiscard]] const detail::dim_map& dim(int d) const noexcept {
    return desc_.dims[static_cast<std::size_t>(d)];
  }
  cairn::group group_;
  detail::layout_desc desc_{};
  std::array<int, N> coords_{};
};

/// Prints the shape, the distributions, the grid and the group size.
template <int N>
std::ostream& operator<<(std::ostream& os, const layout<N>& l) {
  return detail::operator<<(os, l.desc()) << " over " << l.group().size() << " ranks";
}

}  // namespace cairn
