#pragma once
/// \file
/// Redistribution plans: which index runs move between which ranks when an array goes from one
/// layout to another (over the same group or over two groups). A plan is a value — printable,
/// cached and reused — computed per dimension by one merge sweep over block boundaries within a
/// period (FALLS, Ramaswamy and Banerjee; COSTA's grid cover), in O(blocks + output).

#include <algorithm>
#include <array>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <vector>

#include "cairn/array/detail/plan.hpp"
#include "cairn/array/layout.hpp"

namespace cairn {

/// `len` consecutive indices of one dimension: at local index `src` on the sender and `dst` on
/// the receiver.
struct dim_run {
  std::int64_t src = 0;  ///< local index on the source coordinate
  std::int64_t dst = 0;  ///< local index on the destination coordinate
  std::int64_t len = 0;  ///< number of indices
};

/// One dimension of a plan: for each (source coordinate, destination coordinate) the runs of
/// indices the pair exchanges, in increasing global order, adjacent runs merged.
struct dim_plan {
  int gs = 1;                         ///< source grid extent
  int gd = 1;                         ///< destination grid extent
  std::vector<dim_run> runs;          ///< all runs, grouped by pair
  std::vector<std::uint32_t> first;   ///< runs of pair (cs, cd): [first[cs*gd+cd], first[...+1])
  std::vector<std::int64_t> total;    ///< indices exchanged by each pair
  std::vector<std::uint8_t> src_one;  ///< the pair's source indices form one interval
  std::vector<std::uint8_t> dst_one;  ///< the pair's destination indices form one interval
  /// Runs of the pair (cs, cd).
  [[nodiscard]] std::span<const dim_run> of(std::size_t pair) const noexcept {
    return {runs.data() + first[pair], runs.data() + first[pair + 1]};
  }
};

/// One peer of this rank in a plan: what it exchanges with one rank.
struct plan_peer {
  int world_rank = 0;                                        ///< the peer
  std::int64_t elements = 0;                                 ///< elements exchanged
  std::array<std::uint32_t, detail::max_dims> pair{};        ///< per dimension: index into dim_plan
  std::array<std::int64_t, detail::max_dims> src_strides{};  ///< sender's local strides
  std::array<std::int64_t, detail::max_dims> dst_strides{};  ///< receiver's local strides
  bool src_contiguous = false;  ///< the elements are one block of the sender's local part
  bool dst_contiguous = false;  ///< the elements are one block of the receiver's local part
  std::int64_t src_first = 0;   ///< offset of the first element in the sender's local part
  std::int64_t dst_first = 0;   ///< offset of the first element in the receiver's local part
};

namespace detail {

/// The rows of one peer's box (every dimension but the last is one run on both sides): the
/// offsets of each row's index 0 of the last dimension in the sender's and the receiver's local
/// parts (in units of `unit`: 1 for elements, the element size for bytes), stepped by strides.
struct box_rows {
  std::array<std::int64_t, max_dims> len{};  ///< rows per outer dimension
  std::array<std::int64_t, max_dims> ss{};   ///< sender's stride per outer dimension
  std::array<std::int64_t, max_dims> ts{};   ///< receiver's stride per outer dimension
  std::array<std::int64_t, max_dims> ii{};   ///< position per outer dimension
  std::int64_t s = 0;                        ///< the row's offset on the sender
  std::int64_t t = 0;                        ///< the row's offset on the receiver
  int outer = 0;                             ///< dimensions but the last
  /// The first row of peer `p` of a plan with dimensions `dims`.
  box_rows(const std::vector<dim_plan>& dims, const plan_peer& p, std::int64_t unit) noexcept
      : outer(static_cast<int>(dims.size()) - 1) {
    for (std::size_t d = 0; d < static_cast<std::size_t>(outer); ++d) {
      const dim_run& r = dims[d].of(p.pair[d]).front();
      len[d] = r.len;
      ss[d] = p.src_strides[d] * unit;
      ts[d] = p.dst_strides[d] * unit;
      s += r.src * ss[d];
      t += r.dst * ts[d];
    }
  }
  /// Moves to the next row (row-major); false after the last.
  bool next() noexcept {
    for (int d = outer - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      if (++ii[du] < len[du]) {
        s += ss[du];
        t += ts[du];
        return true;
      }
      s -= (ii[du] - 1) * ss[du];
      t -= (ii[du] - 1) * ts[du];
      ii[du] = 0;
    }
    return false;
  }
};

}  // namespace detail

/// This rank's part of moving an array from layout `src` (over `src_members`) to layout `dst`
/// (over `dst_members`): the peers it sends to and receives from, each with its runs. The
/// rank's copy to itself, if any, is the send entry whose peer is the rank itself.
class redistribution_plan {
 public:
  int rank = -1;                 ///< world rank this plan is for
  std::size_t elem_size = 0;     ///< bytes per element
  detail::layout_desc src;       ///< source layout
  detail::layout_desc dst;       ///< destination layout
  std::vector<int> src_members;  ///< source group (world ranks)
  std::vector<int> dst_members;  ///< destination group (world ranks)
  std::uint64_t groups_id = 0;   ///< identity of the (source, destination) group pair
  /// A hash of what every rank of the transfer must agree on (element size, chunks, both
  /// layouts and groups): the same on all of them, so a rank whose differs runs another
  /// transfer. 0 for a plan built by hand (halo exchanges).
  std::uint64_t agreement = 0;
  std::vector<dim_plan> dims;    ///< per dimension, shared by all peers
  std::vector<plan_peer> sends;  ///< peers this rank sends to (itself included)
  std::vector<plan_peer> recvs;  ///< peers this rank receives from (itself excluded)

