// `cairn-bench pointerchase`: AP 4.2, the latency of a chain of dependent messages. The ranks
// form a random ring (a permutation of [0, P) from a fixed seed, the same on every rank); one
// small token travels around it R times, each rank relaying it to the next. The figure is
// microseconds per hop (slowest rank's seconds / (R · P); lower is better).
//
// cairn (`pointerchase`): AP's formulation — no main loop, the handler relays the token (the
// start rank counts the rounds); a channel of 8-byte tokens with buffer_items = 1 (no
// coalescing, as AP 5.1) started by one send, ended by w.quiesce().
//
// Baseline (`mpi-recv-send`, AP 4.2's MPI code): per round MPI_Recv(any source) then MPI_Send
// to the next rank (the start rank sends first). Inline under mpirun; in a plain (threads) run
// from a child `mpirun -np P cairn-bench pointerchase --raw-mpi-only`.
//
// Verified after every run: every rank relayed the token exactly R times, and the token that
// ends at the start rank has counted R · P hops.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr std::string_view metric = "latency_us";
constexpr std::string_view better = "lower";
constexpr std::string_view baseline_name = "mpi-recv-send";

struct token {
  std::uint32_t round;  // completed trips around the ring
  std::uint32_t hops;   // hops so far
};

// The ring: a permutation of the ranks (Fisher–Yates, fixed seed), the same on every rank.
struct ring {
  int next = 0, start = 0;
  ring(int me, int ranks) {
    std::vector<int> order(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) order[static_cast<std::size_t>(r)] = r;
    std::uint64_t s = 0x853C49E6748FEA9BULL;
    for (int i = ranks - 1; i > 0; --i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      std::swap(order[static_cast<std::size_t>(i)],
                order[static_cast<std::size_t>((s >> 33) % static_cast<std::uint64_t>(i + 1))]);
    }
    start = order[0];
    for (int i = 0; i < ranks; ++i)
      if (order[static_cast<std::size_t>(i)] == me)
        next = order[static_cast<std::size_t>((i + 1) % ranks)];
  }
};

// Throws unless every rank relayed R times and the final token counted R · P hops.
void verify(cairn::world& w, std::uint64_t relayed, std::uint64_t final_hops, int rounds,
            const std::string& who) {
  const std::uint64_t r = static_cast<std::uint64_t>(rounds),
                      p = static_cast<std::uint64_t>(w.size());
  std::array<std::uint64_t, 3> mine{relayed == r ? 0u : 1u, final_hops, 0}, all{};
  w.allreduce(std::span(mine), std::span(all), cairn::plus{});
  if (all[0] != 0 || all[1] != r * p)
    throw std::runtime_error("pointerchase (" + who + "): " + std::to_string(all[0]) +
                             " ranks did not relay the token " + std::to_string(rounds) +
                             " times; final hop count " + std::to_string(all[1]) + ", expected " +
                             std::to_string(r * p));
}

