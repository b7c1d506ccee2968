// `cairn-bench allreduce | bcast | reduce | allgather | reduce_scatter_block`: latency of one
// collective over all ranks (sum of doubles; root 0 for bcast and reduce), cairn's automatic
// algorithm choice against MPI_Allreduce / MPI_Bcast / MPI_Reduce / MPI_Allgather /
// MPI_Reduce_scatter_block on the same number of ranks. The message size is the byte size of
// each rank's vector (for allgather and reduce_scatter_block a block: the gathered output and
// the scattered input hold one per rank). Calls run back to back, as an application's loop would
// issue them; the figure is the median time per call of the slowest rank. `--rewrite=1` writes
// each rank's input again before every call (on both sides), as a program does that computes it
// between calls: the peers' cached copies of it are invalidated then, which an unchanged input
// spares a collective that reads the peers' buffers in place. `--reversed=1` runs
// both on every rank in reverse order: a cairn group (the board's keyed slots) against a
// communicator from MPI_Comm_split.
//
// Threads engine (plain run): all ranks of the run (`--cairn-ranks=N`, CAIRN_RANKS, else the
// hardware threads); the baseline comes from a child `mpirun -np N` of this program. MPI engine
// (under mpirun): cairn and MPI alternate in the same processes.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "kernels.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr std::string_view metric = "latency_us";
constexpr std::string_view better = "lower";

// How long one timed sample should last, and how many samples and rounds a figure takes.
// Iterations per sample are calibrated at run time rather than derived from the size: an
// oversubscribed run (more ranks than cores, common here) can be a hundred times slower than
// a dedicated one, and a fixed count would then take minutes.
struct plan {
  double sample_seconds;  // target duration of one timed sample on the slowest rank
  int samples;            // timed samples per figure (odd: the median is one of them)
  int rounds;             // figures per size; the median round is reported
  int max_iters;          // cap on iterations per sample
  bool rewrite = false;   // the input is written again before every call
};

plan default_plan(bool quick) {
  return quick ? plan{0.002, 5, 1, 1 << 14} : plan{0.01, 11, 3, 1 << 16};
}

plan plan_of(const options& o) {
  plan p = default_plan(o.quick);
  p.samples =
      static_cast<int>(count_param(o, "samples", static_cast<std::uint64_t>(p.samples), 1, 1001));
  p.rounds = rounds_param(o);
  const auto ms = count_param(o, "sample-us", static_cast<std::uint64_t>(p.sample_seconds * 1e6), 1,
                              10'000'000);
  p.sample_seconds = static_cast<double>(ms) * 1e-6;
  p.rewrite = count_param(o, "rewrite", 0, 0, 1) != 0;
  return p;
}

// The size ladder, keeping only whole vectors of doubles; `dropped` counts the others (only
// possible with an odd `--sizes`).
std::vector<std::size_t> double_sizes(const options& opts, std::size_t& dropped) {
  std::vector<std::size_t> sizes = size_ladder(opts);
  const auto before = sizes.size();
  std::erase_if(sizes, [](std::size_t s) { return s % sizeof(double) != 0; });
  dropped = before - sizes.size();
  if (sizes.empty())
    throw std::runtime_error("no message size of --sizes=" + std::to_string(opts.min_size) + "-" +
                             std::to_string(opts.max_size) +
                             " is a multiple of 8 bytes (a vector of doubles)");
  return sizes;
}

// The collective a subcommand measures, by the subcommand's name.
enum class collective { allreduce, bcast, reduce, allgather, reduce_scatter_block };
// By value.
constexpr std::string_view collective_names[] = {"allreduce", "bcast", "reduce", "allgather",
                                                 "reduce_scatter_block"};
constexpr int root = 0;  // of bcast and reduce

collective collective_named(std::string_view name) {
  const auto* at = std::find(std::begin(collective_names), std::end(collective_names), name);
  return at == std::end(collective_names)
             ? collective::allreduce
             : static_cast<collective>(at - std::begin(collective_names));
}

// Rank r contributes r + i at index i: small integers, so every partial sum is exact in double
// whatever order an algorithm adds them in, and the expected result is known in closed form.
std::vector<double> input_of(int rank, std::size_t count) {
  std::vector<double> in(count);
  for (std::size_t i = 0; i < count; ++i)
    in[i] = static_cast<double>(rank) + static_cast<double>(i);
  return in;
}

