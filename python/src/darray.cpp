// cairn.DArray: a darray of opaque elements of the numpy type's size, so that one
// instantiation per (size, dimensions) serves every numpy type; redistribution moves bytes.
#include "darray.hpp"

#include <array>
#include <sstream>
#include <utility>

#include "collectives.hpp"
#include "gil.hpp"

namespace cairn_python {
namespace {

/// An element of K bytes, aligned as numpy aligns its types of that size.
template <std::size_t K>
struct alignas(K < 16 ? K : 16) blob {
  std::byte b[K];
};

template <std::size_t K, int N>
class darray_impl final : public darray_base {
 public:
  explicit darray_impl(const cairn::layout<N>& l) : a_(l) {}

  [[nodiscard]] int ndim() const override { return N; }
  [[nodiscard]] std::size_t itemsize() const override { return K; }
  [[nodiscard]] std::vector<std::int64_t> shape() const override {
    const auto s = a_.get_layout().shape();
    return {s.begin(), s.end()};
  }
  [[nodiscard]] std::vector<std::int64_t> local_shape() const override {
    const auto& s = a_.local_shape();
    return {s.begin(), s.end()};
  }
  [[nodiscard]] void* data() override { return a_.data(); }
  [[nodiscard]] std::size_t bytes() const override { return a_.local_size() * K; }
  [[nodiscard]] std::vector<std::int64_t> global_indices(int d) const override {
    const auto& l = a_.get_layout();
    const int r = l.group().rank();
    std::vector<std::int64_t> out;
    if (r < 0) return out;
    typename cairn::layout<N>::index li{};
    const auto n = a_.local_shape()[static_cast<std::size_t>(d)];
    out.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      li[static_cast<std::size_t>(d)] = i;
      out.push_back(l.to_global(li, r)[static_cast<std::size_t>(d)]);
    }
    return out;
  }
  [[nodiscard]] std::string describe() const override {
    std::ostringstream s;
    s << a_.get_layout();
    return s.str();
  }
  cairn::request redistribute_to(darray_base& dst, int rank) const override {
    auto* to = dynamic_cast<darray_impl*>(&dst);
    if (to == nullptr)
      refuse("redistribute", rank,
             "the arrays differ in dimensions (" + std::to_string(N) + " and " +
                 std::to_string(dst.ndim()) + ") or element size (" + std::to_string(K) + " and " +
                 std::to_string(dst.itemsize()) + " bytes)");
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
  cairn::darray<blob<K>, N> a_;
};

cairn::dim_dist dist_of(const dim_spec& s, int rank) {
  if (s.kind == "block") return cairn::dist::block;
  if (s.kind == "cyclic") return cairn::dist::cyclic;
  if (s.kind == "replicated") return cairn::dist::replicated;
  if (s.kind == "block_cyclic") return cairn::dist::block_cyclic(s.size);
  refuse("darray", rank,
         "distribution '" + s.kind + "': block, cyclic, replicated or ('block_cyclic', k)");
}

template <int N>
std::unique_ptr<darray_base> make_n(const cairn::group& g, const std::vector<std::int64_t>& shape,
                                    const std::vector<dim_spec>& dists,
                                    const std::vector<int>& grid, std::size_t itemsize, int rank) {
  typename cairn::layout<N>::index s{};
  std::array<cairn::dim_dist, N> d{};
  std::array<int, N> gr{};
  for (std::size_t i = 0; i < N; ++i) {
    s[i] = shape[i];
    d[i] = dists.empty() ? cairn::dist::block : dist_of(dists[i], rank);
    gr[i] = grid.empty() ? 0 : grid[i];
  }
  const cairn::layout<N> l(g, s, d, gr);
  switch (itemsize) {
    case 1: return std::make_unique<darray_impl<1, N>>(l);
    case 2: return std::make_unique<darray_impl<2, N>>(l);
    case 4: return std::make_unique<darray_impl<4, N>>(l);
    case 8: return std::make_unique<darray_impl<8, N>>(l);
    case 16: return std::make_unique<darray_impl<16, N>>(l);
    default:
      refuse("darray", rank,
             "elements of " + std::to_string(itemsize) +
                 " bytes: 1, 2, 4, 8 or 16 (numpy's "
                 "integer, float, complex and bool types)");
  }
}

}  // namespace

std::unique_ptr<darray_base> make_darray(const cairn::group& g,
                                         const std::vector<std::int64_t>& shape,
                                         const std::vector<dim_spec>& dists,
                                         const std::vector<int>& grid, std::size_t itemsize,
                                         int rank) {
  const std::size_t n = shape.size();
  if (n < 1 || n > 4)
    refuse("darray", rank, "shape has " + std::to_string(n) + " dimensions: 1 to 4");
  if ((!dists.empty() && dists.size() != n) || (!grid.empty() && grid.size() != n))
    refuse("darray", rank,
           "shape has " + std::to_string(n) + " dimensions, dist " + std::to_string(dists.size()) +
               " and grid " + std::to_string(grid.size()) + ": give one per dimension");
  switch (n) {
    case 1: return make_n<1>(g, shape, dists, grid, itemsize, rank);
    case 2: return make_n<2>(g, shape, dists, grid, itemsize, rank);
    case 3: return make_n<3>(g, shape, dists, grid, itemsize, rank);
    default: return make_n<4>(g, shape, dists, grid, itemsize, rank);
  }
}

}  // namespace cairn_python
