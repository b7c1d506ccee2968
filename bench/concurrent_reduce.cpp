// `cairn-bench concurrent-reduce`: Aspen's Figure 12 — the Figure 5 pair of overlapping
// reductions on 4 ranks: r1 sums the vectors of ranks {0, 1, 2, 3} for receivers {0, 2}, r2
// multiplies those of {1, 2} for receiver 3 (which contributes nothing). cairn starts both
// generalized reductions back to back and waits for both; the baseline is the MPI style of the
// paper, in the same run: one communicator per set, a blocking reduce then a blocking bcast per
// reduction, one after the other. "mpi-style" does that with cairn groups and cairn's blocking
// reduce and bcast (both engines); under mpirun a second row, "mpi-raw", does it with MPI
// communicators, MPI_Reduce and MPI_Bcast. cairn runs the default algorithm (on one node: the
// node board, like the mpi-style side's group collectives; across emulated nodes, CAIRN_NODES:
// section 3.1's reduction inside each node first) and, in the "-butterfly" rows, section 3.2's
// messages. Time per pair of reductions, slowest rank, median.
// The two sides of a row run the same inputs and operations into their own outputs, sample by
// sample in alternating order (on a loaded machine both see the same load), and both are
// verified before and after timing.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr std::string_view metric = "time_us";
constexpr std::string_view better = "lower";

// Exact inputs: r1 sums r + i (small integers), r2 multiplies 2 + i % 3 (rank 1) by 0.5
// (rank 2), which is exactly 1 + (i % 3) / 2.
double r1_input(int rank, std::size_t i) {
  return static_cast<double>(rank) + static_cast<double>(i % 1024);
}
double r2_input(int rank, std::size_t i) {
  return rank == 1 ? 2.0 + static_cast<double>(i % 3) : 0.5;
}

void check(const std::vector<double>& out, bool sum, const std::string& what) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double want =
        sum ? 6.0 + 4.0 * static_cast<double>(i % 1024) : 1.0 + static_cast<double>(i % 3) / 2;
    if (out[i] != want)
      throw std::runtime_error("concurrent-reduce (" + what + "): element " + std::to_string(i) +
                               " is " + std::to_string(out[i]) + ", expected " +
                               std::to_string(want));
  }
}

// The buffers of one rank for one size: inputs of both reductions, outputs where received.
struct buffers {
  std::vector<double> in1, in2, out1, out2;
  buffers(int me, std::size_t n) {
    in1.resize(n);
    for (std::size_t i = 0; i < n; ++i) in1[i] = r1_input(me, i);
    if (me == 1 || me == 2) {
      in2.resize(n);
      for (std::size_t i = 0; i < n; ++i) in2[i] = r2_input(me, i);
    }
    out1.assign(me == 0 || me == 2 ? n : 0, -1.0);
    out2.assign(me == 3 ? n : 0, -1.0);
  }
  void clear() {
    std::fill(out1.begin(), out1.end(), -1.0);
    std::fill(out2.begin(), out2.end(), -1.0);
  }
  void verify(int me, const std::string& who) const {
    if (me == 0 || me == 2) check(out1, true, who + ", sum on rank " + std::to_string(me));
    if (me == 3) check(out2, false, who + ", product on rank 3");
  }
};

// Iterations per timed sample: about 2 MB moved, between 1 and 50. Rank 1 only sends, in both
// versions, so it runs ahead of the others by up to a sample's iterations; its early messages
// wait in the receivers' unexpected queues, which a receive from another rank scans. Long
// samples (2000 iterations: 3-7x the time per pair measured, both sides) measure those queues
// rather than the reductions; more, shorter samples instead.
int iterations_for(std::size_t bytes) {
  return static_cast<int>(
      std::clamp<std::size_t>((std::size_t{2} << 20) / std::max<std::size_t>(bytes, 1), 1, 50));
}

