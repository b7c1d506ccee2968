// `cairn-bench flow-chemistry`: the shape of Aspen's Figure 8 (chemistry): N independent
// instances, each advancing its own small stiff system by a fixed kernel per iteration, and an
// all-reduce of their states per iteration. The kernel: `--steps` implicit-Euler steps (two
// Newton iterations each, a 3x3 linear solve by Cramer's rule) of Robertson's 3-species system
// with instance i's first rate constant scaled by 1 + i / 64, from y = (1, 0, 0); the
// all-reduce sums the three concentrations over all instances. Instances are placed in balanced
// blocks (instance i on rank i * P / N, the flow layer's default) on both sides. The rows' size
// is N, the instances over all ranks (not bytes); the figure is iterations per second
// (`--iterations` / the slowest rank's time; higher is better).
//
// cairn::flow (`flow-chemistry`): a module vector chem[N] and a reduce module `total`
// (std::vector<double> of 3, plus); chem ||| total ||| chem, so every instance sends its state
// each iteration and dequeues the sum (into a vector kept across iterations) before its next
// iteration. Timed: one g.run() of all the iterations, from a barrier to its return (it makes
// the instances and ends collectively).
// Baseline `mpi-raw`: a plain MPI program (no cairn state in the process: run_sized's plain
// child `mpirun -np P cairn-bench flow-chemistry --raw-mpi-only` on the threads engine, or
// before cairn starts under mpirun): each rank runs the kernel of its instances, sums their
// states locally and calls MPI_Allreduce of 3 doubles, per iteration; timed from an
// MPI_Barrier to the last iteration. Median of `--samples` runs per round, median of the
// rounds (alternating with cairn's).
//
// Verified, both sides, every iteration on every rank: the reduced sums equal those of a
// sequential reference (every instance's trajectory computed untimed in this process) within
// a relative 1e-9 (the sides sum in other orders); mismatches over all ranks must be 0 or the
// benchmark throws.
//
// Speedup over ranks: run it at 1, 2 and 4 ranks with the same --instances (strong scaling);
// scripts/bench does so and the rows' cairn figures over the 1-rank figure are the speedup.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "cairn/flow/graph.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

namespace flow = cairn::flow;

using state = std::array<double, 3>;

struct settings {
  int iterations = 0;
  int steps = 0;
  int samples = 0;
};

// One implicit-Euler step of Robertson's system, y' = f(y), with time step h:
// f = (-a y0 + c y1 y2, a y0 - c y1 y2 - b y1^2, b y1^2), a = 0.04 * scale, b = 3e7, c = 1e4.
void euler_step(state& y, double scale, double h) {
  const double a = 0.04 * scale, b = 3e7, c = 1e4;
  const state y0 = y;
  for (int newton = 0; newton < 2; ++newton) {
    const double f0 = -a * y[0] + c * y[1] * y[2];
    const double f1 = a * y[0] - c * y[1] * y[2] - b * y[1] * y[1];
    const double f2 = b * y[1] * y[1];
    // G(y) = y - y0 - h f(y); J = I - h df/dy; solve J d = -G.
    const double g0 = -(y[0] - y0[0] - h * f0), g1 = -(y[1] - y0[1] - h * f1),
                 g2 = -(y[2] - y0[2] - h * f2);
    const double j00 = 1 + h * a, j01 = -h * c * y[2], j02 = -h * c * y[1];
    const double j10 = -h * a, j11 = 1 + h * (c * y[2] + 2 * b * y[1]), j12 = h * c * y[1];
    const double j20 = 0, j21 = -h * 2 * b * y[1], j22 = 1;
    const double det = j00 * (j11 * j22 - j12 * j21) - j01 * (j10 * j22 - j12 * j20) +
                       j02 * (j10 * j21 - j11 * j20);
    const double d0 =
        (g0 * (j11 * j22 - j12 * j21) - j01 * (g1 * j22 - j12 * g2) + j02 * (g1 * j21 - j11 * g2)) /
        det;
    const double d1 =
        (j00 * (g1 * j22 - j12 * g2) - g0 * (j10 * j22 - j12 * j20) + j02 * (j10 * g2 - g1 * j20)) /
        det;
    const double d2 =
        (j00 * (j11 * g2 - g1 * j21) - j01 * (j10 * g2 - g1 * j20) + g0 * (j10 * j21 - j11 * j20)) /
        det;
    y[0] += d0;
    y[1] += d1;
    y[2] += d2;
  }
}

constexpr double step_h = 1e-3;
double scale_of(int instance) { return 1.0 + static_cast<double>(instance) / 64.0; }

// The kernel of one iteration of one instance.
void kernel(state& y, int instance, int steps) {
  const double s = scale_of(instance);
  for (int k = 0; k < steps; ++k) euler_step(y, s, step_h);
}

// The sums of all instances' states after each iteration, computed sequentially.
std::vector<state> reference(int n, const settings& s) {
  std::vector<state> ys(static_cast<std::size_t>(n), state{1, 0, 0});
  std::vector<state> sums;
  sums.reserve(static_cast<std::size_t>(s.iterations));
  for (int it = 0; it < s.iterations; ++it) {
    state sum{0, 0, 0};
    for (int i = 0; i < n; ++i) {
      kernel(ys[static_cast<std::size_t>(i)], i, s.steps);
      for (std::size_t c = 0; c < 3; ++c) sum[c] += ys[static_cast<std::size_t>(i)][c];
    }
    sums.push_back(sum);
  }
  return sums;
}

