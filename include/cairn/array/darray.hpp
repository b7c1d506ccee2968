#pragma once
/// \file
/// `cairn::darray<T, N>`: a distributed N-d array — a layout and this rank's local part, stored
/// contiguously in row-major order.

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <vector>

#include "cairn/array/layout.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/error.hpp"

namespace cairn {

namespace detail {
/// Storage of local parts: aligned to a cache line, so vector units (FFTW's plans) and straight
/// copies between ranks see the same alignment in every local part.
template <class T>
struct local_part_allocator {
  using value_type = T;  ///< element type
  /// Alignment of every local part, in bytes.
  static constexpr std::align_val_t alignment{64};
  local_part_allocator() = default;
  /// Rebinding copy.
  template <class U>
  explicit local_part_allocator(const local_part_allocator<U>&) noexcept {}
  /// n elements, uninitialized.
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), alignment)); }
  /// Frees what allocate returned.
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, alignment); }
  /// Every instance frees what another allocated.
  template <class U>
  friend bool operator==(const local_part_allocator&, const local_part_allocator<U>&) noexcept {
    return true;
  }
};
}  // namespace detail

/// A distributed array: the layout and this rank's local part (row-major, contiguous, aligned to
/// 64 bytes). Copies copy the local part. Ranks outside the layout's group hold an empty local
/// part.
template <detail::transferable T, int N>
class darray {
 public:
  /// Global or local index.
  using index = typename layout<N>::index;
  /// Element type.
  using value_type = T;

  /// An empty array.
  darray() = default;
  /// The array of layout `l`, local part value-initialized.
  explicit darray(const layout<N>& l)
      : layout_(l), local_shape_(l.local_shape()), data_(static_cast<std::size_t>(l.local_size())) {
    std::int64_t s = 1;
    for (int d = N - 1; d >= 0; --d) {
      strides_[static_cast<std::size_t>(d)] = s;
      s *= local_shape_[static_cast<std::size_t>(d)];
    }
  }

  /// The layout.
  [[nodiscard]] const layout<N>& get_layout() const noexcept { return layout_; }
  /// Extents of the local part.
  [[nodiscard]] const index& local_shape() const noexcept { return local_shape_; }
  /// Row-major strides of the local part, in elements.
  [[nodiscard]] const index& local_strides() const noexcept { return strides_; }
  /// Number of local elements.
  [[nodiscard]] std::size_t local_size() const noexcept { return data_.size(); }
  /// The local part, row-major.
  [[nodiscard]] std::span<T> local() noexcept { return data_; }
  /// The local part, row-major.
  [[nodiscard]] std::span<const T> local() const noexcept { return data_; }
  /// Pointer to the first local element.
  [[nodiscard]] T* data() noexcept { return data_.data(); }
  /// Pointer to the first local element.
  [[nodiscard]] const T* data() const noexcept { return data_.data(); }

  /// Offset of local index li in the local part.
  [[nodiscard]] std::int64_t offset(const index& li) const noexcept {
    std::int64_t o = 0;
    for (int d = 0; d < N; ++d)
      o += li[static_cast<std::size_t>(d)] * strides_[static_cast<std::size_t>(d)];
    return o;
  }
  /// Local element at local index li (unchecked).
  [[nodiscard]] T& operator[](const index& li) noexcept {
    return data_[static_cast<std::size_t>(offset(li))];
  }
  /// Local element at local index li (unchecked).
  [[nodiscard]] const T& operator[](const index& li) const noexcept {
    return data_[static_cast<std::size_t>(offset(li))];
  }
  /// Local element at local indices (i0, i1, ...) (unchecked).
  template <class... I>
  requires(sizeof...(I) == N) [[nodiscard]] T& operator()(I... i) noexcept {
    return (*this)[index{static_cast<std::int64_t>(i)...}];
  }
  /// Element at global index gi; throws cairn::error unless this rank holds it.
  [[nodiscard]] T& global(const index& gi) {
    for (int d = 0; d < N; ++d)
      if (gi[static_cast<std::size_t>(d)] < 0 ||
          gi[static_cast<std::size_t>(d)] >= layout_.shape()[static_cast<std::size_t>(d)])
        detail::fail("darray::global", detail::caller_rank(layout_.group()), "index ",
                     gi[static_cast<std::size_t>(d)], " out of range in dimension ", d);
    if (!layout_.is_local(gi))
      detail::fail("darray::global", detail::caller_rank(layout_.group()),
                   "global index not held by this rank (owner: group rank ", layout_.owner(gi),
                   ")");
    return (*this)[layout_.to_local(gi)];
  }

  /// Calls f(global_index, element&) for every local element, in local row-major order.
  template <class F>
  void for_each(F&& f) {
    if (data_.empty()) return;
    index li{};
    for (std::size_t o = 0; o < data_.size(); ++o) {
      f(layout_.to_global(li), data_[o]);
      for (int d = N - 1; d >= 0; --d) {
        if (++li[static_cast<std::size_t>(d)] < local_shape_[static_cast<std::size_t>(d)]) break;
        li[static_cast<std::size_t>(d)] = 0;
      }
    }
  }
  /// Sets every local element to f(global_index).
  template <class F>
  void fill(F&& f) {
    for_each([&](const index& gi, T& x) { x = f(gi); });
  }

 private:
  layout<N> layout_;
  index local_shape_{};
  index strides_{};
  std::vector<T, detail::local_part_allocator<T>> data_;
};

}  // namespace cairn