// Throws unless `out` holds what `rank` must hold after the call: the sum over `ranks` ranks of
// input_of() (ranks * i + ranks(ranks-1)/2) for allreduce and the reduce's root, the root's
// input for bcast, every rank's input in rank order for allgather, this rank's block of the sum
// for reduce_scatter_block. A reduce's non-roots hold nothing to check.
void check(collective c, const std::vector<double>& out, int rank, int ranks,
           const std::string& what) {
  if (c == collective::reduce && rank != root) return;
  const double base = static_cast<double>(ranks) * (ranks - 1) / 2;
  const std::size_t count = out.size() / (c == collective::allgather ? ranks : 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double x =
        static_cast<double>(i % count) +
        (c == collective::reduce_scatter_block ? static_cast<double>(rank) * count : 0.0);
    const double want = c == collective::bcast       ? static_cast<double>(root) + x
                        : c == collective::allgather ? static_cast<double>(i / count) + x
                                                     : static_cast<double>(ranks) * x + base;
    if (out[i] != want)
      throw std::runtime_error(what + ": element " + std::to_string(i) + " of " +
                               std::to_string(out.size()) + " is " + std::to_string(out[i]) +
                               ", expected " + std::to_string(want));
  }
}

// Before a verified run: outputs hold -1 so that a result left from an earlier call cannot
// pass, except the bcast root's buffer, which holds the data to send.
void reset(collective c, int rank, const std::vector<double>& in, std::vector<double>& out) {
  if (c == collective::bcast && rank == root)
    std::copy(in.begin(), in.end(), out.begin());
  else
    std::fill(out.begin(), out.end(), -1.0);
}

// Names the run in a verification failure.
std::string describe(collective c, const char* who, int rank, std::size_t size) {
  return std::string(collective_names[static_cast<int>(c)]) + " (" + who + ") rank " +
         std::to_string(rank) + ", " + human_size(size);
}

// The sampling for one figure: `run(k)` runs k calls, `slowest(x)` is the maximum of x
// over all ranks (a collective, so every rank takes the same decisions). Batches of 1, 4,
// 16, ... iterations run until one lasts a tenth of a sample on the slowest rank; that also
// warms up the buffers and connections.
template <class Run, class Slowest>
sampling calibrate(const plan& p, Run&& run, Slowest&& slowest) {
  int k = 1;
  while (true) {
    const auto t0 = std::chrono::steady_clock::now();
    run(k);
    const auto t1 = std::chrono::steady_clock::now();
    const double dt = slowest(std::chrono::duration<double>(t1 - t0).count());
    if (dt >= p.sample_seconds / 10 || k >= p.max_iters) {
      const double per_iter = dt / k;
      const int iters =
          static_cast<int>(std::clamp(p.sample_seconds / per_iter, 1.0, double(p.max_iters)));
      return sampling{1, p.samples, iters};
    }
    k = std::min(k * 4, p.max_iters);
  }
}

// The latency in microseconds of `call(in, out)` for `size` bytes of doubles: the median time per
// call, maximum over the ranks (`slowest_of`, a collective: the same value on every rank). The
// result is verified before and after timing.
template <class Call, class Slowest, class Barrier>
double latency_us(collective c, int rank, int ranks, std::size_t size, const plan& p,
                  const char* who, Call&& call, Slowest&& slowest_of, Barrier&& barrier) {
  const std::size_t count = size / sizeof(double);
  const bool scatters = c == collective::reduce_scatter_block;
  std::vector<double> in =
      input_of(rank, scatters ? count * static_cast<std::size_t>(ranks) : count);
  const std::vector<double> pristine = in;
  std::vector<double> out(c == collective::allgather ? count * static_cast<std::size_t>(ranks)
                                                     : count);
  const std::string what = describe(c, who, rank, size);

  reset(c, rank, in, out);
  call(in, out);
  check(c, out, rank, ranks, what);

  // What the call reads: a bcast root's buffer, else the input.
  std::vector<double>& source = c == collective::bcast && rank == root ? out : in;
  auto run = [&](int iters) {
    for (int i = 0; i < iters; ++i) {
      if (p.rewrite) std::copy(pristine.begin(), pristine.end(), source.begin());
      call(in, out);
    }
  };
  const sampling s = calibrate(p, run, slowest_of);
  reset(c, rank, in, out);
  const double seconds = median_seconds_per_iter(s, barrier, run);
  check(c, out, rank, ranks, what + " (after timing)");
  return slowest_of(seconds) * 1e6;
}

// cairn's latency on the whole world, or (`reversed`) on a group of every rank in reverse
// order, which runs on the board's keyed slots.
double cairn_latency(cairn::world& w, collective c, std::size_t size, const plan& p,
                     bool reversed) {
  auto on = [&](auto& g) {
    auto call = [&g, c](const std::vector<double>& in, std::vector<double>& out) {
      switch (c) {
        case collective::allreduce: g.allreduce(in, out, cairn::plus{}); break;
        case collective::bcast: g.bcast(out, root); break;
        case collective::reduce: g.reduce(in, out, root, cairn::plus{}); break;
        case collective::allgather: g.allgather(in, out); break;
        case collective::reduce_scatter_block:
          g.reduce_scatter_block(in, out, cairn::plus{});
          break;
      }
    };
    return latency_us(
        c, g.rank(), g.size(), size, p, "cairn", call, [&](double x) { return slowest(w, x); },
        [&] { g.barrier(); });
  };
  if (!reversed) return on(w);
  std::vector<int> members(static_cast<std::size_t>(w.size()));
  for (int r = 0; r < w.size(); ++r) members[static_cast<std::size_t>(r)] = w.size() - 1 - r;
  cairn::group g = w.group(members);
  return on(g);
}

