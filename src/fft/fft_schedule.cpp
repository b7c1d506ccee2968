// The schedule of a distributed FFT: which dimensions each batch of local transforms covers and
// on which process grid (slabs or pencils). Pure: shapes and counts in, a value out.

#include <cmath>
#include <ostream>

#include "cairn/fft/fft.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "fft_checks.hpp"

namespace cairn {

std::vector<std::int64_t> fft_schedule::complex_shape() const {
  std::vector<std::int64_t> s = shape;
  if (kind == fft_kind::r2c && !s.empty()) s.back() = s.back() / 2 + 1;
  return s;
}

namespace {

// The most square p0 x p1 = ranks with p0 >= p1.
std::array<int, 2> square_grid(int ranks) {
  int p1 = static_cast<int>(std::sqrt(static_cast<double>(ranks)));
  while (p1 > 1 && ranks % p1 != 0) --p1;
  return {ranks / p1, p1};
}

const char* name_of(fft_decomposition d) {
  switch (d) {
    case fft_decomposition::automatic: return "automatic";
    case fft_decomposition::slabs: return "slabs";
    case fft_decomposition::pencils: return "pencils";
  }
  return "?";
}

}  // namespace

fft_schedule plan_fft_schedule(const std::vector<std::int64_t>& shape, int ranks, fft_kind kind,
                               const fft_options& opts, const char* call, int rank) {
  const int n = static_cast<int>(shape.size());
  if (n != 2 && n != 3) detail::fail(call, rank, "an FFT has 2 or 3 dimensions, not ", n);
  for (int d = 0; d < n; ++d)
    if (shape[static_cast<std::size_t>(d)] < 1)
      detail::fail(call, rank, "extent ", shape[static_cast<std::size_t>(d)], " of dimension ", d,
                   " (an FFT needs at least one element per dimension)");
  if (ranks < 1) detail::fail(call, rank, "group of ", ranks, " ranks");
  const auto [g0, g1] = opts.pencil_grid;
  if ((g0 != 0 || g1 != 0) && (g0 < 1 || g1 < 1 || g0 * g1 != ranks))
    detail::fail(call, rank, "pencil grid ", g0, "x", g1, " does not cover the group of ", ranks,
                 " ranks");
  if (opts.decomposition == fft_decomposition::pencils && n != 3)
    detail::fail(call, rank, "pencils need 3 dimensions, the shape has ", n);

  fft_schedule s;
  s.kind = kind;
  s.shape = shape;
  s.ranks = ranks;
  const auto stage = [&](std::vector<int> grid, std::vector<int> dims) {
    s.stages.push_back(fft_stage{std::move(grid), std::move(dims)});
  };
  fft_decomposition d = opts.decomposition;
  if (d == fft_decomposition::automatic)
    d = (n == 2 || ranks == 1 || (ranks <= shape[0] && ranks <= shape[1]))
            ? fft_decomposition::slabs
            : fft_decomposition::pencils;
  s.decomposition = d;
  if (ranks == 1 && d == fft_decomposition::slabs) {
    // Everything is local: one N-d transform.
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
    stage(std::vector<int>(static_cast<std::size_t>(n), 1), all);
  } else if (n == 2) {
    stage({ranks, 1}, {1});
    stage({1, ranks}, {0});
  } else if (d == fft_decomposition::slabs) {
    stage({ranks, 1, 1}, {1, 2});
    stage({1, ranks, 1}, {0});
  } else {
    const auto [p0, p1] = g0 != 0 ? std::array<int, 2>{g0, g1} : square_grid(ranks);
    stage({p0, p1, 1}, {2});
    stage({p0, 1, p1}, {1});
    stage({1, p0, p1}, {0});
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const fft_schedule& s) {
  os << "fft " << detail::fft_kind_name(s.kind) << " [";
  for (std::size_t d = 0; d < s.shape.size(); ++d) os << (d ? " x " : "") << s.shape[d];
  os << "] over " << s.ranks << (s.ranks == 1 ? " rank, " : " ranks, ") << name_of(s.decomposition)
     << ":";
  for (std::size_t k = 0; k < s.stages.size(); ++k) {
    const fft_stage& st = s.stages[k];
    os << (k ? "; dims {" : " dims {");
    for (std::size_t i = 0; i < st.dims.size(); ++i) os << (i ? "," : "") << st.dims[i];
    os << "} on grid ";
    for (std::size_t i = 0; i < st.grid.size(); ++i) os << (i ? "x" : "") << st.grid[i];
  }
  return os;
}

namespace detail {

layout_desc fft_block_desc(const char* call, int rank, int group_size,
                           const std::vector<std::int64_t>& shape, const std::vector<int>& grid) {
  std::array<dim_dist, max_dims> dists{};
  for (auto& x : dists) x = dist::block;
  return make_layout_desc(call, rank, group_size, static_cast<int>(shape.size()), shape.data(),
                          dists.data(), grid.data());
}

}  // namespace detail

}  // namespace cairn
