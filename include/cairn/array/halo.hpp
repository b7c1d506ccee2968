#pragma once
/// \file
/// Halo exchange: `cairn::ghosted_darray<T, N>` (a BLOCK-distributed array whose local part is
/// padded by ghost cells), `exchange_halos` (non-blocking, a cairn::request) and
/// `cairn::halo_exchange` (planned once, started many times). The exchange runs on the array
/// layer's transfer executor: on the threads engine each rank copies its ghosts straight from
/// its neighbours' local parts, on the MPI engine faces travel as messages.

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <vector>

#include "cairn/array/darray.hpp"
#include "cairn/array/detail/halo.hpp"
#include "cairn/array/layout.hpp"
#include "cairn/array/plan.hpp"
#include "cairn/array/tasks.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn {

/// Options of a halo exchange.
struct halo_options {
  /// Also fill the diagonal ghosts: the cells outside the interior in two or more dimensions
  /// (corners in 2-D; edges and corners in 3-D), as 9- and 27-point stencils need. Costs one
  /// phase per dimension (each sends faces that include the ghosts the earlier phases filled);
  /// without them (5- and 7-point stencils) every face travels in one phase and the diagonal
  /// ghosts are left untouched.
  bool corners = true;
  /// Ranks copy their ghosts straight from their neighbours' local parts where they can (the
  /// threads engine); false sends every face as a message. The same on every rank.
  bool direct = true;
};

/// A distributed array with ghost cells: a layout whose ghosted dimensions are BLOCK (or
/// replicated), ghost widths and periodicity per dimension, and this rank's local part padded
/// by the ghost widths on both sides of every dimension (row-major, contiguous). Local indices
/// run over [-ghosts[d], interior_shape()[d] + ghosts[d]); [0, interior_shape()[d]) is the
/// interior, the elements this rank owns. Ranks outside the layout's group hold no storage.
/// Copies copy the local part.
template <detail::transferable T, int N>
class ghosted_darray {
 public:
  /// Global or local index.
  using index = typename layout<N>::index;
  /// Element type.
  using value_type = T;

  /// An empty array.
  ghosted_darray() = default;
  /// The array of layout `l` with `ghosts[d]` ghost cells on both sides of dimension d, periodic
  /// where `periodic[d]` (the ghosts past the last index hold the first indices and the other
  /// way round); storage value-initialized. Throws cairn::error on a negative ghost width or a
  /// nonzero one in a CYCLIC or BLOCK_CYCLIC dimension.
  ghosted_darray(const layout<N>& l, const std::array<int, N>& ghosts,
                 const std::array<bool, N>& periodic = {})
      : layout_(l), ghosts_(ghosts), periodic_(periodic), interior_(l.local_shape()) {
    detail::check_ghosts("ghosted_darray", detail::caller_rank(l.group()), l.desc(), ghosts.data());
    const bool member = l.group().rank() >= 0;
    std::int64_t s = 1;
    for (int d = N - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      padded_[du] = member ? interior_[du] + 2 * ghosts_[du] : 0;
      strides_[du] = s;
      s *= padded_[du];
    }
    data_.resize(static_cast<std::size_t>(s));
    base_ = 0;
    for (int d = 0; d < N; ++d)
      base_ += ghosts_[static_cast<std::size_t>(d)] * strides_[static_cast<std::size_t>(d)];
  }

  /// The layout (of the interiors).
  [[nodiscard]] const layout<N>& get_layout() const noexcept { return layout_; }
  /// Ghost width per dimension.
  [[nodiscard]] const std::array<int, N>& ghosts() const noexcept { return ghosts_; }
  /// Periodicity per dimension.
  [[nodiscard]] const std::array<bool, N>& periodic() const noexcept { return periodic_; }
  /// Extents of this rank's interior (its part of the layout).
  [[nodiscard]] const index& interior_shape() const noexcept { return interior_; }
  /// Extents of the padded local storage: interior plus the ghosts on both sides (zeros outside
  /// the group).
  [[nodiscard]] const index& padded_shape() const noexcept { return padded_; }
  /// Row-major strides of the padded local storage, in elements.
  [[nodiscard]] const index& padded_strides() const noexcept { return strides_; }
  /// Number of elements of the padded local storage.
  [[nodiscard]] std::size_t padded_size() const noexcept { return data_.size(); }
  /// The padded local storage, row-major.
  [[nodiscard]] std::span<T> padded() noexcept { return data_; }
  /// The padded local storage, row-major.
  [[nodiscard]] std::span<const T> padded() const noexcept { return data_; }
  /// Pointer to the first element of the padded storage (local index (-g0, -g1, ...)).
  [[nodiscard]] T* data() noexcept { return data_.data(); }
  /// Pointer to the first element of the padded storage (local index (-g0, -g1, ...)).
  [[nodiscard]] const T* data() const noexcept { return data_.data(); }