#if CAIRN_BENCH_HAVE_MPI
// The same with MPI's collective on MPI_COMM_WORLD, or (`reversed`) on a communicator of every
// rank in reverse order (MPI_Comm_split).
double raw_mpi_latency(collective c, std::size_t size, const plan& p, bool reversed) {
  int me = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm comm = MPI_COMM_WORLD;
  if (reversed) {
    MPI_Comm_split(MPI_COMM_WORLD, 0, ranks - 1 - me, &comm);
    MPI_Comm_rank(comm, &me);
  }
  const int n = static_cast<int>(size / sizeof(double));  // sizes are capped at 1 GiB
  auto call = [c, n, comm](const std::vector<double>& in, std::vector<double>& out) {
    switch (c) {
      case collective::allreduce:
        MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, comm);
        break;
      case collective::bcast: MPI_Bcast(out.data(), n, MPI_DOUBLE, root, comm); break;
      case collective::reduce:
        MPI_Reduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, root, comm);
        break;
      case collective::allgather:
        MPI_Allgather(in.data(), n, MPI_DOUBLE, out.data(), n, MPI_DOUBLE, comm);
        break;
      case collective::reduce_scatter_block:
        MPI_Reduce_scatter_block(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, comm);
        break;
    }
  };
  const double us = latency_us(c, me, ranks, size, p, "mpi-raw", call, mpi_slowest,
                               [comm] { MPI_Barrier(comm); });
  if (reversed) MPI_Comm_free(&comm);
  return us;
}
#endif

// The subcommands. Threads engine: the plain child has as many processes as the run has ranks.
int run_collective(const invocation& inv) {
  const collective c = collective_named(inv.name);
  std::size_t dropped = 0;
  sized_spec s;
  s.metric = metric;
  s.better = better;
  s.sizes = double_sizes(inv.opts, dropped);
  const plan p = plan_of(inv.opts);
  s.rounds = p.rounds;
  if (!inv.opts.raw_mpi_only && cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    s.launch.ranks = s.processes = threads_run_ranks(inv);
  if (dropped && !inv.opts.raw_mpi_only)
    note(std::string(inv.name) + ": skipping " + std::to_string(dropped) +
         " size(s) that are not a multiple of 8 bytes (a vector of doubles)");
  const bool reversed = count_param(inv.opts, "reversed", 0, 0, 1) != 0;
  s.mine = [&](cairn::world& w, std::size_t size) {
    return cairn_latency(w, c, size, p, reversed);
  };
#if CAIRN_BENCH_HAVE_MPI
  s.raw = [&](std::size_t size) { return raw_mpi_latency(c, size, p, reversed); };
#endif
  return run_sized(inv, s);
}

const registrar allreduce_reg{
    {"allreduce", "allreduce latency, sum of doubles over all ranks, automatic algorithm (us)",
     run_collective}};
const registrar bcast_reg{
    {"bcast", "bcast latency from rank 0, doubles, automatic algorithm (us)", run_collective}};
const std::vector<param_spec> collective_params{
    {"rounds", "alternating rounds of cairn and the baseline per figure", "3, 1 with --quick"},
    {"samples", "timed samples per round (the median is the round's figure)", "11, 5 with --quick"},
    {"reversed",
     "1: on a group of every rank in reverse order (cairn: the board's keyed slots; the "
     "baseline: MPI_Comm_split with reversed keys)",
     "0"},
    {"sample-us", "target duration of one timed sample in microseconds",
     "10000, 2000 with --quick"},
    {"rewrite",
     "1: every rank writes its input again (a copy of it) before every call, on both sides", "0"}};
const param_registrar allreduce_params{"allreduce", collective_params};
const param_registrar bcast_params{"bcast", collective_params};
const param_registrar reduce_params{"reduce", collective_params};
const param_registrar allgather_params{"allgather", collective_params};
const param_registrar reduce_scatter_block_params{"reduce_scatter_block", collective_params};

const registrar reduce_reg{{"reduce",
                            "reduce latency to rank 0, sum of doubles, automatic algorithm (us)",
                            run_collective}};
const registrar allgather_reg{
    {"allgather",
     "allgather latency, blocks of doubles from every rank (the size: one rank's block), "
     "automatic algorithm (us)",
     run_collective}};
const registrar reduce_scatter_block_reg{
    {"reduce_scatter_block",
     "reduce_scatter_block latency, sum of doubles, each rank's block (the size) of every rank's "
     "input, automatic algorithm (us)",
     run_collective}};

}  // namespace

#if CAIRN_BENCH_HAVE_MPI
double raw_mpi_allreduce_us(std::size_t size, bool quick) {
  return raw_mpi_latency(collective::allreduce, size, default_plan(quick), false);
}
#endif

}  // namespace cairn::bench
