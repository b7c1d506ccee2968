// The FFT plans' agreement across their ranks (fft_checks.hpp).

#include "fft_checks.hpp"

#include <algorithm>
#include <span>
#include <vector>

namespace cairn::detail {

namespace {

// Layout dimensions the facts hold: FFTs are 2-D or 3-D; a 2-D layout's third is zeros, so
// every plan has as many facts (ranks that disagree on the rank still exchange alike).
constexpr int fact_dims = 3;

}  // namespace

void plan_facts::add_layout(const std::string& which, const layout_desc& d) {
  for (int i = 0; i < fact_dims; ++i) {
    const dim_map m = i < d.ndim ? d.dims[static_cast<std::size_t>(i)] : dim_map{0, 0, 0};
    const std::string dim = which + " layout's dimension " + std::to_string(i);
    add(dim + " extent", m.n);
    add(dim + " grid extent", m.g);
    add(dim + " block", m.rep ? 0 : m.k);
    add(dim + " replicated", m.rep);
  }
}

void plan_facts::add_transfer(const transfer_options& t) {
  add("transfer.chunks", t.chunks);
  add("transfer.direct", t.direct);
}

void plan_facts::check(const char* call, int me, cairn::group g) const {
  const int p = g.size();
  if (p <= 1) return;
  const std::size_t n = values_.size();
  std::vector<std::int64_t> all(n * static_cast<std::size_t>(p));
  std::copy(values_.begin(), values_.end(),
            all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(g.rank())));
  g.allgather(cairn::in_place, std::span<std::int64_t>(all));
  // Every rank finds the same first difference from group rank 0, so all fail alike.
  const std::vector<int>& world = g.members();
  for (int q = 1; q < p; ++q)
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t first = all[i], other = all[static_cast<std::size_t>(q) * n + i];
      if (first != other)
        fail(call, me, "ranks disagree on the plan: rank ", world[static_cast<std::size_t>(q)],
             " passes ", names_[i], " ", other, ", rank ", world[0], " passes ", first,
             " (every rank of the group plans the same transform)");
    }
}

void check_fft_agreement(const char* call, int me, const cairn::group& g, std::size_t element_bytes,
                         fft_kind kind, const layout_desc& in, const layout_desc& out,
                         const fft_options& opts) {
  if (g.size() <= 1) return;
  plan_facts f;
  f.add("real element bytes", static_cast<std::int64_t>(element_bytes));
  f.add("kind (0 c2c, 1 r2c)", static_cast<std::int64_t>(kind));
  f.add("dimensions", in.ndim);
  f.add_layout("input", in);
  f.add_layout("output", out);
  f.add("decomposition", static_cast<std::int64_t>(opts.decomposition));
  f.add("pencil_grid[0]", opts.pencil_grid[0]);
  f.add("pencil_grid[1]", opts.pencil_grid[1]);
  f.add("rigor (0 estimate, 1 measure, 2 patient)", static_cast<std::int64_t>(opts.rigor));
  f.add("shared_columns", opts.shared_columns);
  f.add("column_tile", opts.column_tile);
  f.add_transfer(opts.transfer);
  f.check(call, me, g);
}

}  // namespace cairn::detail
