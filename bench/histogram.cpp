// `cairn-bench histogram`: the aggregated-messages throughput benchmark (AP 4.1; the
// histogram of bale and YGM). Every rank sends `updates` 8-byte keys, uniform over a global
// table of T counters per rank, on a channel whose handler increments the owner's counter;
// w.quiesce() ends the phase. The figure is the aggregate rate over all ranks (updates/s).
// Verified: the counters of all ranks sum to ranks × updates.
//
// Baseline (`local-sequential`): one core doing the same number of updates per rank into a
// local table of T counters with the same key generator — what one rank could do if it owned
// every counter. ratio = cairn aggregate / sequential; ratio / ranks is the parallel efficiency.
//
// Rows: `size` is T × 8 bytes (the table per rank); one row per T, per route (direct; grid from
// 4 ranks; node_aware where the ranks span several nodes, e.g. CAIRN_NODES), and per handler:
// one item per call, `-batched`, a batch handler that prefetches the counters of the keys
// ahead (cairn::for_each_prefetched), and `-array`, the same counters as a
// cairn::containers::array updated by async_reduce (which merges repeated keys at the source
// in a cache of --cache-slots entries, and on every hop of a forwarding route).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "cairn/containers/array.hpp"
#include "handlers.hpp"
#include "random.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

// Seconds for `updates` sequential increments of a local table of `t` counters.
double sequential_seconds(std::uint64_t t, std::uint64_t updates, std::uint64_t seed) {
  std::vector<std::uint64_t> table(t, 0);
  keygen g{seed};
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < updates; ++i) ++table[scale(g.next(), t)];
  const auto t1 = std::chrono::steady_clock::now();
  std::uint64_t sum = 0;
  for (auto c : table) sum += c;
  if (sum != updates) throw std::runtime_error("histogram baseline: lost updates");
  return std::chrono::duration<double>(t1 - t0).count();
}

// Batched: the handler takes a message's keys at once and prefetches their counters.
template <bool Batched, class Route>
double cairn_seconds(cairn::world& w, std::uint64_t t, std::uint64_t updates, Route route,
                     std::size_t buffer_items) {
  const std::uint64_t n = t * static_cast<std::uint64_t>(w.size());
  const cairn::block_distribution dist(n, w.size());
  std::vector<std::uint64_t> table(t, 0);
  const auto counter = [&](std::uint64_t k) { return &table[dist.local_index(k)]; };
  auto ch = cairn::make_channel<std::uint64_t>(
      w, dist, handler_of<std::uint64_t, Batched>(counter, [&](std::uint64_t k) { ++*counter(k); }),
      route, cairn::channel_options{.buffer_items = buffer_items, .name = "histogram"});
  keygen g{0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(w.rank() + 1)};
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < updates; ++i) ch.send(scale(g.next(), n));
  w.quiesce();
  const auto t1 = std::chrono::steady_clock::now();
  std::uint64_t sum = 0;
  for (auto c : table) sum += c;
  std::uint64_t total = 0;
  w.allreduce(std::span(&sum, 1), std::span(&total, 1), cairn::plus{});
  if (total != updates * static_cast<std::uint64_t>(w.size()))
    throw std::runtime_error("histogram: counters sum to " + std::to_string(total) + ", expected " +
                             std::to_string(updates * static_cast<std::uint64_t>(w.size())));
  return slowest(w, std::chrono::duration<double>(t1 - t0).count());
}

// The histogram as a user of the containers writes it: an array of T counters per rank.
template <class Route>
double array_seconds(cairn::world& w, std::uint64_t t, std::uint64_t updates, Route route,
                     std::size_t cache_slots) {
  const std::uint64_t n = t * static_cast<std::uint64_t>(w.size());
  cairn::containers::array<std::uint64_t, Route> table(
      w, n, 0, {.cache_slots = cache_slots, .name = "histogram-array"}, route);
  const auto add = [](std::uint64_t a, std::uint64_t b) { return a + b; };
  keygen g{0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(w.rank() + 1)};
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < updates; ++i) table.async_reduce(scale(g.next(), n), 1, add);
  w.quiesce();
  const auto t1 = std::chrono::steady_clock::now();
  std::uint64_t sum = 0;
  for (auto c : table.local()) sum += c;
  std::uint64_t total = 0;
  w.allreduce(std::span(&sum, 1), std::span(&total, 1), cairn::plus{});
  if (total != updates * static_cast<std::uint64_t>(w.size()))
    throw std::runtime_error("histogram-array: counters sum to " + std::to_string(total) +
                             ", expected " +
                             std::to_string(updates * static_cast<std::uint64_t>(w.size())));
  return slowest(w, std::chrono::duration<double>(t1 - t0).count());
}

