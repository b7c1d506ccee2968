// `cairn-bench plan`: time to compute one rank's redistribution plan for a 4096 x 4096 array
// going from block_cyclic(3) to block_cyclic(5) in both dimensions over 16 ranks (a 4 x 4 grid
// on each side; with --quick 1024 x 1024). cairn's plan is the per-dimension merge sweep over
// one period of block boundaries (O(blocks + output)); the baseline in the same run is the
// element-by-element schedule of a naive implementation (owner of every local element, counts
// per peer: O(elements)). Both are checked against each other (elements per peer). No
// communication: the figure is the time of one rank's plan, uncached — the mean over the 16
// ranks' plans within a sample, median over the samples (the same for the baseline).
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

using cairn::detail::layout_desc;

layout_desc bc_layout(std::int64_t n, std::int64_t k) {
  const std::int64_t shape[2] = {n, n};
  const dim_dist d[2] = {dist::block_cyclic(k), dist::block_cyclic(k)};
  const int grid[2] = {4, 4};
  return cairn::detail::make_layout_desc("plan", 0, 16, 2, shape, d, grid);
}

// The naive schedule of group rank r: destination owner of every local element, counted per
// destination rank.
std::vector<std::int64_t> elementwise_counts(const layout_desc& s, const layout_desc& d, int r) {
  int c[2];
  s.coords_of(r, c);
  const auto& s0 = s.dims[0];
  const auto& s1 = s.dims[1];
  const std::int64_t e0 = s0.extent(c[0]), e1 = s1.extent(c[1]);
  std::vector<std::int64_t> count(16, 0);
  for (std::int64_t i = 0; i < e0; ++i) {
    const std::int64_t gi = s0.global(i, c[0]);
    const int row_owner = d.dims[0].owner(gi) * d.dims[1].g;
    for (std::int64_t j = 0; j < e1; ++j)
      ++count[static_cast<std::size_t>(row_owner + d.dims[1].owner(s1.global(j, c[1])))];
  }
  return count;
}

int run_plan(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // no MPI baseline: the baseline is computed here
  const auto n = static_cast<std::int64_t>(
      count_param(inv.opts, "N", inv.opts.quick ? 1024 : 4096, 16, 1 << 20));
  const layout_desc s = bc_layout(n, 3), d = bc_layout(n, 5);
  std::vector<int> members(16);
  for (int i = 0; i < 16; ++i) members[static_cast<std::size_t>(i)] = i;

  // Check: the plan's element counts per peer equal the naive schedule's, for every rank.
  for (int r = 0; r < 16; ++r) {
    const auto p = cairn::detail::compute_plan("plan", r, 8, s, members, d, members);
    const auto naive = elementwise_counts(s, d, r);
    std::vector<std::int64_t> mine(16, 0);
    for (const auto& pe : p->sends) mine[static_cast<std::size_t>(pe.world_rank)] = pe.elements;
    if (mine != naive)
      throw std::runtime_error("plan: rank " + std::to_string(r) +
                               "'s plan disagrees with the element-wise schedule");
  }

  auto time_of = [&](auto&& body, int iters) {
    std::vector<double> per;
    const int samples =
        static_cast<int>(count_param(inv.opts, "samples", inv.opts.quick ? 5 : 11, 1, 1001));
    for (int sample = 0; sample < samples; ++sample) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i)
        for (int r = 0; r < 16; ++r) body(r);
      const auto t1 = std::chrono::steady_clock::now();
      per.push_back(std::chrono::duration<double>(t1 - t0).count() / (16.0 * iters));
    }
    return median(per);
  };
  std::int64_t sink = 0;
  const double plan_s = time_of(
      [&](int r) {
        sink += cairn::detail::compute_plan("plan", r, 8, s, members, d, members)->send_elements();
      },
      20);
  const double naive_s = time_of([&](int r) { sink += elementwise_counts(s, d, r)[0]; }, 1);
  if (sink == 0) note("plan: nothing planned");

  report rep(inv.opts.json);
  rep.add(row{"plan", "threads", 16, static_cast<std::size_t>(n * n * 8), "plan_us", "lower",
              plan_s * 1e6, "element-wise", naive_s * 1e6});
  return 0;
}

const param_registrar params{
    "plan",
    {{"N", "the N x N array whose plan is computed", "4096, 1024 with --quick"},
     {"samples", "timed samples (the median is reported)", "11, 5 with --quick"}}};

const registrar reg{
    {"plan",
     "time to plan a 4096^2 block_cyclic(3) -> block_cyclic(5) redistribution over 16 ranks",
     run_plan}};

}  // namespace

}  // namespace cairn::bench
