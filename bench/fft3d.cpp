// `cairn-bench fft3d` (the LibNBC paper's case study): a 3-D FFT of an N³ complex box held in
// xy-slabs (rank r owns planes z ∈ [r·b, (r+1)·b), b = N / ranks). Each plane gets a 2-D FFT
// (FFTW), the box is transposed so that every rank owns all z for its b rows of y, and 1-D FFTs
// along z finish it. Both versions use the same FFT plans and the same receive layout
// R[z][yl][x] (z = source·b + plane): the z-FFTs run in place on it through FFTW's advanced
// interface (stride b·N, N·b lines), so nothing is unpacked. They differ in the transpose:
//   blocking    all planes' 2-D FFTs, then one alltoall of the whole slab; a destination's rows
//               are spread over the b planes, so the slab is packed first ([d][zl][yl][x])
//   pipelined   after each plane's 2-D FFT, an ialltoallv of that plane starts from place (a
//               plane is [d][yl][x] already) and lands at R's plane z = s·b + zl (receive
//               displacements); it travels while the next planes are transformed (the pending
//               ones are tested after each start)
// The plans are FFTW_MEASURE plans made once per N: rank 0 measures, its wisdom is broadcast,
// so every rank runs the same plans (ESTIMATE picks plans 5-10x slower for the 256² planes and
// the strided z lines on this machine). Tuning (environment): CAIRN_FFT3D_DEPTH=k keeps at most k
// ialltoallvs in flight (default: all); CAIRN_FFT3D_GROUP=g sends g planes per ialltoallv
// (default 1; g > 1 packs each group into [d][plane][yl][x] right after its FFTs, since a
// destination's rows of several planes are not contiguous, and tests between the planes).
// N = 128, 256 (--quick: 64; --sizes=a-b keeps the N of 32 ... 256 whose box N³·16 B is in [a, b]).
// Figure: time per transform (slowest rank, median of repetitions); cairn = pipelined,
// baseline = blocking, in the same run. A note gives the breakdown of both (2-D FFTs, z FFTs,
// pack copy, time inside alltoall / ialltoallv start+test+wait). Verified: rank 0 compares
// every element with a sequential 3-D FFT of the whole box (FFTW).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdlib>
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
  const double v =
      static_cast<double>(z) * 0.71 + static_cast<double>(y) * 0.37 + static_cast<double>(x) * 0.13;
  return {std::sin(v), std::cos(1.7 * v)};
}

