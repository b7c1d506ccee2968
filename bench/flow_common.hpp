#pragma once
/// \file
/// What the flow benchmarks (flow_overhead.cpp, flow_stream.cpp) share: a run of cairn::launch
/// between two placement probes whose rows rank 0 prints afterwards, and timing of several
/// sides in alternating order.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "placement.hpp"
#include "registry.hpp"

namespace cairn::bench::flowb {

/// Runs `body(w, rows)` on every rank inside cairn::launch(lo) (rank 0 appends rows), with the
/// placement probe before and after (outside the launch on the threads engine, so that no rank
/// spins beside it; inside, on every process, under mpirun), then prints the rows on rank 0
/// with the probes' figures (handoff_ns_before/after, placement_changed).
inline int run_probed(const invocation& inv, const cairn::launch_options& lo,
                      const std::function<void(cairn::world&, std::vector<row>&)>& body) {
  const bool threads = cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads;
  std::vector<row> rows;
  bool rank0 = false;
  std::optional<double> before, after;
  if (threads) before = placement_probe(false);
  const int rc = cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    if (!threads) {
      const auto b = placement_probe(true);
      if (w.rank() == 0) before = b;
    }
    body(w, rows);
    if (!threads) {
      const auto a = placement_probe(true);
      if (w.rank() == 0) after = a;
    }
    if (w.rank() == 0) rank0 = true;
  });
  if (threads) after = placement_probe(false);
  if (!rank0) return rc;
  placement_span where;
  where.before = before;
  where.after = after;
  if (before) where.all.push_back(*before);
  if (after) where.all.push_back(*after);
  report rep(inv.opts.json);
  for (row& r : rows) {
    r.set("handoff_ns_before", json_text(before));
    r.set("handoff_ns_after", json_text(after));
    r.set("placement_changed", json_text(where.changed()));
    rep.add(std::move(r));
  }
  return rc;
}

/// Median seconds per unit of each side on the slowest rank: `samples` timed calls of every
/// side, each after a barrier, in an order rotated from sample to sample (a drifting load hits
/// every side alike). side(w) runs the side once and returns the units it did (rounds, items).
inline std::vector<double> time_sides(cairn::world& w, int samples,
                                      const std::vector<std::function<double()>>& sides) {
  std::vector<std::vector<double>> per(sides.size());
  for (int s = 0; s < samples; ++s)
    for (std::size_t k = 0; k < sides.size(); ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(s)) % sides.size();
      w.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      const double units = sides[i]();
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      per[i].push_back(slowest(w, t) / units);
    }
  std::vector<double> out;
  for (auto& v : per) out.push_back(median(std::move(v)));
  return out;
}

}  // namespace cairn::bench::flowb