// Median seconds per pair of `a` and of `b` on the slowest of ranks 0-3 (all of them call it):
// warm-up, then samples alternating a, b / b, a, each after a barrier.
template <class A, class B, class Barrier, class Slowest>
std::pair<double, double> time_both(const options& o, std::size_t bytes, A&& a, B&& b,
                                    Barrier&& barrier, Slowest&& slowest) {
  const int samples = static_cast<int>(count_param(o, "samples", o.quick ? 15 : 61, 1, 10001));
  const int iters = iterations_for(bytes);
  a(2);
  b(2);
  std::vector<double> ta, tb;
  auto timed = [&](auto& body, std::vector<double>& into) {
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    body(iters);
    into.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                   iters);
  };
  for (int i = 0; i < samples; ++i) {
    if (i % 2 == 0) {
      timed(a, ta);
      timed(b, tb);
    } else {
      timed(b, tb);
      timed(a, ta);
    }
  }
  return {slowest(median(std::move(ta))), slowest(median(std::move(tb)))};
}

int run_concurrent_reduce(const invocation& inv) {
  if (inv.opts.raw_mpi_only) {
    note(std::string(inv.name) + ": the raw-MPI baseline runs inline under mpirun only");
    return 2;
  }
  std::vector<std::size_t> sizes = size_ladder(inv.opts);
  std::erase_if(sizes, [](std::size_t s) { return s % sizeof(double) != 0; });
  cairn::launch_options lo;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    lo.ranks = 4;  // the figure's 4 ranks
  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    if (w.size() < 4) {
      if (w.rank() == 0) note(std::string(inv.name) + ": needs 4 ranks (mpirun -np 4)");
      throw std::runtime_error("concurrent-reduce needs at least 4 ranks");
    }
    const int me = w.rank();
    auto quad = w.group(cairn::ranks{0, 4});
    if (me >= 4) return;  // ranks beyond the figure's four stay out
    auto r1_receivers = w.group(std::vector<int>{0, 2});
    auto r2_set = w.group(std::vector<int>{1, 2, 3});  // MPI style: receiver 3 joins the reduce
    std::optional<report> rep;
    if (me == 0) rep.emplace(inv.opts.json);
    auto slowest = [&](double x) { return bench::slowest(quad, x); };
    auto barrier = [&] { quad.barrier(); };
    for (const std::size_t size : sizes) {
      const std::size_t n = size / sizeof(double);
      buffers mine(me, n), style(me, n);  // the same inputs, each side its own outputs
      // cairn: both generalized reductions in flight at once, with the default algorithm (the
      // node board on one node) or forced onto messages (the butterfly).
      cairn::generalized_reduce_options opt;
      auto concurrent = [&](int iters) {
        for (int i = 0; i < iters; ++i) {
          cairn::request r1 =
              w.ireduce({0, 1, 2, 3}, {0, 2}, mine.in1, mine.out1, cairn::plus{}, opt);
          cairn::request r2 =
              me == 0 ? cairn::request{}
                      : w.ireduce({1, 2}, {3}, mine.in2, mine.out2, cairn::multiplies{}, opt);
          r1.wait();
          r2.wait();
        }
      };
      // MPI style with cairn groups: reduce to 0 then bcast to {0, 2}; reduce {1, 2, 3} to 3 (3
      // contributes the identity). Each call blocks, one after the other.
      std::vector<double> ones(me == 3 ? n : 0, 1.0), scratch(n);
      auto mpi_style = [&](int iters) {
        for (int i = 0; i < iters; ++i) {
          quad.reduce(style.in1,
                      me == 0 ? std::span<double>(style.out1) : std::span<double>(scratch).first(0),
                      0, cairn::plus{});
          if (me == 0 || me == 2) r1_receivers.bcast(style.out1, 0);
          if (me >= 1) {
            const std::vector<double>& in = me == 3 ? ones : style.in2;
            r2_set.reduce(
                in, me == 3 ? std::span<double>(style.out2) : std::span<double>(scratch).first(0),
                2, cairn::multiplies{});
          }
        }
      };
      mpi_style(1);
      style.verify(me, "mpi-style");
      for (const auto alg : {cairn::generalized_reduce_algorithm::automatic,
                             cairn::generalized_reduce_algorithm::butterfly}) {
        opt.algorithm = alg;
        const std::string name =
            std::string(inv.name) +
            (alg == cairn::generalized_reduce_algorithm::butterfly ? "-butterfly" : "");
        mine.clear();
        concurrent(1);
        mine.verify(me, name);
        mine.clear();
        style.clear();
        const auto [mine_s, style_s] =
            time_both(inv.opts, size, concurrent, mpi_style, barrier, slowest);
        mine.verify(me, name + ", after timing");
        style.verify(me, "mpi-style, after timing");
        if (rep)
          rep->add(row{name, w.engine() == cairn::engine::mpi ? "mpi" : "threads", 4, size,
                       std::string(metric), std::string(better), mine_s * 1e6, "mpi-style",
                       style_s * 1e6});
      }
      opt.algorithm = cairn::generalized_reduce_algorithm::automatic;
#if CAIRN_BENCH_HAVE_MPI
      if (w.engine() == cairn::engine::mpi) {
        // Raw MPI: communicators for {0..3}, {0, 2}, {1, 2, 3}; blocking reduce then bcast.
        MPI_Comm c_quad, c_recv, c_r2;
        MPI_Comm_split(MPI_COMM_WORLD, me < 4 ? 0 : MPI_UNDEFINED, me, &c_quad);
        MPI_Comm_split(c_quad, me == 0 || me == 2 ? 0 : MPI_UNDEFINED, me, &c_recv);
        MPI_Comm_split(c_quad, me >= 1 ? 0 : MPI_UNDEFINED, me, &c_r2);
        const int cnt = static_cast<int>(n);
        auto raw = [&](int iters) {
          for (int i = 0; i < iters; ++i) {
            MPI_Reduce(style.in1.data(), me == 0 ? style.out1.data() : nullptr, cnt, MPI_DOUBLE,
                       MPI_SUM, 0, c_quad);
            if (me == 0 || me == 2) MPI_Bcast(style.out1.data(), cnt, MPI_DOUBLE, 0, c_recv);
            if (me >= 1)
              MPI_Reduce(me == 3 ? ones.data() : style.in2.data(),
                         me == 3 ? style.out2.data() : nullptr, cnt, MPI_DOUBLE, MPI_PROD, 2, c_r2);
          }
        };
        style.clear();
        raw(1);
        style.verify(me, "mpi-raw");
        mine.clear();
        style.clear();
        // Both barriers are MPI's here, so that the two sides start their samples alike.
        const auto [mine2, raw_s] = time_both(
            inv.opts, size, concurrent, raw, [&] { MPI_Barrier(c_quad); }, slowest);
        mine.verify(me, "cairn, after timing");
        style.verify(me, "mpi-raw, after timing");
        MPI_Comm_free(&c_quad);
        if (c_recv != MPI_COMM_NULL) MPI_Comm_free(&c_recv);
        if (c_r2 != MPI_COMM_NULL) MPI_Comm_free(&c_r2);
        if (rep)
          rep->add(row{std::string(inv.name), "mpi", 4, size, std::string(metric),
                       std::string(better), mine2 * 1e6, "mpi-raw", raw_s * 1e6});
      }
#endif
    }
  });
}

const param_registrar params{
    "concurrent-reduce",
    {{"samples", "timed samples per figure, alternating (the median is reported)",
      "61, 15 with --quick"}}};

const registrar reg{
    {"concurrent-reduce",
     "Aspen Fig. 12: two overlapping reductions, cairn concurrent vs MPI-style reduce+bcast (us)",
     run_concurrent_reduce}};

}  // namespace

}  // namespace cairn::bench
