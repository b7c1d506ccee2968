// `cairn-bench fft3d` (the LibNBC paper's case study): a 3-D FFT of an N³ complex box held in
// xy-slabs (rank r owns planes z ∈ [r·b, (r+1)·b), b = N / ranks). Each plane gets a 2-D FFT
// (FFTW), the box is transposed so that every rank owns all z for its b rows of y, and 1-D FFTs
// along z finish it. Two transposes, same FFTs, same packing:
//   blocking    all planes' 2-D FFTs, then one alltoall of the whole slab
//   pipelined   after each plane's 2-D FFT, an ialltoall of that plane starts (from place: a
//               plane needs no packing); it travels while the next plane is transformed
//               (pending ones are tested between planes)
// Figure: time per transform (slowest rank, median of repetitions); cairn = pipelined,
// baseline = blocking, in the same run. A note gives the breakdown of both (FFT compute,
// pack/unpack copies, time inside alltoall/wait). Verified: rank 0 compares every element with
// a sequential 3-D FFT of the whole box (FFTW).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
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
using clock_type = std::chrono::steady_clock;


double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

cplx input(std::int64_t z, std::int64_t y, std::int64_t x) {
  const double v = static_cast<double>(z) * 0.71 + static_cast<double>(y) * 0.37 + static_cast<double>(x) * 0.13;
  return {std::sin(v), std::cos(1.7 * v)};
}

// FFTW-allocated (SIMD-aligned) storage of complex doubles.
struct buffer {
  cplx* p = nullptr;
  std::size_t n = 0;
  explicit buffer(std::size_t count) : p(reinterpret_cast<cplx*>(fftw_malloc(sizeof(cplx) * std::max<std::size_t>(1, count)))), n(count) {
    if (!p) throw std::bad_alloc();
  }
  ~buffer() { fftw_free(p); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  std::span<cplx> all() { return {p, n}; }
  std::span<cplx> part(std::size_t off, std::size_t len) { return {p + off, len}; }
};

struct breakdown {
  double fft = 0, copy = 0, comm = 0, total = 0;
};

// One distributed transform; `pipelined` picks the transpose. Returns this rank's times.
class fft3d {
 public:
  fft3d(cairn::world& w, int n)
      : w_(w), n_(n), p_(w.size()), b_(n / w.size()), slab_(static_cast<std::size_t>(b_) * n * n),
        a_(slab_), send_(slab_), recv_(slab_), c_(slab_) {
    std::lock_guard lock(fftw_planner_lock());
    auto* d = reinterpret_cast<fftw_complex*>(a_.p);
    plane_ = fftw_plan_dft_2d(n, n, d, d, FFTW_FORWARD, FFTW_ESTIMATE);
    auto* c = reinterpret_cast<fftw_complex*>(c_.p);
    const int len = n;
    lines_ = fftw_plan_many_dft(1, &len, b_ * n, c, nullptr, 1, n, c, nullptr, 1, n, FFTW_FORWARD, FFTW_ESTIMATE);
  }
  ~fft3d() {
    std::lock_guard lock(fftw_planner_lock());
    fftw_destroy_plan(plane_);
    fftw_destroy_plan(lines_);
  }

  void fill() {
    const std::int64_t z0 = static_cast<std::int64_t>(w_.rank()) * b_;
    for (int zl = 0; zl < b_; ++zl)
      for (int y = 0; y < n_; ++y)
        for (int x = 0; x < n_; ++x) a_.p[idx(zl, y, x)] = input(z0 + zl, y, x);
  }

