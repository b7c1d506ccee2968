// `cairn-bench fft2d` (HPF/MPI section 3.2): a stream of N x N complex datasets through a 2-D
// FFT. cairn's figure is the two-task pipeline — task A (first half of the ranks) does the row
// FFTs on (BLOCK,*) and sends each dataset to task B, which does the column FFTs on (*,BLOCK)
// (persistent transfer) — while A already works on the next dataset. The baseline in the same
// run is the pure data-parallel version: all ranks do row FFTs on (BLOCK,*), redistribute to
// (*,BLOCK) (the transpose), column FFTs. Figure: time per dataset (throughput), N = 64 ...
// 1024 (--quick: 64, 256). FFTW does the 1-D FFTs; the first dataset of each version is
// checked against a sequential 2-D FFT.
#include <cmath>
#include <complex>
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


cplx input(std::int64_t i, std::int64_t j, int dataset) {
  const double x = static_cast<double>(i) * 0.37 + static_cast<double>(j) * 0.11 + dataset;
  return {std::sin(x), std::cos(1.3 * x)};
}

// In-place 1-D FFTs of length n: `count` rows of a row-major block (stride 1, distance n), or
// `count` columns of a row-major n x count block (stride count, distance 1).
struct fft_batch {
  fftw_plan plan = nullptr;
  fft_batch(cplx* data, int n, int count, bool columns) {
    if (count == 0 || n == 0) return;
    std::lock_guard lock(fftw_planner_lock());
    auto* d = reinterpret_cast<fftw_complex*>(data);
    plan = columns ? fftw_plan_many_dft(1, &n, count, d, nullptr, count, 1, d, nullptr, count, 1, FFTW_FORWARD, FFTW_ESTIMATE)
                   : fftw_plan_many_dft(1, &n, count, d, nullptr, 1, n, d, nullptr, 1, n, FFTW_FORWARD, FFTW_ESTIMATE);
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

// The sequential 2-D FFT of dataset 0.
std::vector<cplx> reference(std::int64_t n) {
  std::vector<cplx> r(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) r[static_cast<std::size_t>(i * n + j)] = input(i, j, 0);
  std::lock_guard lock(fftw_planner_lock());
  auto* d = reinterpret_cast<fftw_complex*>(r.data());
  fftw_plan p = fftw_plan_dft_2d(static_cast<int>(n), static_cast<int>(n), d, d, FFTW_FORWARD, FFTW_ESTIMATE);
  fftw_execute(p);
  fftw_destroy_plan(p);
  return r;
}

void check(cairn::darray<cplx, 2>& b, const std::vector<cplx>& ref, std::int64_t n, const char* who) {
  double worst = 0;
  b.for_each([&](const auto& g, cplx& v) { worst = std::max(worst, std::abs(v - ref[static_cast<std::size_t>(g[0] * n + g[1])])); });
  if (worst > 1e-8 * static_cast<double>(n * n))
    throw std::runtime_error(std::string("fft2d (") + who + "): error " + std::to_string(worst) + " at N = " + std::to_string(n));
}

void fill(cairn::darray<cplx, 2>& a, int dataset) {
  a.fill([&](const auto& g) { return input(g[0], g[1], dataset); });
}

// Seconds per dataset of the data-parallel version (all ranks).
double data_parallel(cairn::world& w, std::int64_t n, int datasets, const std::vector<cplx>& ref) {
  const cairn::group all = w.group(cairn::ranks{0, w.size()});
  cairn::darray<cplx, 2> a(cairn::layout<2>(all, {n, n}, {dist::block, dist::replicated}, {w.size(), 1}));
  cairn::darray<cplx, 2> b(cairn::layout<2>(all, {n, n}, {dist::replicated, dist::block}, {1, w.size()}));
  const fft_batch rows(a.data(), static_cast<int>(n), static_cast<int>(a.local_shape()[0]), false);
  const fft_batch cols(b.data(), static_cast<int>(n), static_cast<int>(b.local_shape()[1]), true);
  auto one = [&](int d) {
    fill(a, d);
    rows.run();
    cairn::redistribute(a, b);
    cols.run();
  };
  one(0);
  check(b, ref, n, "data-parallel");
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int d = 0; d < datasets; ++d) one(d);
  w.barrier();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / datasets;
}

// Seconds per dataset of the two-task pipeline.
double pipeline(cairn::world& w, std::int64_t n, int datasets, const std::vector<cplx>& ref) {
  const int half = w.size() / 2;
  cairn::tasks t(w, {half, w.size() - half});
  const bool rows_task = t.task() == 0;
  cairn::darray<cplx, 2> x(rows_task
      ? cairn::layout<2>(t.my_group(), {n, n}, {dist::block, dist::replicated}, {half, 1})
      : cairn::layout<2>(t.my_group(), {n, n}, {dist::replicated, dist::block}, {1, w.size() - half}));
  const fft_batch fft(x.data(), static_cast<int>(n),
                      static_cast<int>(rows_task ? x.local_shape()[0] : x.local_shape()[1]), !rows_task);
  cairn::persistent_transfer link = rows_task ? t.send_init(x, 1) : t.recv_init(x, 0);
  auto one = [&](int d) {
    if (rows_task) {
      fill(x, d);
      fft.run();
      link.start();
      link.wait();
    } else {
      link.start();
      link.wait();
      fft.run();
    }
  };
  one(0);
  if (!rows_task) check(x, ref, n, "pipeline");
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int d = 0; d < datasets; ++d) one(d);
  w.barrier();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / datasets;
}

int run_fft2d(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // both versions are cairn's
  std::vector<std::int64_t> sizes = inv.opts.quick ? std::vector<std::int64_t>{64, 256}
                                                   : std::vector<std::int64_t>{64, 128, 256, 512, 1024};
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    if (w.size() < 2) throw std::runtime_error("fft2d needs at least 2 ranks (two tasks)");
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    for (const std::int64_t n : sizes) {
      const std::vector<cplx> ref = reference(n);
      const int datasets = static_cast<int>(std::max<std::int64_t>(4, (inv.opts.quick ? 1 << 20 : 1 << 23) / (n * n)));
      std::vector<double> pipe, par;
      for (int round = 0; round < (inv.opts.quick ? 1 : 3); ++round) {
        pipe.push_back(pipeline(w, n, datasets, ref));
        par.push_back(data_parallel(w, n, datasets, ref));
      }
      if (rep)
        rep->add(row{"fft2d", std::string(to_string(w.engine())), w.size(), static_cast<std::size_t>(n * n * 16),
                     "dataset_us", "lower", median(pipe) * 1e6, "data-parallel", median(par) * 1e6});
    }
  });
}
#else
int run_fft2d(const invocation&) {
  note("fft2d: this cairn-bench was built without FFTW");
  return 2;
}
#endif

const registrar reg{{"fft2d", "HPF/MPI 2-D FFT: two-task pipeline vs data-parallel, time per dataset", run_fft2d}};

}  // namespace

}  // namespace cairn::bench
