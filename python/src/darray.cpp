// cairn.DArray: a darray of opaque elements of the numpy type's size, so that one
// instantiation per (size, dimensions) serves most numpy types and redistribution moves bytes;
// floating and complex types get their own (an FFT takes them).
#include "darray.hpp"

#include <array>
#include <complex>
#include <utility>

#include "darray_impl.hpp"

namespace cairn_python {
namespace {

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
                                    const std::vector<int>& grid, std::size_t itemsize,
                                    element_kind kind, int rank) {
  typename cairn::layout<N>::index s{};
  std::array<cairn::dim_dist, N> d{};
  std::array<int, N> gr{};
  for (std::size_t i = 0; i < N; ++i) {
    s[i] = shape[i];
    d[i] = dists.empty() ? cairn::dist::block : dist_of(dists[i], rank);
    gr[i] = grid.empty() ? 0 : grid[i];
  }
  const cairn::layout<N> l(g, s, d, gr);
  if (kind == element_kind::real && itemsize == 8)
    return std::make_unique<darray_impl<double, N>>(l);
  if (kind == element_kind::real && itemsize == 4)
    return std::make_unique<darray_impl<float, N>>(l);
  if (kind == element_kind::complex && itemsize == 16)
    return std::make_unique<darray_impl<std::complex<double>, N>>(l);
  if (kind == element_kind::complex && itemsize == 8)
    return std::make_unique<darray_impl<std::complex<float>, N>>(l);
  switch (itemsize) {
    case 1: return std::make_unique<darray_impl<blob<1>, N>>(l);
    case 2: return std::make_unique<darray_impl<blob<2>, N>>(l);
    case 4: return std::make_unique<darray_impl<blob<4>, N>>(l);
    case 8: return std::make_unique<darray_impl<blob<8>, N>>(l);
    case 16: return std::make_unique<darray_impl<blob<16>, N>>(l);
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
                                         element_kind kind, int rank) {
  const std::size_t n = shape.size();
  if (n < 1 || n > 4)
    refuse("darray", rank, "shape has " + std::to_string(n) + " dimensions: 1 to 4");
  if ((!dists.empty() && dists.size() != n) || (!grid.empty() && grid.size() != n))
    refuse("darray", rank,
           "shape has " + std::to_string(n) + " dimensions, dist " + std::to_string(dists.size()) +
               " and grid " + std::to_string(grid.size()) + ": give one per dimension");
  switch (n) {
    case 1: return make_n<1>(g, shape, dists, grid, itemsize, kind, rank);
    case 2: return make_n<2>(g, shape, dists, grid, itemsize, kind, rank);
    case 3: return make_n<3>(g, shape, dists, grid, itemsize, kind, rank);
    default: return make_n<4>(g, shape, dists, grid, itemsize, kind, rank);
  }
}

}  // namespace cairn_python
