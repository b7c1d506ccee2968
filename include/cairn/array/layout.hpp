#pragma once
/// \file
/// `cairn::layout<N>`: how an N-d global array is spread over a process grid made of a group's
/// ranks — per dimension BLOCK, CYCLIC, BLOCK_CYCLIC(k) or replicated (HPF's `*`).

#include <array>
#include <cstdint>
#include <iosfwd>

#include "cairn/array/detail/layout_desc.hpp"
#include "cairn/array/dim_dist.hpp"
#include "cairn/runtime/group.hpp"

namespace cairn {

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
    if (r >= 0) desc_.local_shape_of(r, s.data());
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
