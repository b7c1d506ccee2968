// `cairn-bench fft2d` (HPF/MPI section 3.2): a stream of N x N complex datasets through a 2-D
// FFT. cairn's figure is the two-task pipeline — task A (first half of the ranks) does the row
// FFTs on (BLOCK,*) and sends each dataset to task B, which does the column FFTs on (*,BLOCK).
// It is double-buffered: each task has two arrays, each with its persistent transfer
// (send_init/recv_init, tag = buffer), so A transforms dataset i+1 while dataset i is in flight,
// and B receives dataset i+1 while it transforms dataset i. The baseline in the same run is the
// pure data-parallel version: all ranks do row FFTs on (BLOCK,*), redistribute to (*,BLOCK)
// (the transpose), column FFTs. Figure: time per dataset (1 / throughput), N = 64 ... 1024
// (--quick: 64, 256; --sizes=a-b keeps the N whose dataset size N²·16 B is in [a, b]). Both
// versions use the same FFTW_MEASURE plans (rows: stride 1; columns: FFTW's advanced interface on
// the row-major local block) and get each dataset by copying one of two precomputed input blocks
// (so producing the input costs the same memcpy in both, and the timing is not dominated by
// sin/cos). Verified: the first two datasets (both buffers) of each version are checked against a
// sequential 2-D FFT (FFTW). CAIRN_FFT2D_DEBUG=1 prints, per rank of the pipeline, its time per
// dataset in FFTs, input copy and transfer start/test/wait.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"
#include "fftw_lock.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_FFTW
#include <fftw3.h>
#endif