// FFTW-allocated (SIMD-aligned) storage of complex doubles.
struct buffer {
  cplx* p = nullptr;
  std::size_t n = 0;
  explicit buffer(std::size_t count)
      : p(reinterpret_cast<cplx*>(fftw_malloc(sizeof(cplx) * std::max<std::size_t>(1, count)))),
        n(count) {
    if (!p) throw std::bad_alloc();
  }
  ~buffer() { fftw_free(p); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  std::span<cplx> all() { return {p, n}; }
  std::span<cplx> part(std::size_t off, std::size_t len) { return {p + off, len}; }
};

struct breakdown {
  double fft_xy = 0, fft_z = 0, copy = 0, comm = 0, total = 0;
};

// Every rank plans the same FFTs: rank 0 with FFTW_MEASURE, the others from its wisdom (on the
// threads engine the wisdom is process-wide already; importing it again is harmless).
template <class Plan>
void plan_everywhere(cairn::world& w, Plan&& plan) {
  std::string wisdom;
  if (w.rank() == 0) {
    std::lock_guard lock(fftw_planner_lock());
    plan();
    char* text = fftw_export_wisdom_to_string();
    if (text) {
      wisdom = text;
      fftw_free(text);
    }
  }
  std::array<std::uint64_t, 1> len{wisdom.size()};
  w.bcast(len, 0);
  wisdom.resize(len[0]);
  if (len[0] > 0) w.bcast(std::span<char>(wisdom.data(), wisdom.size()), 0);
  if (w.rank() != 0) {
    std::lock_guard lock(fftw_planner_lock());
    fftw_import_wisdom_from_string(wisdom.c_str());
    plan();
  }
}

// One distributed transform; `pipelined` picks the transpose. Returns this rank's times.
class fft3d {
 public:
  fft3d(cairn::world& w, int n, int depth, int group)
      : w_(w),
        n_(n),
        p_(w.size()),
        b_(n / w.size()),
        depth_(depth),
        group_(std::clamp(group, 1, n / w.size())),
        slab_(static_cast<std::size_t>(b_) * n * n),
        a_(slab_),
        send_(slab_),
        r_(slab_) {
    // Message k of the pipeline carries planes [k·g, k·g + g') (g' = g but for the last one):
    // b·N·g' elements per peer, sent from [d][plane][yl][x] (from place when g = 1, else packed
    // in send_) and received at R's planes z = s·b + k·g ... (contiguous in R).
    const std::size_t block = static_cast<std::size_t>(b_) * n_;
    const auto ps = static_cast<std::size_t>(p_);
    for (int z0 = 0; z0 < b_; z0 += group_) {
      const auto g = static_cast<std::size_t>(std::min(group_, b_ - z0));
      msgs_.push_back({z0, static_cast<int>(g), std::vector<std::size_t>(ps, g * block), {}, {}});
      for (std::size_t d = 0; d < ps; ++d) {
        msgs_.back().sdispls.push_back(d * g * block);
        msgs_.back().rdispls.push_back(
            (d * static_cast<std::size_t>(b_) + static_cast<std::size_t>(z0)) * block);
      }
    }
    plan_everywhere(w, [&] {
      auto* d = fc(a_.p);
      plane_ = fftw_plan_dft_2d(n, n, d, d, FFTW_FORWARD, FFTW_MEASURE);
      // z lines of R[z][yl][x]: N·b transforms of length N, stride b·N, neighbours 1 apart.
      auto* r = fc(r_.p);
      const int len = n;
      const int lines = b_ * n;
      lines_ = fftw_plan_many_dft(1, &len, lines, r, nullptr, lines, 1, r, nullptr, lines, 1,
                                  FFTW_FORWARD, FFTW_MEASURE);
    });
    if (!plane_ || !lines_) throw std::runtime_error("fft3d: FFTW could not plan");
  }
  ~fft3d() {
    std::lock_guard lock(fftw_planner_lock());
    fftw_destroy_plan(plane_);
    fftw_destroy_plan(lines_);
  }
  fft3d(const fft3d&) = delete;
  fft3d& operator=(const fft3d&) = delete;

  void fill() {
    const std::int64_t z0 = static_cast<std::int64_t>(w_.rank()) * b_;
    for (int zl = 0; zl < b_; ++zl)
      for (int y = 0; y < n_; ++y)
        for (int x = 0; x < n_; ++x) a_.p[idx(zl, y, x)] = input(z0 + zl, y, x);
  }

  breakdown run(bool pipelined) {
    breakdown t;
    const auto t0 = clock_type::now();
    const std::size_t plane = static_cast<std::size_t>(n_) * n_,
                      block = static_cast<std::size_t>(b_) * n_;
    if (!pipelined) {
      for (int zl = 0; zl < b_; ++zl) {
        auto t1 = clock_type::now();
        fftw_execute_dft(plane_, fc(a_.p + zl * plane), fc(a_.p + zl * plane));
        t.fft_xy += since(t1);
      }
      auto t1 = clock_type::now();
      // send_[d][zl][yl][x]: rows of y owned by d, for every local plane.
      for (int d = 0; d < p_; ++d)
        for (int zl = 0; zl < b_; ++zl)
          std::memcpy(send_.p + (static_cast<std::size_t>(d) * b_ + zl) * block,
                      a_.p + zl * plane + static_cast<std::size_t>(d) * block,
                      block * sizeof(cplx));
      t.copy += since(t1);
      t1 = clock_type::now();
      // Block s of R is [zl][yl][x] from source s: R[z][yl][x] with z = s·b + zl.
      w_.alltoall(send_.all(), r_.all());
      t.comm += since(t1);
    } else {
      std::vector<cairn::request> pending(msgs_.size());
      const std::size_t limit = depth_ > 0 ? static_cast<std::size_t>(depth_) : pending.size();
      std::size_t oldest = 0;  // first request not yet seen complete
      for (std::size_t m = 0; m < msgs_.size(); ++m) {
        const message& msg = msgs_[m];
        for (int zl = msg.z0; zl < msg.z0 + msg.g; ++zl) {
          auto t1 = clock_type::now();
          fftw_execute_dft(plane_, fc(a_.p + zl * plane), fc(a_.p + zl * plane));
          t.fft_xy += since(t1);
          if (zl + 1 < msg.z0 + msg.g && oldest < m) {  // drive the earlier messages between planes
            t1 = clock_type::now();
            while (oldest < m && pending[oldest].test()) ++oldest;
            t.comm += since(t1);
          }
        }
        std::span<cplx> from = a_.part(msg.z0 * plane, plane);
        if (msg.g > 1) {  // [plane][d][yl][x] -> [d][plane][yl][x], while the planes are in cache
          auto t1 = clock_type::now();
          cplx* to = send_.p + msg.z0 * plane;
          for (int d = 0; d < p_; ++d)
            for (int k = 0; k < msg.g; ++k)
              std::memcpy(to + (static_cast<std::size_t>(d) * msg.g + k) * block,
                          a_.p + (msg.z0 + k) * plane + static_cast<std::size_t>(d) * block,
                          block * sizeof(cplx));
          from = send_.part(msg.z0 * plane, msg.g * plane);
          t.copy += since(t1);
        }
        auto t1 = clock_type::now();
        while (m - oldest >= limit) pending[oldest++].wait();  // keep at most `limit` in flight
        pending[m] =
            w_.ialltoallv(from, msg.counts, msg.sdispls, r_.all(), msg.counts, msg.rdispls);
        // Drive the earlier messages (test() also advances every other outstanding operation).
        while (oldest < m && pending[oldest].test()) ++oldest;
        t.comm += since(t1);
      }
      auto t1 = clock_type::now();
      cairn::wait_all(std::span<cairn::request>(pending).subspan(oldest));
      t.comm += since(t1);
    }
    auto t1 = clock_type::now();
    fftw_execute(lines_);
    t.fft_z += since(t1);
    t.total = since(t0);
    return t;
  }