  int chunks = 1;  ///< slabs each peer's data is cut into (at most)

  /// Elements this rank sends (to others and itself).
  [[nodiscard]] std::int64_t send_elements() const noexcept;
  /// Elements this rank receives from others.
  [[nodiscard]] std::int64_t recv_elements() const noexcept;

  /// Number of slabs (messages) peer `p`'s elements travel in: `chunks`, but never more than
  /// the elements, so no slab is empty.
  [[nodiscard]] std::int64_t slabs(const plan_peer& p) const noexcept {
    return p.elements < chunks ? p.elements : chunks;
  }
  /// First element (in the agreed order) of slab `j` of peer `p`; slab j is
  /// [slab_begin(p, j), slab_begin(p, j + 1)), and the slabs differ in size by at most one.
  [[nodiscard]] std::int64_t slab_begin(const plan_peer& p, std::int64_t j) const noexcept {
    return j * p.elements / slabs(p);
  }

  /// Calls f(src_offset, dst_offset, len) (in elements, in the sender's and the receiver's
  /// local parts) for every contiguous run of peer `p`, in the order both sides agree on
  /// (row-major over the global index), runs adjacent on both sides merged.
  template <class F>
  void for_each_run(const plan_peer& p, F&& f) const {
    for_each_run(p, 0, p.elements, f);
  }

  /// As for_each_run, restricted to the elements [first, first + count) of that order (runs
  /// cut at both ends): what one slab packs or unpacks.
  template <class F>
  void for_each_run(const plan_peer& p, std::int64_t first, std::int64_t count, F&& f) const {
    const int n = src.ndim;
    if (count <= 0) return;
    std::array<std::span<const dim_run>, detail::max_dims> r{};
    for (int d = 0; d < n; ++d) {
      const auto du = static_cast<std::size_t>(d);
      r[du] = dims[du].of(p.pair[du]);
      if (r[du].empty()) return;
    }
    const std::size_t last = static_cast<std::size_t>(n - 1);
    if (first == 0 && count == p.elements && box(r, n)) {
      for_each_box_run(p, r, n, f);
      return;
    }
    // Position of element `first`: the row (odometer over (run, index within run) of the
    // outer dimensions) and the offset within the last dimension's runs.
    const std::int64_t row = dims[last].total[p.pair[last]];
    std::int64_t rows_before = first / row, skip = first % row;
    std::array<std::size_t, detail::max_dims> ri{};
    std::array<std::int64_t, detail::max_dims> ii{};
    for (int d = n - 2; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      const std::int64_t t = dims[du].total[p.pair[du]];
      std::int64_t at = rows_before % t;
      rows_before /= t;
      while (at >= r[du][ri[du]].len) at -= r[du][ri[du]++].len;
      ii[du] = at;
    }
    if (rows_before > 0) return;  // first is past the end
    std::size_t xi = 0;           // run of the last dimension where the first row starts
    while (skip >= r[last][xi].len) skip -= r[last][xi++].len;
    std::int64_t left = count;
    std::int64_t ps = 0, pd = 0, pl = 0;  // pending merged run
    for (;;) {
      std::int64_t bs = 0, bd = 0;
      for (std::size_t d = 0; d < last; ++d) {
        bs += (r[d][ri[d]].src + ii[d]) * p.src_strides[d];
        bd += (r[d][ri[d]].dst + ii[d]) * p.dst_strides[d];
      }
      for (; xi < r[last].size(); ++xi) {
        const dim_run& x = r[last][xi];
        const std::int64_t len = std::min(x.len - skip, left);
        const std::int64_t s = bs + (x.src + skip) * p.src_strides[last];
        const std::int64_t t = bd + (x.dst + skip) * p.dst_strides[last];
        skip = 0;
        if (pl > 0 && s == ps + pl && t == pd + pl) {
          pl += len;
        } else {
          if (pl > 0) f(ps, pd, pl);
          ps = s, pd = t, pl = len;
        }
        if ((left -= len) == 0) {
          f(ps, pd, pl);
          return;
        }
      }
      xi = 0;
      int d = n - 2;
      for (; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        if (++ii[du] < r[du][ri[du]].len) break;
        ii[du] = 0;
        if (++ri[du] < r[du].size()) break;
        ri[du] = 0;
      }
      if (d < 0) break;
    }
    if (pl > 0) f(ps, pd, pl);
  }