int run_histogram(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is sequential, measured in the run
  const std::uint64_t updates =
      count_param(inv.opts, "updates", inv.opts.quick ? 2'000'000 : 20'000'000, 1, 1ULL << 40);
  const std::vector<std::uint64_t> tables =
      count_list_param(inv.opts, "counters", {1000, std::uint64_t{1} << 20}, 1, 1ULL << 34);
  const int samples =
      static_cast<int>(count_param(inv.opts, "samples", inv.opts.quick ? 1 : 3, 1, 1001));
  const auto cache_slots = static_cast<std::size_t>(count_param(
      inv.opts, "cache-slots", cairn::containers::container_options{}.cache_slots, 0, 1ULL << 30));
  bool direct = true, grid = true, node_aware = true;
  if (const auto r = inv.opts.params.find("route"); r != inv.opts.params.end()) {
    if (r->second != "direct" && r->second != "grid" && r->second != "node_aware")
      throw std::invalid_argument("--route is direct, grid or node_aware, not " + r->second);
    direct = r->second == "direct";
    grid = r->second == "grid";
    node_aware = r->second == "node_aware";
    record_param("route", "\"" + r->second + "\"");
  }
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    const std::string engine(to_string(w.engine()));
    for (const std::uint64_t t : tables) {
      // Baseline: every rank at once on its own core (as the cairn run uses them); median.
      std::vector<double> seq;
      for (int s = 0; s < samples; ++s) {
        w.barrier();
        seq.push_back(
            slowest(w, sequential_seconds(t, updates, 7 + static_cast<std::uint64_t>(w.rank()))));
      }
      const double seq_rate = static_cast<double>(updates) / median(seq);
      auto emit = [&](const std::string& bench, double seconds) {
        const double rate = static_cast<double>(updates) * w.size() / seconds;
        if (rep)
          rep->add(row{bench, engine, w.size(), static_cast<std::size_t>(t * 8), "updates_per_s",
                       "higher", rate, "local-sequential", seq_rate});
      };
      auto measure = [&](auto route, const std::string& bench) {
        std::vector<double> item, batched, array;
        for (int s = 0; s < samples; ++s) {  // alternated, so drifting load hits all alike
          item.push_back(cairn_seconds<false>(w, t, updates, route, 0));
          batched.push_back(cairn_seconds<true>(w, t, updates, route, 0));
          array.push_back(array_seconds(w, t, updates, route, cache_slots));
        }
        emit(bench, median(item));
        emit(bench + "-batched", median(batched));
        emit(bench + "-array", median(array));
      };
      if (direct) measure(cairn::route::direct{}, "histogram");
      if (grid && w.size() >= 4) measure(cairn::route::grid{}, "histogram-grid");
      if (node_aware && w.node_count() > 1)
        measure(cairn::route::node_aware{}, "histogram-node-aware");
    }
  });
}

const param_registrar params{
    "histogram",
    {{"updates", "updates sent by every rank", "20000000, 2000000 with --quick"},
     {"counters", "T, counters per rank: a comma-separated list, one row each", "1000,2^20"},
     {"samples", "runs per figure (the median is reported)", "3, 1 with --quick"},
     {"cache-slots", "the -array rows' combining cache at the source (0: off)",
      "the container's default"},
     {"route",
      "direct, grid (route::grid, from 4 ranks) or node_aware (route::node_aware, ranks on "
      "several nodes)",
      "each that applies, one after the other"}}};

const registrar reg{
    {"histogram",
     "aggregated 8-byte updates to T = 1000 and 2^20 counters per rank (updates/s, all ranks)",
     run_histogram}};

}  // namespace

}  // namespace cairn::bench
