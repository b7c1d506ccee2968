// `cairn-bench array-pingpong` (HPF/MPI Figure 5): two tasks of equal size pass a 2-D array of
// doubles back and forth, (BLOCK,*) on task A and (*,BLOCK) on task B (every sender talks to
// every receiver), 4 KiB and 1 MiB. The figure is the one-way time with persistent transfers
// (send_init/recv_init: descriptor exchange and plan once); the baseline in the same run is the
// same exchange with plain send/recv (descriptor exchange every time; the plan itself is
// cached). Values are checked after the timed round trips. A second row per size compares the
// centralized strategy (gather, one message, scatter) with the parallel one, both persistent —
// where the automatic choice's size threshold belongs. Then the time per step (descriptor
// exchange, scheduling, packing, transmission, unpacking; transfer_options::steps), persistent
// vs non-persistent, each the sender's plus the receiver's time of one transfer (slowest rank).
// Last, the centralized-vs-parallel rows for 128 B to 32 KiB arrays (the crossover that sets
// transfer_options::centralized_max_bytes).
#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

// One round trip over a pair of persistent transfers: side A sends first, side B receives first.
void round_trip(bool a_side, cairn::persistent_transfer& send, cairn::persistent_transfer& recv) {
  cairn::persistent_transfer& first = a_side ? send : recv;
  cairn::persistent_transfer& second = a_side ? recv : send;
  first.start();
  first.wait();
  second.start();
  second.wait();
}

