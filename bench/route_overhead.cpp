// `cairn-bench route-overhead`: what a forwarding hop costs. Every rank sends `items` 8-byte
// items to uniformly random ranks on a channel with route::grid (or hypercube) and, in the same
// run, with route::direct; the handler only counts. The figure is CPU nanoseconds per item-hop:
//
//     ns per item-hop = wall seconds × min(ranks, cores) / (items delivered + items forwarded)
//
// (every item makes one final hop, forwarded items one more per extra hop). The baseline is
// the same figure for route::direct, where every item makes exactly one hop; their ratio is
// the relative cost of a forwarding hop, and `extra_ns_per_forward` (printed as a note) the
// absolute extra cost. Verified: every item delivered once (counts summed over ranks).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

struct outcome {
  double seconds = 0;           // slowest rank, send start to quiesce end
  std::uint64_t hops = 0;       // item-hops over all ranks
  std::uint64_t forwarded = 0;  // forwarded items over all ranks
};

template <class Route>
outcome run_route(cairn::world& w, Route route, std::uint64_t items) {
  std::uint64_t got = 0;
  auto ch = cairn::make_channel<std::uint64_t>(
      w, cairn::cyclic_distribution(w.size()), [&](std::uint64_t) { ++got; }, route,
      cairn::channel_options{.name = "route-overhead"});
  std::uint64_t s = 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(w.rank() + 1);
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < items; ++i) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    ch.send(s * 0x2545F4914F6CDD1DULL);
  }
  w.quiesce();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::array<std::uint64_t, 2> mine{got, ch.stats().forwarded}, all{};
  w.allreduce(mine, all, cairn::plus{});
  if (all[0] != items * static_cast<std::uint64_t>(w.size()))
    throw std::runtime_error("route-overhead: delivered " + std::to_string(all[0]) + " of " +
                             std::to_string(items * static_cast<std::uint64_t>(w.size())));
  return {slowest(w, dt), all[0] + all[1], all[1]};
}

int run_route_overhead(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is route::direct, in the same run
  const std::uint64_t items =
      count_param(inv.opts, "items", inv.opts.quick ? 1'000'000 : 8'000'000, 1, 1ULL << 40);
  const int samples =
      static_cast<int>(count_param(inv.opts, "samples", inv.opts.quick ? 1 : 5, 1, 1001));
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    const double cores =
        std::min<double>(w.size(), std::max(1u, std::thread::hardware_concurrency()));
    auto ns_per_hop = [&](const outcome& o) {
      return o.seconds * cores * 1e9 / static_cast<double>(o.hops);
    };
    auto measure = [&](auto route) {
      std::vector<double> ns;
      outcome last;
      for (int s = 0; s < samples; ++s) {
        last = run_route(w, route, items);
        ns.push_back(ns_per_hop(last));
      }
      return std::pair{median(ns), last};
    };
    const auto [direct_ns, direct] = measure(cairn::route::direct{});
    auto emit = [&](const std::string& name, double ns, const outcome& o) {
      if (!rep) return;
      rep->add(row{name, std::string(to_string(w.engine())), w.size(), 8, "ns_per_item_hop",
                   "lower", ns, "direct", direct_ns});
      const double extra =
          (ns * static_cast<double>(o.hops) - direct_ns * static_cast<double>(direct.hops)) /
          std::max<double>(1.0, static_cast<double>(o.forwarded));
      note(name + ": " + std::to_string(o.forwarded) + " of " + std::to_string(o.hops) +
           " item-hops were forwards; extra_ns_per_forward = " + std::to_string(extra));
    };
    const auto [grid_ns, grid] = measure(cairn::route::grid{});
    emit("route-overhead-grid", grid_ns, grid);
    const auto [cube_ns, cube] = measure(cairn::route::hypercube{});
    emit("route-overhead-hypercube", cube_ns, cube);
  });
}

const param_registrar params{
    "route-overhead",
    {{"items", "items sent by every rank", "8000000, 1000000 with --quick"},
     {"samples", "runs per figure (the median is reported)", "5, 1 with --quick"}}};

const registrar reg{{"route-overhead",
                     "CPU ns per item per hop, grid and hypercube vs direct (8-byte items)",
                     run_route_overhead}};

}  // namespace

}  // namespace cairn::bench