  // Rank 0 checks everything against a sequential 3-D FFT; the others send their part.
  void verify(const char* what) {
    if (w_.rank() != 0) {
      w_.send(r_.p, static_cast<std::int64_t>(slab_), 0, 77);
      return;
    }
    const std::size_t total = static_cast<std::size_t>(n_) * n_ * n_;
    buffer ref(total);
    for (int z = 0; z < n_; ++z)
      for (int y = 0; y < n_; ++y)
        for (int x = 0; x < n_; ++x)
          ref.p[(static_cast<std::size_t>(z) * n_ + y) * n_ + x] = input(z, y, x);
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
      const cplx* got = r_.p;
      if (s > 0) {
        w_.recv(part.p, static_cast<std::int64_t>(slab_), s, 77);
        got = part.p;
      }
      // got = R[z][yl][x] of rank s (rows y = s·b + yl).
      for (int z = 0; z < n_; ++z)
        for (int yl = 0; yl < b_; ++yl)
          for (int x = 0; x < n_; ++x) {
            const cplx want = ref.p[(static_cast<std::size_t>(z) * n_ + (s * b_ + yl)) * n_ + x];
            worst = std::max(
                worst, std::abs(got[(static_cast<std::size_t>(z) * b_ + yl) * n_ + x] - want));
            scale = std::max(scale, std::abs(want));
          }
    }
    if (!(worst <= 1e-9 * scale))
      throw std::runtime_error(std::string("fft3d (") + what + "): max error " +
                               std::to_string(worst) + " against the sequential FFT (scale " +
                               std::to_string(scale) + ")");
  }

 private:
  std::size_t idx(int zl, int y, int x) const {
    return (static_cast<std::size_t>(zl) * n_ + y) * n_ + x;
  }
  static fftw_complex* fc(cplx* p) { return reinterpret_cast<fftw_complex*>(p); }

  cairn::world& w_;
  // One ialltoallv of the pipeline: planes [z0, z0 + g), its counts and displacements.
  struct message {
    int z0, g;
    std::vector<std::size_t> counts, sdispls, rdispls;
  };
  int n_, p_, b_, depth_, group_;
  std::size_t slab_;
  buffer a_, send_, r_;
  std::vector<message> msgs_;
  fftw_plan plane_ = nullptr, lines_ = nullptr;
};

breakdown slowest(cairn::world& w, const breakdown& t) {
  std::array<double, 5> mine{t.fft_xy, t.fft_z, t.copy, t.comm, t.total}, all{};
  w.allreduce(mine, all, cairn::max{});
  return {all[0], all[1], all[2], all[3], all[4]};
}