  /// Offset in the padded storage of local index li (each li[d] in [-g_d, n_d + g_d)).
  [[nodiscard]] std::int64_t offset(const index& li) const noexcept {
    std::int64_t o = base_;
    for (int d = 0; d < N; ++d)
      o += li[static_cast<std::size_t>(d)] * strides_[static_cast<std::size_t>(d)];
    return o;
  }
  /// Element at local index li, ghosts included (unchecked).
  [[nodiscard]] T& operator[](const index& li) noexcept {
    return data_[static_cast<std::size_t>(offset(li))];
  }
  /// Element at local index li, ghosts included (unchecked).
  [[nodiscard]] const T& operator[](const index& li) const noexcept {
    return data_[static_cast<std::size_t>(offset(li))];
  }
  /// Element at local indices (i0, i1, ...), ghosts included (unchecked).
  template <class... I>
  requires(sizeof...(I) == N) [[nodiscard]] T& operator()(I... i) noexcept {
    return (*this)[index{static_cast<std::int64_t>(i)...}];
  }
  /// Element at local indices (i0, i1, ...), ghosts included (unchecked).
  template <class... I>
  requires(sizeof...(I) == N) [[nodiscard]] const T& operator()(I... i) const noexcept {
    return (*this)[index{static_cast<std::int64_t>(i)...}];
  }

  /// Calls f(global_index, element&) for every interior element, in local row-major order.
  template <class F>
  void for_each(F&& f) {
    walk_interior([&](const index& li, std::int64_t o) {
      f(layout_.to_global(li), data_[static_cast<std::size_t>(o)]);
    });
  }
  /// Sets every interior element to f(global_index).
  template <class F>
  void fill(F&& f) {
    for_each([&](const index& gi, T& x) { x = f(gi); });
  }

  /// Copies the local part of `a` (same layout) into the interior; the ghosts are left as
  /// they are. Throws cairn::error when the layouts differ.
  void copy_from(const darray<T, N>& a) {
    check_same(a.get_layout(), "ghosted_darray::copy_from");
    const T* in = a.data();
    walk_rows([&](std::int64_t o, std::int64_t len) {
      std::copy(in, in + len, data_.begin() + o);
      in += len;
    });
  }
  /// Copies the interior into the local part of `a` (same layout). Throws cairn::error when the
  /// layouts differ.
  void copy_to(darray<T, N>& a) const {
    check_same(a.get_layout(), "ghosted_darray::copy_to");
    T* out = a.data();
    walk_rows([&](std::int64_t o, std::int64_t len) {
      out = std::copy(data_.begin() + o, data_.begin() + o + len, out);
    });
  }
  /// The interior as a plain darray of the same layout.
  [[nodiscard]] darray<T, N> to_darray() const {
    darray<T, N> a(layout_);
    copy_to(a);
    return a;
  }

 private:
  void check_same(const layout<N>& l, const char* call) const {
    if (!(l == layout_))
      detail::fail(call, detail::caller_rank(layout_.group()),
                   "the darray's layout differs from the ghosted array's");
  }
  // Calls f(li, offset) for every interior element in row-major order.
  template <class F>
  void walk_interior(F&& f) const {
    std::int64_t count = 1;
    for (int d = 0; d < N; ++d) count *= interior_[static_cast<std::size_t>(d)];
    if (count == 0 || data_.empty()) return;
    index li{};
    for (std::int64_t k = 0; k < count; ++k) {
      f(li, offset(li));
      for (int d = N - 1; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        if (++li[du] < interior_[du]) break;
        li[du] = 0;
      }
    }
  }
  // Calls f(offset, len) for every interior row (the last dimension) in row-major order.
  template <class F>
  void walk_rows(F&& f) const {
    std::int64_t rows = 1;
    for (int d = 0; d + 1 < N; ++d) rows *= interior_[static_cast<std::size_t>(d)];
    const std::int64_t len = interior_[N - 1];
    if (rows == 0 || len == 0 || data_.empty()) return;
    index li{};
    for (std::int64_t k = 0; k < rows; ++k) {
      f(offset(li), len);
      for (int d = N - 2; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        if (++li[du] < interior_[du]) break;
        li[du] = 0;
      }
    }
  }

  layout<N> layout_;
  std::array<int, N> ghosts_{};
  std::array<bool, N> periodic_{};
  index interior_{};
  index padded_{};
  index strides_{};
  std::int64_t base_ = 0;
  std::vector<T> data_;
};

