// Layout descriptions: validation, the default process grid, printing.
#include <algorithm>
#include <ostream>
#include <sstream>
#include <vector>

#include "cairn/array/layout.hpp"
#include "cairn/runtime/error.hpp"

namespace cairn::detail {

namespace {

// A balanced grid (as MPI_Dims_create): the prime factors of p, largest first, each given to
// the distributed dimension with the smallest extent so far. With no distributed dimension,
// dimension 0 holds p replicas.
void default_grid(int p, int ndim, const dim_dist* dists, int* grid) {
  std::vector<int> free_dims;
  for (int d = 0; d < ndim; ++d) {
    grid[d] = 1;
    if (dists[d].k != dim_dist::kind::replicated) free_dims.push_back(d);
  }
  if (free_dims.empty()) {
    grid[0] = p;
    return;
  }
  std::vector<int> primes;
  for (int f = 2; static_cast<long long>(f) * f <= p; ++f)
    while (p % f == 0) primes.push_back(f), p /= f;
  if (p > 1) primes.push_back(p);
  std::sort(primes.rbegin(), primes.rend());
  for (int f : primes) {
    int best = free_dims[0];
    for (int d : free_dims)
      if (grid[d] < grid[best]) best = d;
    grid[best] *= f;
  }
}

const char* kind_name(dim_dist::kind k) {
  switch (k) {
    case dim_dist::kind::block: return "block";
    case dim_dist::kind::cyclic: return "cyclic";
    case dim_dist::kind::block_cyclic: return "block_cyclic";
    case dim_dist::kind::replicated: return "*";
  }
  return "?";
}

}  // namespace

layout_desc make_layout_desc(const char* call, int rank, int group_size, int ndim,
                             const std::int64_t* shape, const dim_dist* dists, const int* grid) {
  if (ndim < 1 || ndim > max_dims) fail(call, rank, "rank ", ndim, " not in [1, ", max_dims, "]");
  if (group_size < 1) fail(call, rank, "empty group");
  int g[max_dims] = {};
  bool all_zero = true;
  for (int d = 0; d < ndim; ++d) all_zero = all_zero && grid[d] == 0;
  if (all_zero) {
    default_grid(group_size, ndim, dists, g);
  } else {
    long long prod = 1;
    for (int d = 0; d < ndim; ++d) {
      if (grid[d] < 1)
        fail(call, rank, "grid extent ", grid[d], " in dimension ", d, " (must be >= 1)");
      g[d] = grid[d];
      prod *= grid[d];
      if (prod > group_size) break;
    }
    if (prod != group_size) {
      std::ostringstream dims;
      for (int d = 0; d < ndim; ++d) dims << (d ? "x" : "") << grid[d];
      fail(call, rank, "grid ", dims.str(), " has ", prod > group_size ? "more" : "fewer",
           " positions than the group's ", group_size, " ranks");
    }
  }
  layout_desc out;
  out.ndim = ndim;
  for (int d = 0; d < ndim; ++d) {
    dim_map& m = out.dims[static_cast<std::size_t>(d)];
    if (shape[d] < 0) fail(call, rank, "negative extent ", shape[d], " in dimension ", d);
    m.n = shape[d];
    m.g = g[d];
    m.d = dists[d];
    const std::int64_t whole = std::max<std::int64_t>(m.n, 1);
    switch (dists[d].k) {
      case dim_dist::kind::block:
        m.d.size = 0;
        m.k = std::max<std::int64_t>(1, (m.n + m.g - 1) / m.g);
        break;
      case dim_dist::kind::cyclic:
        m.d.size = 1;
        m.k = 1;
        break;
      case dim_dist::kind::block_cyclic:
        if (dists[d].size < 1)
          fail(call, rank, "block size ", dists[d].size, " in dimension ", d, " (must be >= 1)");
        m.k = std::min(dists[d].size, whole);  // a block longer than the extent is one block
        break;
      case dim_dist::kind::replicated:
        m.d.size = 0;
        m.k = whole;
        m.rep = true;
        break;
      default: fail(call, rank, "unknown distribution in dimension ", d);
    }
  }
  return out;
}

bool operator==(const layout_desc& a, const layout_desc& b) noexcept {
  if (a.ndim != b.ndim) return false;
  for (std::size_t d = 0; d < static_cast<std::size_t>(a.ndim); ++d) {
    const dim_map &x = a.dims[d], &y = b.dims[d];
    if (x.n != y.n || x.g != y.g || x.k != y.k || x.rep != y.rep || !(x.d == y.d)) return false;
  }
  return true;
}

std::ostream& operator<<(std::ostream& os, const layout_desc& l) {
  os << '[';
  for (std::size_t d = 0; d < static_cast<std::size_t>(l.ndim); ++d)
    os << (d ? " x " : "") << l.dims[d].n;
  os << "] (";
  for (std::size_t d = 0; d < static_cast<std::size_t>(l.ndim); ++d) {
    os << (d ? ", " : "") << kind_name(l.dims[d].d.k);
    if (l.dims[d].d.k == dim_dist::kind::block_cyclic) os << '(' << l.dims[d].d.size << ')';
  }
  os << ") on grid ";
  for (std::size_t d = 0; d < static_cast<std::size_t>(l.ndim); ++d)
    os << (d ? "x" : "") << l.dims[d].g;
  return os;
}

int caller_rank(const cairn::group& g) { return g.rank() >= 0 ? g.world_rank(g.rank()) : -1; }

}  // namespace cairn::detail