 private:
  using run_lists = std::array<std::span<const dim_run>, detail::max_dims>;
  // True when every dimension but the last is one run: the rows form a box.
  static bool box(const run_lists& r, int n) noexcept {
    for (int d = 0; d + 1 < n; ++d)
      if (r[static_cast<std::size_t>(d)].size() != 1) return false;
    return true;
  }
  // for_each_run over all elements of a box of rows (the same runs, merged the same way): the
  // row offsets move by one stride per row instead of being summed over the dimensions, which
  // counts where rows are short (a halo face across the last dimension is rows of one element).
  template <class F>
  void for_each_box_run(const plan_peer& p, const run_lists& r, int n, F& f) const {
    // Everything the loop reads is copied to locals first: `f` stores through byte pointers,
    // which may alias the plan, so the compiler would reload it after every run otherwise.
    const std::size_t last = static_cast<std::size_t>(n - 1);
    detail::box_rows row(dims, p, 1);
    const std::int64_t sl = p.src_strides[last], tl = p.dst_strides[last];
    constexpr std::size_t few = 4;  // last-dimension runs kept in registers
    std::array<dim_run, few> xs{};
    const std::size_t k = r[last].size();
    if (k <= few) std::copy(r[last].begin(), r[last].end(), xs.begin());
    std::int64_t ps = 0, pd = 0, pl = 0;  // pending merged run
    auto visit = [&](const dim_run& x) {
      const std::int64_t a = row.s + x.src * sl, b = row.t + x.dst * tl;
      if (pl > 0 && a == ps + pl && b == pd + pl) {
        pl += x.len;
      } else {
        if (pl > 0) f(ps, pd, pl);
        ps = a, pd = b, pl = x.len;
      }
    };
    for (;;) {
      if (k <= few) {
        for (std::size_t j = 0; j < k; ++j) visit(xs[j]);
      } else {
        for (const dim_run& x : r[last]) visit(x);
      }
      if (!row.next()) break;
    }
    if (pl > 0) f(ps, pd, pl);
  }
};

/// Prints the plan: layouts, then per peer the elements, bytes, runs and contiguity.
std::ostream& operator<<(std::ostream& os, const redistribution_plan& p);

/// This rank's plan for moving an array from layout `src` to layout `dst`, each peer's data in
/// up to `chunks` slabs (cached: the same layouts and chunks give the same shared plan). No
/// communication.
template <int N>
std::shared_ptr<const redistribution_plan> plan_redistribution(const layout<N>& src,
                                                               const layout<N>& dst, int world_rank,
                                                               std::size_t elem_size,
                                                               int chunks = 1) {
  return detail::cached_plan("plan_redistribution", world_rank, elem_size, src.desc(),
                             src.group().members(), dst.desc(), dst.group().members(), chunks);
}

}  // namespace cairn