bool close(const double* got, const state& want) {
  for (std::size_t c = 0; c < 3; ++c)
    if (!(std::abs(got[c] - want[c]) <= 1e-9 * std::abs(want[c]) + 1e-300)) return false;
  return true;
}

// The flow module: one instance of the chemistry.
struct chem {
  static constexpr flow::input<std::vector<double>> in{};
  static constexpr flow::output<std::vector<double>> out{};
  const settings* s = nullptr;
  const std::vector<state>* ref = nullptr;
  std::uint64_t* wrong = nullptr;
  flow::task run(flow::context& ctx) {
    state y{1, 0, 0};
    std::vector<double> v(3), sum;
    for (int it = 0; it < s->iterations; ++it) {
      kernel(y, ctx.index(), s->steps);
      std::copy(y.begin(), y.end(), v.begin());
      ctx.send(out, v);
      co_await ctx.dequeue_into(in, sum);  // the last sum's storage takes the next
      *wrong += sum.size() != 3 || !close(sum.data(), (*ref)[static_cast<std::size_t>(it)]);
    }
  }
};

// cairn's figure: iterations per second of one g.run(), median over the samples.
double cairn_rate(cairn::world& w, int n, const settings& s, const std::vector<state>& ref) {
  std::uint64_t wrong = 0;
  flow::graph g(w);
  auto c = g.add<chem>("chem", n, [&](int) { return chem{&s, &ref, &wrong}; });
  auto total = g.reduce<std::vector<double>>("total", cairn::plus{});
  g.flow(c, total, c);
  std::vector<double> t;
  for (int k = 0; k < s.samples; ++k) {
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    g.run();
    t.push_back(
        slowest(w, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  const std::uint64_t all = w.allreduce(wrong, cairn::plus{});
  if (all != 0)
    throw std::runtime_error("flow-chemistry (cairn): " + std::to_string(all) +
                             " reduced sums differ from the sequential reference");
  return s.iterations / median(std::move(t));
}

#if CAIRN_BENCH_HAVE_MPI
// The plain program's placement of instance `instance` of `n`: balanced blocks, as the graph's.
int rank_of(int instance, int n, int ranks) {
  return static_cast<int>(static_cast<std::int64_t>(instance) * ranks / n);
}

// The plain MPI program's figure, on MPI_COMM_WORLD.
double raw_rate(int n, const settings& s, const std::vector<state>& ref) {
  int me = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::vector<int> mine;
  for (int i = 0; i < n; ++i)
    if (rank_of(i, n, p) == me) mine.push_back(i);
  std::uint64_t wrong = 0;
  std::vector<double> t;
  for (int k = 0; k < s.samples; ++k) {
    std::vector<state> ys(mine.size(), state{1, 0, 0});
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < s.iterations; ++it) {
      double local[3] = {0, 0, 0}, sum[3];
      for (std::size_t x = 0; x < mine.size(); ++x) {
        kernel(ys[x], mine[x], s.steps);
        for (std::size_t c = 0; c < 3; ++c) local[c] += ys[x][c];
      }
      MPI_Allreduce(local, sum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      // Every instance of the rank takes the sum (as each flow instance dequeues it).
      for (std::size_t x = 0; x < mine.size(); ++x)
        wrong += !close(sum, ref[static_cast<std::size_t>(it)]);
    }
    t.push_back(
        mpi_slowest(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  std::uint64_t all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (all != 0)
    throw std::runtime_error("flow-chemistry (mpi-raw): " + std::to_string(all) +
                             " reduced sums differ from the sequential reference");
  return s.iterations / median(std::move(t));
}
#endif

int run_flow_chemistry(const invocation& inv) {
  const bool quick = inv.opts.quick;
  const int n = static_cast<int>(count_param(inv.opts, "instances", 16, 1, 1 << 20));
  settings s;
  s.iterations =
      static_cast<int>(count_param(inv.opts, "iterations", quick ? 300 : 3000, 1, 1 << 28));
  s.steps = static_cast<int>(count_param(inv.opts, "steps", 8, 1, 1 << 20));
  s.samples = static_cast<int>(count_param(inv.opts, "samples", quick ? 1 : 5, 1, 1001));
  const std::vector<state> ref = reference(n, s);
  sized_spec spec;
  spec.metric = "iterations_per_s";
  spec.better = "higher";
  spec.sizes = {static_cast<std::size_t>(n)};
  spec.rounds = rounds_param(inv.opts);
  if (!inv.opts.raw_mpi_only && cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    spec.launch.ranks = spec.processes = threads_run_ranks(inv);
  spec.mine = [&](cairn::world& w, std::size_t) { return cairn_rate(w, n, s, ref); };
#if CAIRN_BENCH_HAVE_MPI
  spec.raw = [&](std::size_t) { return raw_rate(n, s, ref); };
#endif
  return run_sized(inv, spec);
}

const param_registrar params{
    "flow-chemistry",
    {{"instances", "N, instances over all ranks (the rows' size)", "16"},
     {"iterations", "iterations per run (kernel + all-reduce)", "3000, 300 with --quick"},
     {"steps", "implicit-Euler steps of the kernel per iteration", "8"},
     {"samples", "timed runs per round (the median is the round's figure)", "5, 1 with --quick"},
     {"rounds", "alternating rounds of cairn and the baseline", "3, 1 with --quick"}}};

const registrar reg{{"flow-chemistry",
                     "Aspen Fig. 8 shape: N stiff-ODE instances + an all-reduce per iteration, "
                     "flow graph vs plain MPI (iterations/s; size = instances)",
                     run_flow_chemistry}};

}  // namespace

}  // namespace cairn::bench