namespace cairn::bench {

namespace {

#if CAIRN_BENCH_HAVE_FFTW
using cplx = std::complex<double>;
using arr = cairn::darray<cplx, 2>;

cplx input(std::int64_t i, std::int64_t j, int dataset) {
  const double x = static_cast<double>(i) * 0.37 + static_cast<double>(j) * 0.11 + dataset;
  return {std::sin(x), std::cos(1.3 * x)};
}

// In-place 1-D FFTs of length n: `count` rows of a row-major block (stride 1, distance n), or
// `count` columns of a row-major n x count block (stride count, distance 1). FFTW_MEASURE
// (planned before the data is written: measuring overwrites the array).
struct fft_batch {
  fftw_plan plan = nullptr;
  fft_batch(cplx* data, int n, int count, bool columns) {
    if (count == 0 || n == 0) return;
    std::lock_guard lock(fftw_planner_lock());
    auto* d = reinterpret_cast<fftw_complex*>(data);
    plan = columns ? fftw_plan_many_dft(1, &n, count, d, nullptr, count, 1, d, nullptr, count, 1,
                                        FFTW_FORWARD, FFTW_MEASURE)
                   : fftw_plan_many_dft(1, &n, count, d, nullptr, 1, n, d, nullptr, 1, n,
                                        FFTW_FORWARD, FFTW_MEASURE);
    if (!plan) throw std::runtime_error("fft2d: FFTW could not plan");
  }
  fft_batch(const fft_batch&) = delete;
  fft_batch& operator=(const fft_batch&) = delete;
  ~fft_batch() {
    if (!plan) return;
    std::lock_guard lock(fftw_planner_lock());
    fftw_destroy_plan(plan);
  }
  void run() const {
    if (plan) fftw_execute(plan);
  }
};

// The sequential 2-D FFT of `dataset`.
std::vector<cplx> reference(std::int64_t n, int dataset) {
  std::vector<cplx> r(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      r[static_cast<std::size_t>(i * n + j)] = input(i, j, dataset);
  std::lock_guard lock(fftw_planner_lock());
  auto* d = reinterpret_cast<fftw_complex*>(r.data());
  fftw_plan p =
      fftw_plan_dft_2d(static_cast<int>(n), static_cast<int>(n), d, d, FFTW_FORWARD, FFTW_ESTIMATE);
  fftw_execute(p);
  fftw_destroy_plan(p);
  return r;
}

using refs = std::array<std::vector<cplx>, 2>;

void check(arr& b, const std::vector<cplx>& ref, std::int64_t n, const char* who, int dataset) {
  double worst = 0;
  b.for_each([&](const auto& g, cplx& v) {
    worst = std::max(worst, std::abs(v - ref[static_cast<std::size_t>(g[0] * n + g[1])]));
  });
  if (worst > 1e-8 * static_cast<double>(n * n))
    throw std::runtime_error(std::string("fft2d (") + who + "): error " + std::to_string(worst) +
                             " at N = " + std::to_string(n) + ", dataset " +
                             std::to_string(dataset));
}

// The two input datasets of a layout, precomputed; dataset d of the stream is a copy of d % 2.
std::array<std::vector<cplx>, 2> inputs(const cairn::layout<2>& l) {
  std::array<std::vector<cplx>, 2> in;
  for (int k = 0; k < 2; ++k) {
    arr a(l);
    a.fill([&](const auto& g) { return input(g[0], g[1], k); });
    in[static_cast<std::size_t>(k)].assign(a.local().begin(), a.local().end());
  }
  return in;
}

void load(arr& a, const std::vector<cplx>& from) {
  std::copy(from.begin(), from.end(), a.local().begin());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds per dataset of the data-parallel version (all ranks).
double data_parallel(cairn::world& w, std::int64_t n, int datasets, const refs& ref) {
  const cairn::group all = w.group(cairn::ranks{0, w.size()});
  const cairn::layout<2> rows_layout(all, {n, n}, {dist::block, dist::replicated}, {w.size(), 1});
  arr a(rows_layout);
  arr b(cairn::layout<2>(all, {n, n}, {dist::replicated, dist::block}, {1, w.size()}));
  const fft_batch rows(a.data(), static_cast<int>(n), static_cast<int>(a.local_shape()[0]), false);
  const fft_batch cols(b.data(), static_cast<int>(n), static_cast<int>(b.local_shape()[1]), true);
  const auto in = inputs(rows_layout);
  auto one = [&](int d) {
    load(a, in[static_cast<std::size_t>(d % 2)]);
    rows.run();
    cairn::redistribute(a, b);
    cols.run();
  };
  for (int d = 0; d < 2; ++d) {
    one(d);
    check(b, ref[static_cast<std::size_t>(d)], n, "data-parallel", d);
  }
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int d = 0; d < datasets; ++d) one(d);
  w.barrier();
  return seconds_since(t0) / datasets;
}

// Seconds per dataset of the double-buffered two-task pipeline.
double pipeline(cairn::world& w, std::int64_t n, int datasets, const refs& ref) {
  const int half = w.size() / 2;
  cairn::tasks t(w, {half, w.size() - half});
  const bool rows_task = t.task() == 0;
  const cairn::layout<2> l =
      rows_task ? cairn::layout<2>(t.my_group(), {n, n}, {dist::block, dist::replicated}, {half, 1})
                : cairn::layout<2>(t.my_group(), {n, n}, {dist::replicated, dist::block},
                                   {1, w.size() - half});
  std::array<arr, 2> x{arr(l), arr(l)};
  std::array<std::optional<fft_batch>, 2> fft;
  std::array<cairn::persistent_transfer, 2> link;
  for (std::size_t k = 0; k < 2; ++k) {
    fft[k].emplace(x[k].data(), static_cast<int>(n),
                   static_cast<int>(rows_task ? x[k].local_shape()[0] : x[k].local_shape()[1]),
                   !rows_task);
    link[k] = rows_task ? t.send_init(x[k], 1, static_cast<int>(k))
                        : t.recv_init(x[k], 0, static_cast<int>(k));
  }
  std::array<std::vector<cplx>, 2> in;
  if (rows_task) in = inputs(l);
  // Dataset d uses buffer d % 2 on both tasks.
  double t_fft = 0, t_comm = 0, t_copy = 0;
  using clk = std::chrono::steady_clock;
  auto stream = [&](int count, auto&& after_b) {
    t_fft = t_comm = t_copy = 0;
    if (rows_task) {
      for (int d = 0; d < count; ++d) {
        const auto k = static_cast<std::size_t>(d % 2);
        auto t1 = clk::now();
        link[k].wait();  // dataset d - 2 has left this buffer
        t_comm += seconds_since(t1);
        t1 = clk::now();
        load(x[k], in[k]);
        t_copy += seconds_since(t1);
        t1 = clk::now();
        link[1 - k].test();  // drive dataset d - 1 between the steps
        t_comm += seconds_since(t1);
        t1 = clk::now();
        fft[k]->run();
        t_fft += seconds_since(t1);
        t1 = clk::now();
        link[k].start();
        link[1 - k].test();
        t_comm += seconds_since(t1);
      }
      const auto t1 = clk::now();
      link[0].wait();
      link[1].wait();
      t_comm += seconds_since(t1);
    } else {
      link[0].start();
      for (int d = 0; d < count; ++d) {
        const auto k = static_cast<std::size_t>(d % 2);
        auto t1 = clk::now();
        if (d + 1 < count) link[1 - k].start();  // the other buffer is free: receive d + 1 into it
        link[k].wait();
        t_comm += seconds_since(t1);
        t1 = clk::now();
        fft[k]->run();
        t_fft += seconds_since(t1);
        after_b(d, x[k]);
      }
    }
  };
  stream(2, [&](int d, arr& b) { check(b, ref[static_cast<std::size_t>(d)], n, "pipeline", d); });
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  stream(datasets, [](int, arr&) {});
  w.barrier();
  const double per = seconds_since(t0) / datasets;
  if (std::getenv("CAIRN_FFT2D_DEBUG"))
    note("fft2d N=" + std::to_string(n) + " rank " + std::to_string(w.rank()) +
         (rows_task ? " A" : " B") + ": fft " + std::to_string(t_fft / datasets * 1e6) +
         " us, copy " + std::to_string(t_copy / datasets * 1e6) + " us, comm " +
         std::to_string(t_comm / datasets * 1e6) + " us per dataset; total " +
         std::to_string(per * 1e6));
  return per;
}

int run_fft2d(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // both versions are cairn's
  std::vector<std::int64_t> sizes = inv.opts.quick
                                        ? std::vector<std::int64_t>{64, 256}
                                        : std::vector<std::int64_t>{64, 128, 256, 512, 1024};
  if (inv.opts.sizes_given)  // --sizes=a-b keeps the N whose dataset (N² · 16 bytes) is in [a, b]
    std::erase_if(sizes, [&](std::int64_t n) {
      const auto bytes = static_cast<std::size_t>(n * n * 16);
      return bytes < inv.opts.min_size || bytes > inv.opts.max_size;
    });
  if (inv.opts.params.contains("N")) {  // --N=a,b: exactly these
    sizes.clear();
    for (const auto n : count_list_param(inv.opts, "N", {}, 2, 1 << 14))
      sizes.push_back(static_cast<std::int64_t>(n));
  } else {
    std::string t = "[";
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (i) t += ',';
      t += std::to_string(sizes[i]);
    }
    record_param("N", t + "]");
  }
  const int rounds =
      static_cast<int>(count_param(inv.opts, "rounds", inv.opts.quick ? 1 : 5, 1, 1001));
  const std::uint64_t points =
      count_param(inv.opts, "points", inv.opts.quick ? 1 << 20 : 1 << 23, 1, 1ULL << 34);
  const std::uint64_t min_datasets =
      count_param(inv.opts, "min-datasets", inv.opts.quick ? 8 : 16, 1, 1 << 20);
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    if (w.size() < 2) throw std::runtime_error("fft2d needs at least 2 ranks (two tasks)");
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    for (const std::int64_t n : sizes) {
      const refs ref{reference(n, 0), reference(n, 1)};
      const int datasets = static_cast<int>(
          std::max<std::uint64_t>(min_datasets, points / static_cast<std::uint64_t>(n * n)));
      std::vector<double> pipe, par;
      for (int round = 0; round < rounds; ++round) {  // alternated: drifting load hits both alike
        pipe.push_back(pipeline(w, n, datasets, ref));
        par.push_back(data_parallel(w, n, datasets, ref));
      }
      if (rep)
        rep->add(row{"fft2d", std::string(to_string(w.engine())), w.size(),
                     static_cast<std::size_t>(n * n * 16), "dataset_us", "lower",
                     median(pipe) * 1e6, "data-parallel", median(par) * 1e6});
    }
  });
}
#else
int run_fft2d(const invocation&) {
  note("fft2d: this cairn-bench was built without FFTW");
  return 2;
}
#endif

const param_registrar params{
    "fft2d",
    {{"N", "image edges N (N^2 complex points), comma-separated",
      "64,128,256,512,1024; 64,256 with --quick"},
     {"points", "points streamed per figure: datasets = max(min-datasets, points / N^2)",
      "2^23, 2^20 with --quick"},
     {"min-datasets", "the fewest datasets per figure", "16, 8 with --quick"},
     {"rounds", "alternating rounds of both versions (the median is reported)",
      "5, 1 with --quick"}}};

const registrar reg{
    {"fft2d", "HPF/MPI 2-D FFT: two-task pipeline vs data-parallel, time per dataset", run_fft2d}};

}  // namespace

}  // namespace cairn::bench