int run_array_pingpong(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is cairn's own non-persistent transfer
  std::vector<std::int64_t> row_counts;
  for (const auto r : count_list_param(inv.opts, "rows", {16, 256}, 1, 1 << 14))
    row_counts.push_back(static_cast<std::int64_t>(r));
  std::vector<std::int64_t> squares;
  for (const auto n : count_list_param(inv.opts, "squares", {4, 8, 16, 32, 64}, 1, 1 << 14))
    squares.push_back(static_cast<std::int64_t>(n));
  const int iters_small =
      static_cast<int>(count_param(inv.opts, "iters", inv.opts.quick ? 100 : 1000, 1, 1 << 24));
  const int iters_large =
      static_cast<int>(count_param(inv.opts, "iters-large", inv.opts.quick ? 5 : 50, 1, 1 << 24));
  const int samples =
      static_cast<int>(count_param(inv.opts, "samples", inv.opts.quick ? 3 : 7, 1, 1001));
  const int crossover_samples =
      static_cast<int>(count_param(inv.opts, "crossover-samples", inv.opts.quick ? 5 : 9, 1, 1001));
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    if (w.size() < 2) throw std::runtime_error("array-pingpong needs at least 2 ranks (two tasks)");
    const int half = w.size() / 2;
    cairn::tasks t(w, {half, w.size() - half});
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    const std::string engine(to_string(w.engine()));
    for (const std::int64_t rows : row_counts) {
      const std::int64_t cols = rows * 2;  // 16 x 32 doubles = 4 KiB, 256 x 512 = 1 MiB
      const auto bytes = static_cast<std::size_t>(rows * cols * 8);
      const bool a_side = t.task() == 0;
      const cairn::layout<2> l =
          a_side ? cairn::layout<2>(t.my_group(), {rows, cols}, {dist::block, dist::replicated},
                                    {t.my_group().size(), 1})
                 : cairn::layout<2>(t.my_group(), {rows, cols}, {dist::replicated, dist::block},
                                    {1, t.my_group().size()});
      cairn::darray<double, 2> x(l);
      auto reference = [&](const auto& g) { return static_cast<double>(g[0] * cols + g[1]); };
      if (a_side) x.fill(reference);
      const int other = 1 - t.task();
      auto plain = [&](int iters) {
        for (int i = 0; i < iters; ++i) {
          if (a_side) {
            t.send(x, other, 1, {.strategy = transfer_strategy::parallel});
            t.recv(x, other, 2, {.strategy = transfer_strategy::parallel});
          } else {
            t.recv(x, other, 1, {.strategy = transfer_strategy::parallel});
            t.send(x, other, 2, {.strategy = transfer_strategy::parallel});
          }
        }
      };
      const transfer_options par{.strategy = transfer_strategy::parallel};
      const transfer_options cen{.strategy = transfer_strategy::centralized};
      cairn::persistent_transfer out = t.send_init(x, other, a_side ? 3 : 4, par);
      cairn::persistent_transfer in = t.recv_init(x, other, a_side ? 4 : 3, par);
      cairn::persistent_transfer cout = t.send_init(x, other, a_side ? 5 : 6, cen);
      cairn::persistent_transfer cin = t.recv_init(x, other, a_side ? 6 : 5, cen);
      auto centralized = [&](int iters) {
        for (int i = 0; i < iters; ++i) round_trip(a_side, cout, cin);
      };
      auto persistent = [&](int iters) {
        for (int i = 0; i < iters; ++i) round_trip(a_side, out, in);
      };
      const int iters = bytes <= 4096 ? iters_small : iters_large;
      const sampling s{2, samples, iters};
      const double plain_s = median_seconds_per_iter(
                                 s, [&] { w.barrier(); }, plain) /
                             2;
      const double pers_s = median_seconds_per_iter(
                                s, [&] { w.barrier(); }, persistent) /
                            2;
      const double cen_s = median_seconds_per_iter(
                               s, [&] { w.barrier(); }, centralized) /
                           2;
      std::int64_t bad = 0;
      x.for_each([&](const auto& g, double& v) { bad += v != reference(g); });
      if (bad)
        throw std::runtime_error("array-pingpong: " + std::to_string(bad) + " wrong elements");
      const double a = slowest(w, pers_s), b = slowest(w, plain_s), c = slowest(w, cen_s);
      if (rep) {
        rep->add(row{"array-pingpong", engine, w.size(), bytes, "one_way_us", "lower", a * 1e6,
                     "non-persistent", b * 1e6});
        rep->add(row{"array-pingpong", engine, w.size(), bytes, "one_way_us_centralized", "lower",
                     c * 1e6, "parallel", a * 1e6});
      }

      // Per-step breakdown (HPF/MPI Figure 5's shaded bars), from separate runs with step
      // timing on: per round trip each rank sends once and receives once, so its step times
      // per round trip are the sender's plus the receiver's of one transfer; the figure is
      // the slowest rank's (the paper's maximum over processors).
      cairn::transfer_steps ps{}, ns{};
      const transfer_options par_steps{.strategy = transfer_strategy::parallel, .steps = &ps};
      const transfer_options plain_steps{.strategy = transfer_strategy::parallel, .steps = &ns};
      cairn::persistent_transfer sout = t.send_init(x, other, a_side ? 7 : 8, par_steps);
      cairn::persistent_transfer sin = t.recv_init(x, other, a_side ? 8 : 7, par_steps);
      auto round_trips = [&](int iters, bool persistent_mode) {
        for (int i = 0; i < iters; ++i) {
          if (persistent_mode) {
            round_trip(a_side, sout, sin);
          } else if (a_side) {
            t.send(x, other, 9, plain_steps);
            t.recv(x, other, 10, plain_steps);
          } else {
            t.recv(x, other, 9, plain_steps);
            t.send(x, other, 10, plain_steps);
          }
        }
      };
      round_trips(1, true);  // the persistent pair's first start: exchange and plan, not counted
      round_trips(1, false);
      // Samples as for the figures above; of each mode, the sample whose total is the median
      // (on a busy machine a mean would be dominated by a few descheduled round trips).
      auto sampled = [&](cairn::transfer_steps& rec, bool persistent_mode) {
        std::vector<cairn::transfer_steps> got;
        for (int k = 0; k < s.samples; ++k) {
          rec = {};
          w.barrier();
          round_trips(iters, persistent_mode);
          got.push_back(rec);
        }
        auto total = [](const cairn::transfer_steps& r) {
          return r.exchange_s + r.plan_s + r.pack_s + r.transmit_s + r.unpack_s;
        };
        std::sort(got.begin(), got.end(),
                  [&](const auto& l, const auto& r) { return total(l) < total(r); });
        return got[got.size() / 2];
      };
      const cairn::transfer_steps pm = sampled(ps, true), nm = sampled(ns, false);
      const std::pair<const char*, double cairn::transfer_steps::*> steps[] = {
          {"step_exchange_us", &cairn::transfer_steps::exchange_s},
          {"step_schedule_us", &cairn::transfer_steps::plan_s},
          {"step_pack_us", &cairn::transfer_steps::pack_s},
          {"step_transmit_us", &cairn::transfer_steps::transmit_s},
          {"step_unpack_us", &cairn::transfer_steps::unpack_s}};
      for (const auto& [metric, field] : steps) {
        const double pv = slowest(w, pm.*field / iters), nv = slowest(w, nm.*field / iters);
        if (rep)
          rep->add(row{"array-pingpong", engine, w.size(), bytes, metric, "lower", pv * 1e6,
                       "non-persistent", nv * 1e6});
      }
    }

    // The centralized strategy's crossover: persistent one-way times of both strategies for
    // small square arrays (128 B to 32 KiB), alternating sample by sample.
    for (const std::int64_t n : squares) {
      const auto bytes = static_cast<std::size_t>(n * n * 8);
      const bool a_side = t.task() == 0;
      const cairn::layout<2> l =
          a_side ? cairn::layout<2>(t.my_group(), {n, n}, {dist::block, dist::replicated},
                                    {t.my_group().size(), 1})
                 : cairn::layout<2>(t.my_group(), {n, n}, {dist::replicated, dist::block},
                                    {1, t.my_group().size()});
      cairn::darray<double, 2> x(l);
      const int other = 1 - t.task();
      std::array<cairn::persistent_transfer, 4> pt;  // parallel out, in; centralized out, in
      for (int k = 0; k < 2; ++k) {
        const transfer_options o{.strategy = k == 0 ? transfer_strategy::parallel
                                                    : transfer_strategy::centralized};
        const int base = 20 + 2 * k;
        pt[static_cast<std::size_t>(2 * k)] = t.send_init(x, other, a_side ? base : base + 1, o);
        pt[static_cast<std::size_t>(2 * k + 1)] =
            t.recv_init(x, other, a_side ? base + 1 : base, o);
      }
      auto round_trips = [&](int which, int iters) {
        for (int i = 0; i < iters; ++i)
          round_trip(a_side, pt[static_cast<std::size_t>(2 * which)],
                     pt[static_cast<std::size_t>(2 * which + 1)]);
      };
      const int iters = iters_small;
      round_trips(0, 2);
      round_trips(1, 2);
      const sampling one{0, 1, iters};
      std::vector<double> par, cen;
      for (int k = 0; k < crossover_samples; ++k) {
        par.push_back(median_seconds_per_iter(
                          one, [&] { w.barrier(); }, [&](int it) { round_trips(0, it); }) /
                      2);
        cen.push_back(median_seconds_per_iter(
                          one, [&] { w.barrier(); }, [&](int it) { round_trips(1, it); }) /
                      2);
      }
      const double p = slowest(w, median(par)), c = slowest(w, median(cen));
      if (rep)
        rep->add(row{"array-pingpong", engine, w.size(), bytes, "one_way_us_centralized", "lower",
                     c * 1e6, "parallel", p * 1e6});
    }
  });
}

const param_registrar params{
    "array-pingpong",
    {{"rows", "R of the R x 2R arrays of the main rows, comma-separated", "16,256"},
     {"squares", "N of the N x N arrays of the crossover rows, comma-separated", "4,8,16,32,64"},
     {"iters", "round trips per sample up to 4 KiB", "1000, 100 with --quick"},
     {"iters-large", "round trips per sample above 4 KiB", "50, 5 with --quick"},
     {"samples", "timed samples per figure of the main rows", "7, 3 with --quick"},
     {"crossover-samples", "alternating samples per crossover figure", "9, 5 with --quick"}}};

const registrar reg{
    {"array-pingpong",
     "HPF/MPI Figure 5: one-way array transfer between two tasks, persistent vs not",
     run_array_pingpong}};

}  // namespace

}  // namespace cairn::bench