double cairn_run(cairn::world& w, int rounds) {
  const ring g(w.rank(), w.size());
  const int me = w.rank();
  std::uint64_t relayed = 0, final_hops = 0;
  double seconds = 0;
  {
    // The handler sends on the channel it belongs to, which it reaches through `relay`.
    std::function<void(const token&)> relay;
    // queue_local: with one rank the token goes to itself; queued, it does not recurse R deep.
    auto ch = cairn::make_channel<token>(
        w, cairn::msg::distribution([](const token&) { return 0; }),
        [&](const token& t) {
          ++relayed;
          token n{t.round, t.hops + 1};
          if (me == g.start) {
            if (t.round + 1 == static_cast<std::uint32_t>(rounds)) {
              final_hops = t.hops;
              return;
            }
            ++n.round;
          }
          relay(n);
        },
        cairn::channel_options{.buffer_items = 1, .queue_local = true, .name = "pointerchase"});
    relay = [&](const token& t) { ch.send_to(g.next, t); };
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    if (me == g.start) ch.send_to(g.next, token{0, 1});
    w.quiesce();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  verify(w, relayed, final_hops, rounds, "cairn");
  return slowest(w, seconds) / (static_cast<double>(rounds) * w.size()) * 1e6;
}

#if CAIRN_BENCH_HAVE_MPI
double mpi_run(cairn::world& w, int rounds) {
  const ring g(w.rank(), w.size());
  const int me = w.rank();
  std::uint64_t relayed = 0, final_hops = 0;
  token t{0, 1};
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) {
    if (me == g.start) {
      t.round = static_cast<std::uint32_t>(r);
      MPI_Send(&t, 2, MPI_UINT32_T, g.next, 7, MPI_COMM_WORLD);
      MPI_Recv(&t, 2, MPI_UINT32_T, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ++relayed;
      final_hops = t.hops;
      ++t.hops;
    } else {
      MPI_Recv(&t, 2, MPI_UINT32_T, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ++relayed;
      ++t.hops;
      MPI_Send(&t, 2, MPI_UINT32_T, g.next, 7, MPI_COMM_WORLD);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (me != g.start) final_hops = 0;
  verify(w, relayed, final_hops, rounds, "mpi-recv-send");
  return slowest(w, seconds) / (static_cast<double>(rounds) * w.size()) * 1e6;
}
#endif

int rounds_for(const options& o) {
  return static_cast<int>(count_param(o, "laps", o.quick ? 50 : 200, 1, 1'000'000));
}
int samples_for(const options& o) {
  return static_cast<int>(count_param(o, "samples", o.quick ? 1 : 3, 1, 1001));
}

int run_raw_only(const invocation& inv) {
  raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
  body = [&](cairn::world& w, report* rep) {
    std::vector<double> runs;
    for (int r = 0; r < samples_for(inv.opts); ++r)
      runs.push_back(mpi_run(w, rounds_for(inv.opts)));
    if (rep)
      rep->add(raw_mpi_row(std::string(inv.name), w.size(), sizeof(token), metric, better,
                           median(runs)));
  };
#endif
  return run_raw_mpi_only(inv, body);
}

int run_pointerchase(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return run_raw_only(inv);
  cairn::launch_options lo;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    lo.ranks = threads_run_ranks(inv);
  const baseline_figures spawned = prepare_baseline(inv, metric, lo.ranks.value_or(0));
  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    const bool inline_mpi = w.engine() == cairn::engine::mpi && inv.opts.baseline;
    std::vector<double> mine, base;
    for (int r = 0; r < samples_for(inv.opts); ++r) {  // alternated
      mine.push_back(cairn_run(w, rounds_for(inv.opts)));
#if CAIRN_BENCH_HAVE_MPI
      if (inline_mpi) base.push_back(mpi_run(w, rounds_for(inv.opts)));
#endif
    }
    if (w.rank() != 0) return;
    const std::optional<double> base_us = baseline_figure(
        inv, baseline_name, spawned, inline_mpi,
        base.empty() ? std::nullopt : std::optional<double>(median(base)), sizeof(token));
    report rep(inv.opts.json);
    rep.add(row{"pointerchase", std::string(cairn::to_string(w.engine())), w.size(), sizeof(token),
                std::string(metric), std::string(better), median(mine), std::string(baseline_name),
                base_us});
  });
}

const param_registrar params{
    "pointerchase",
    {{"laps", "R, times the token travels around the ring", "200, 50 with --quick"},
     {"samples", "timed runs per figure (the median is reported)", "3, 1 with --quick"}}};

const registrar reg{{"pointerchase",
                     "AP 4.2: a token relayed around a random ring of ranks, unbuffered channel vs "
                     "MPI_Recv/MPI_Send (us per hop)",
                     run_pointerchase}};

}  // namespace

}  // namespace cairn::bench
