#pragma once
// The darray behind a cairn.DArray, typed by its element (darray.cpp makes them; fft.cpp runs
// FFTs on the typed ones).
#include <complex>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "darray.hpp"
#include "gil.hpp"

namespace cairn_python {

/// An element of K bytes, aligned as numpy aligns its types of that size.
template <std::size_t K>
struct alignas(K < 16 ? K : 16) blob {
  std::byte b[K];
};

/// The global indices along dimension `d` of the `local` extents this rank holds of `l`.
template <int N>
std::vector<std::int64_t> global_indices_of(const cairn::layout<N>& l,
                                            const typename cairn::layout<N>::index& local, int d) {
  const int r = l.group().rank();
  std::vector<std::int64_t> out;
  if (r < 0) return out;
  typename cairn::layout<N>::index li{};
  const auto n = local[static_cast<std::size_t>(d)];
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    li[static_cast<std::size_t>(d)] = i;
    out.push_back(l.to_global(li, r)[static_cast<std::size_t>(d)]);
  }
  return out;
}

/// A layout printed ("[8 x 6] (block, cyclic) on grid 2x1 over 2 ranks").
template <int N>
std::string text_of(const cairn::layout<N>& l) {
  std::ostringstream s;
  s << l;
  return s.str();
}

/// One rank's part of a darray of E (blob<K> for most numpy types; double, float and their
/// complex types where an FFT needs to know them).
template <class E, int N>
class darray_impl final : public darray_base {
 public:
  explicit darray_impl(const cairn::layout<N>& l) : a_(l) {}

  /// The array itself.
  [[nodiscard]] cairn::darray<E, N>& array() noexcept { return a_; }
  [[nodiscard]] int ndim() const override { return N; }
  [[nodiscard]] std::size_t itemsize() const override { return sizeof(E); }
  [[nodiscard]] std::vector<std::int64_t> shape() const override {
    const auto s = a_.get_layout().shape();
    return {s.begin(), s.end()};
  }
  [[nodiscard]] std::vector<std::int64_t> local_shape() const override {
    const auto& s = a_.local_shape();
    return {s.begin(), s.end()};
  }
  [[nodiscard]] void* data() override { return a_.data(); }
  [[nodiscard]] std::size_t bytes() const override { return a_.local_size() * sizeof(E); }
  [[nodiscard]] std::vector<std::int64_t> global_indices(int d) const override {
    return global_indices_of(a_.get_layout(), a_.local_shape(), d);
  }
  [[nodiscard]] std::string describe() const override { return text_of(a_.get_layout()); }
  cairn::request redistribute_to(darray_base& dst, int rank) const override {
    auto* to = dynamic_cast<darray_impl*>(&dst);
    if (to == nullptr)
      refuse("redistribute", rank,
             "the arrays differ in dimensions (" + std::to_string(N) + " and " +
                 std::to_string(dst.ndim()) + ") or element size (" + std::to_string(sizeof(E)) +
                 " and " + std::to_string(dst.itemsize()) + " bytes)");
    unlocked gil_free;
    return cairn::iredistribute(a_, to->a_);
  }
  cairn::request task_send(cairn::tasks& t, int to, int tag) const override {
    unlocked gil_free;
    return t.isend(a_, to, tag);
  }
  cairn::request task_recv(cairn::tasks& t, int from, int tag) override {
    unlocked gil_free;
    return t.irecv(a_, from, tag);
  }

 private:
  cairn::darray<E, N> a_;
};

}  // namespace cairn_python