  breakdown run(bool pipelined) {
    breakdown t;
    const auto t0 = clock_type::now();
    const std::size_t plane = static_cast<std::size_t>(n_) * n_, block = static_cast<std::size_t>(b_) * n_;
    if (!pipelined) {
      for (int zl = 0; zl < b_; ++zl) {
        auto t1 = clock_type::now();
        fftw_execute_dft(plane_, fc(a_.p + zl * plane), fc(a_.p + zl * plane));
        t.fft += since(t1);
      }
      auto t1 = clock_type::now();
      // send_[d][zl][yl][x]: rows of y owned by d, for every local plane.
      for (int d = 0; d < p_; ++d)
        for (int zl = 0; zl < b_; ++zl)
          std::memcpy(send_.p + (static_cast<std::size_t>(d) * b_ + zl) * block,
                      a_.p + zl * plane + static_cast<std::size_t>(d) * block, block * sizeof(cplx));
      t.copy += since(t1);
      t1 = clock_type::now();
      w_.alltoall(send_.all(), recv_.all());
      t.comm += since(t1);
      t1 = clock_type::now();
      // recv_[s][zl][yl][x] holds z = s·b + zl.
      for (int s = 0; s < p_; ++s)
        for (int zl = 0; zl < b_; ++zl) unpack(recv_.p + (static_cast<std::size_t>(s) * b_ + zl) * block, s * b_ + zl);
      t.copy += since(t1);
    } else {
      // Plane zl travels in send_/recv_ slice zl (p blocks of b·N each), one ialltoall per plane.
      std::vector<cairn::request> pending(static_cast<std::size_t>(b_));
      const std::size_t slice = static_cast<std::size_t>(p_) * block;
      for (int zl = 0; zl < b_; ++zl) {
        auto t1 = clock_type::now();
        fftw_execute_dft(plane_, fc(a_.p + zl * plane), fc(a_.p + zl * plane));
        t.fft += since(t1);
        // A plane is [d][yl][x] already: it goes from place (the blocking version must pack).
        t1 = clock_type::now();
        pending[static_cast<std::size_t>(zl)] = w_.ialltoall(a_.part(zl * plane, plane), recv_.part(zl * slice, slice));
        for (int k = 0; k <= zl; ++k) pending[static_cast<std::size_t>(k)].test();  // progress the earlier planes
        t.comm += since(t1);
      }
      auto t1 = clock_type::now();
      for (auto& r : pending) r.wait();
      t.comm += since(t1);
      t1 = clock_type::now();
      for (int zl = 0; zl < b_; ++zl)
        for (int s = 0; s < p_; ++s) unpack(recv_.p + zl * slice + static_cast<std::size_t>(s) * block, s * b_ + zl);
      t.copy += since(t1);
    }
    auto t1 = clock_type::now();
    fftw_execute(lines_);
    t.fft += since(t1);
    t.total = since(t0);
    return t;
  }

  // Rank 0 checks everything against a sequential 3-D FFT; the others send their part.
  void verify(const char* what) {
    if (w_.rank() != 0) {
      w_.send(c_.p, static_cast<std::int64_t>(slab_), 0, 77);
      return;
    }
    const std::size_t total = static_cast<std::size_t>(n_) * n_ * n_;
    buffer ref(total);
    for (int z = 0; z < n_; ++z)
      for (int y = 0; y < n_; ++y)
        for (int x = 0; x < n_; ++x) ref.p[(static_cast<std::size_t>(z) * n_ + y) * n_ + x] = input(z, y, x);
    {
      std::lock_guard lock(fftw_planner_lock());
      auto* d = reinterpret_cast<fftw_complex*>(ref.p);
      fftw_plan p3 = fftw_plan_dft_3d(n_, n_, n_, d, d, FFTW_FORWARD, FFTW_ESTIMATE);
      fftw_execute(p3);
      fftw_destroy_plan(p3);
    }
    buffer part(slab_);
    double worst = 0, scale = 0;
    for (int s = 0; s < p_; ++s) {
      const cplx* got = c_.p;
      if (s > 0) {
        w_.recv(part.p, static_cast<std::int64_t>(slab_), s, 77);
        got = part.p;
      }
      for (int yl = 0; yl < b_; ++yl)
        for (int x = 0; x < n_; ++x)
          for (int z = 0; z < n_; ++z) {
            const cplx want = ref.p[(static_cast<std::size_t>(z) * n_ + (s * b_ + yl)) * n_ + x];
            worst = std::max(worst, std::abs(got[(static_cast<std::size_t>(yl) * n_ + x) * n_ + z] - want));
            scale = std::max(scale, std::abs(want));
          }
    }
    if (!(worst <= 1e-9 * scale))
      throw std::runtime_error(std::string("fft3d (") + what + "): max error " + std::to_string(worst) +
                               " against the sequential FFT (scale " + std::to_string(scale) + ")");
  }