int run_fft3d(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is cairn's blocking transpose, same run
  std::vector<int> sizes = inv.opts.quick ? std::vector<int>{64} : std::vector<int>{128, 256};
  if (inv.opts.sizes_given)  // --sizes=a-b: the N of {32, 64, 128, 256} whose box (N³ · 16 bytes)
                             // is in [a, b]
    sizes = [&] {
      std::vector<int> v;
      for (const int n : {32, 64, 128, 256}) {
        const std::size_t bytes = static_cast<std::size_t>(n) * n * n * 16;
        if (bytes >= inv.opts.min_size && bytes <= inv.opts.max_size) v.push_back(n);
      }
      return v;
    }();
  if (inv.opts.params.contains("N")) {  // --N=a,b: exactly these
    sizes.clear();
    for (const auto n : count_list_param(inv.opts, "N", {}, 2, 4096))
      sizes.push_back(static_cast<int>(n));
  } else {
    record_param("N", [&] {
      std::string t = "[";
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (i) t += ',';
        t += std::to_string(sizes[i]);
      }
      return t + "]";
    }());
  }
  const int reps = static_cast<int>(count_param(inv.opts, "reps", inv.opts.quick ? 3 : 7, 1, 1001));
  int depth = 0, group = 1;
  if (const char* e = std::getenv("CAIRN_FFT3D_DEPTH")) depth = std::atoi(e);
  if (const char* e = std::getenv("CAIRN_FFT3D_GROUP")) group = std::atoi(e);
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    for (const int n : sizes) {
      if (n % w.size() != 0) {
        if (w.rank() == 0)
          note("fft3d: N = " + std::to_string(n) + " is not a multiple of the ranks; skipped");
        continue;
      }
      fft3d f(w, n, depth, group);
      for (const bool pipelined : {false, true}) {  // verify both before timing
        f.fill();
        f.run(pipelined);
        f.verify(pipelined ? "pipelined" : "blocking");
      }
      std::vector<double> blk, pip;
      std::vector<breakdown> blk_parts, pip_parts;
      for (int r = 0; r < reps; ++r) {  // alternated, so drifting load hits both alike
        f.fill();
        w.barrier();
        blk_parts.push_back(slowest(w, f.run(false)));
        blk.push_back(blk_parts.back().total);
        f.fill();
        w.barrier();
        pip_parts.push_back(slowest(w, f.run(true)));
        pip.push_back(pip_parts.back().total);
      }
      if (!rep) continue;
      const std::size_t bytes = static_cast<std::size_t>(n) * n * n * sizeof(cplx);
      rep->add(row{"fft3d", std::string(to_string(w.engine())), w.size(), bytes, "transform_ms",
                   "lower", median(pip) * 1e3, "blocking-alltoall", median(blk) * 1e3});
      // Each part: median over the repetitions of the slowest rank's time.
      auto describe = [](const std::vector<breakdown>& v) {
        auto med = [&](double breakdown::*m) {
          std::vector<double> x;
          for (const auto& b : v) x.push_back(b.*m * 1e3);
          return std::to_string(median(std::move(x)));
        };
        return "fft-xy " + med(&breakdown::fft_xy) + " ms, fft-z " + med(&breakdown::fft_z) +
               " ms, copy " + med(&breakdown::copy) + " ms, alltoall/wait " +
               med(&breakdown::comm) + " ms, total " + med(&breakdown::total) + " ms";
      };
      note("fft3d " + std::string(to_string(w.engine())) + " P=" + std::to_string(w.size()) +
           " N=" + std::to_string(n) + " blocking: " + describe(blk_parts) +
           "; pipelined: " + describe(pip_parts) + " (medians over " + std::to_string(reps) +
           " repetitions of the slowest rank per part)");
    }
  });
}
#else
int run_fft3d(const invocation&) {
  note(
      "fft3d: this cairn-bench was built without FFTW (scripts/install-deps installs "
      "libfftw3-dev)");
  return 2;
}
#endif

const param_registrar params{
    "fft3d",
    {{"N", "box edges N (N^3 complex points), comma-separated", "128,256; 64 with --quick"},
     {"reps", "timed transforms per figure (the median is reported)", "7, 3 with --quick"}}};

const registrar reg{{"fft3d",
                     "LibNBC 3-D FFT in xy-slabs: pipelined ialltoall per plane vs one blocking "
                     "alltoall (ms per transform)",
                     run_fft3d}};

}  // namespace

}  // namespace cairn::bench