/// This rank's part of a halo exchange, planned once (no communication): the phases (one per
/// dimension with corners, else one), each a redistribution plan between the padded local parts
/// (offsets count from the first padded element), with the face of every entry. A value:
/// printable, shared by the exchanges of equal arrays on this rank.
class halo_plan {
 public:
  /// One entry's faces: dimension and side. For a send entry the side of the sender's
  /// interior they come from; for a receive entry the side of this rank's ghosts they fill.
  /// Where one rank is the neighbour on both sides (a grid extent of 1 or 2 in a periodic
  /// dimension) both faces form one entry (side 0), the sender's low face first.
  struct face {
    int dim = 0;   ///< dimension
    int side = 0;  ///< -1: low side, +1: high side, 0: both
  };
  /// One phase: a plan run as one stage; its send and receive entries with their faces.
  struct phase {
    int dim = -1;  ///< the dimension of this phase, -1 for every dimension at once
    std::shared_ptr<const redistribution_plan> plan;  ///< the moves, source = destination
    std::vector<face> send_faces;                     ///< per entry of plan->sends
    std::vector<face> recv_faces;                     ///< per entry of plan->recvs
  };

  int rank = -1;                                          ///< world rank this plan is for
  std::size_t elem_size = 0;                              ///< bytes per element
  detail::layout_desc layout;                             ///< the layout of the interiors
  std::vector<int> members;                               ///< the layout's group (world ranks)
  std::array<int, detail::max_dims> ghosts{};             ///< ghost width per dimension
  std::array<bool, detail::max_dims> periodic{};          ///< periodicity per dimension
  bool corners = true;                                    ///< diagonal ghosts filled too
  std::array<std::int64_t, detail::max_dims> interior{};  ///< this rank's interior extents
  std::array<std::int64_t, detail::max_dims> padded{};    ///< this rank's padded extents
  std::vector<phase> phases;                              ///< run in order

  /// Elements this rank sends per exchange (its copies to itself included).
  [[nodiscard]] std::int64_t send_elements() const noexcept;
  /// Elements this rank receives from others per exchange.
  [[nodiscard]] std::int64_t recv_elements() const noexcept;
};

/// Prints the plan: the array, then per phase every face sent and received.
std::ostream& operator<<(std::ostream& os, const halo_plan& p);

/// This rank's halo plan for `a` (cached). No communication. Throws cairn::error (on every rank,
/// before anything is sent) when a ghost width exceeds the interior extent of a rank the ghosts
/// are filled from.
template <class T, int N>
std::shared_ptr<const halo_plan> plan_halo(const ghosted_darray<T, N>& a,
                                           const halo_options& o = {},
                                           const char* call = "plan_halo") {
  const auto& l = a.get_layout();
  return detail::cached_halo_plan(call, detail::caller_rank(l.group()), sizeof(T), l.desc(),
                                  l.group().members(), l.group().rank(), a.ghosts().data(),
                                  a.periodic().data(), o.corners);
}

/// Starts filling the ghost cells of `a` from the neighbours' interiors: every rank of the
/// array's group calls it, in the same order as its other halo exchanges on that group. The
/// interior must stay untouched and the ghosts unread until the request completes. Ghosts past
/// a non-periodic boundary are left untouched. Throws cairn::error before anything is sent when
/// a ghost width exceeds a neighbour's interior extent.
template <class T, int N>
request exchange_halos(ghosted_darray<T, N>& a, const halo_options& o = {}) {
  auto plan = plan_halo(a, o, "exchange_halos");
  return detail::start_halo(a.get_layout().group(), "exchange_halos", std::move(plan), a.data(), o);
}

/// exchange_halos with the diagonal ghosts (`corners`) or without.
template <class T, int N>
request exchange_halos(ghosted_darray<T, N>& a, bool corners) {
  return exchange_halos(a, halo_options{.corners = corners});
}

/// A halo exchange of one array planned once and started many times (like a persistent
/// request): `halo_exchange h(a); for (...) { h.start(); compute_interior(); h.wait(); }`.
/// Every rank of the array's group creates it, in the same order as its other halo exchanges
/// on that group. The array must outlive it. Move-only; destroying it while started waits.
class halo_exchange {
 public:
  /// An empty handle (start and wait do nothing).
  halo_exchange() = default;
  /// Plans the exchange of `a`'s ghosts (no communication). Throws cairn::error when a ghost
  /// width exceeds a neighbour's interior extent.
  template <class T, int N>
  explicit halo_exchange(ghosted_darray<T, N>& a, const halo_options& o = {})
      : plan_(plan_halo(a, o, "halo_exchange")),
        t_(detail::halo_init(a.get_layout().group(), "halo_exchange", plan_, a.data(), o)),
        active_(a.get_layout().group().rank() >= 0) {}

  /// Starts one exchange (the previous one must be complete).
  void start() {
    if (active_) t_.start();
  }
  /// Advances; true when the started exchange is complete.
  bool test() { return !active_ || t_.test(); }
  /// Blocks until the started exchange is complete.
  void wait() {
    if (active_) t_.wait();
  }
  /// This rank's plan (null for an empty handle).
  [[nodiscard]] const std::shared_ptr<const halo_plan>& plan() const noexcept { return plan_; }

 private:
  std::shared_ptr<const halo_plan> plan_;
  persistent_transfer t_;
  bool active_ = false;
};

}  // namespace cairn