 private:
  std::size_t idx(int zl, int y, int x) const {
    return (static_cast<std::size_t>(zl) * n_ + y) * n_ + x;
  }
  static fftw_complex* fc(cplx* p) { return reinterpret_cast<fftw_complex*>(p); }
  // A [yl][x] block of plane z into C[yl][x][z].
  void unpack(const cplx* from, int z) {
    for (int yl = 0; yl < b_; ++yl)
      for (int x = 0; x < n_; ++x)
        c_.p[(static_cast<std::size_t>(yl) * n_ + x) * n_ + z] = from[static_cast<std::size_t>(yl) * n_ + x];
  }

  cairn::world& w_;
  int n_, p_, b_;
  std::size_t slab_;
  buffer a_, send_, recv_, c_;
  fftw_plan plane_ = nullptr, lines_ = nullptr;
};

breakdown slowest(cairn::world& w, const breakdown& t) {
  std::array<double, 4> mine{t.fft, t.copy, t.comm, t.total}, all{};
  w.allreduce(mine, all, cairn::max{});
  return {all[0], all[1], all[2], all[3]};
}

int run_fft3d(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is cairn's blocking transpose, same run
  const std::vector<int> sizes = inv.opts.quick ? std::vector<int>{64} : std::vector<int>{128, 256};
  const int reps = inv.opts.quick ? 3 : 5;
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    for (const int n : sizes) {
      if (n % w.size() != 0) {
        if (w.rank() == 0) note("fft3d: N = " + std::to_string(n) + " is not a multiple of the ranks; skipped");
        continue;
      }
      fft3d f(w, n);
      for (const bool pipelined : {false, true}) {  // verify both before timing
        f.fill();
        f.run(pipelined);
        f.verify(pipelined ? "pipelined" : "blocking");
      }
      std::vector<double> blk, pip;
      breakdown last_blk, last_pip;
      for (int r = 0; r < reps; ++r) {  // alternated, so drifting load hits both alike
        f.fill();
        w.barrier();
        last_blk = slowest(w, f.run(false));
        blk.push_back(last_blk.total);
        f.fill();
        w.barrier();
        last_pip = slowest(w, f.run(true));
        pip.push_back(last_pip.total);
      }
      if (!rep) continue;
      const std::size_t bytes = static_cast<std::size_t>(n) * n * n * sizeof(cplx);
      rep->add(row{"fft3d", std::string(to_string(w.engine())), w.size(), bytes, "transform_ms", "lower",
                   median(pip) * 1e3, "blocking-alltoall", median(blk) * 1e3});
      auto describe = [](const breakdown& b) {
        return "fft " + std::to_string(b.fft * 1e3) + " ms, copy " + std::to_string(b.copy * 1e3) +
               " ms, alltoall/wait " + std::to_string(b.comm * 1e3) + " ms";
      };
      note("fft3d N=" + std::to_string(n) + " blocking: " + describe(last_blk) + "; pipelined: " + describe(last_pip) +
           " (last repetition, slowest rank per part)");
    }
  });
}
#else
int run_fft3d(const invocation&) {
  note("fft3d: this cairn-bench was built without FFTW (scripts/install-deps installs libfftw3-dev)");
  return 2;
}
#endif

const registrar reg{{"fft3d",
                     "LibNBC 3-D FFT in xy-slabs: pipelined ialltoall per plane vs one blocking alltoall (ms per transform)",
                     run_fft3d}};

}  // namespace

}  // namespace cairn::bench
