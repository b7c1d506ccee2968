// `cairn-bench fft`: cairn::fft against FFTW's own MPI transforms (libfftw3-mpi) on the same data:
// an N^3 box (--dims=3, N = 128, 256) or an N^2 array (--dims=2, N = 1024, 4096), complex to
// complex and real to complex (--kind=c2c or r2c; both by default, one after the other). Both
// take the input in slabs along dimension 0 (FFTW-MPI's layout: blocks of ceil(N / P) planes)
// and give the output in that same layout (FFTW-MPI without FFTW_MPI_TRANSPOSED_OUT), so both
// move the data twice (cairn on the threads engine instead transforms dimension 0 in every
// rank's slab, fft_options::shared_columns, unless --shared-columns=0). Plans are made before
// timing with --rigor (measure by default) on both sides. The figure is the slowest rank's time per
// forward transform (median of --reps), the baseline runs as a plain MPI program (run_sized: a
// plain child `mpirun -np P` per round for a threads run; under mpirun, in this process before
// cairn starts). A row's `size` is the bytes of the complex output array (so c2c and r2c rows of
// one N differ). A note gives cairn's breakdown per run: local FFTs, copies, the redistributions'
// packing, transmission and unpacking, and their wall time, and the columns done in every rank's
// slab. Checked: a round trip (forward, backward scaled) gives the input back, and the spectrum's
// zero frequency is the input's sum, on both sides.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_CAIRN_FFT
#include "cairn/fft/fft.hpp"
#endif
#if CAIRN_BENCH_HAVE_FFTW_MPI
#include <fftw3-mpi.h>
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

#if CAIRN_BENCH_HAVE_CAIRN_FFT
using cplx = std::complex<double>;
using clock_type = std::chrono::steady_clock;

// The input's value at flat row-major index i (real part only for r2c).
cplx input(std::int64_t i) {
  const double v = static_cast<double>(i % 100003) * 0.37;
  return {std::sin(v), std::cos(1.7 * v)};
}

struct fft_case {
  int dims = 3;
  bool r2c = false;
  bool measure = true;
  int reps = 5;
  int chunks = 1;                // fft_options::transfer.chunks
  bool shared_columns = true;    // fft_options::shared_columns
  std::int64_t column_tile = 0;  // fft_options::column_tile
};

// Bytes of the complex output of an N^dims transform (the rows' size).
std::size_t output_bytes(const fft_case& c, std::int64_t n) {
  std::int64_t e = c.r2c ? n / 2 + 1 : n;
  for (int d = 1; d < c.dims; ++d) e *= n;
  return static_cast<std::size_t>(e) * sizeof(cplx);
}

// N from the size of a row (the inverse of output_bytes over the candidates).
std::int64_t edge_of(const fft_case& c, std::size_t bytes) {
  for (std::int64_t n = 2; n <= 16384; ++n)
    if (output_bytes(c, n) == bytes) return n;
  throw std::logic_error("fft: no edge for " + std::to_string(bytes) + " bytes");
}

void check_round_trip(const char* who, double worst, double sum_error) {
  if (worst > 1e-9 || sum_error > 1e-9)
    throw std::runtime_error(std::string("fft (") + who + "): wrong result (round trip error " +
                             std::to_string(worst) + ", zero frequency error " +
                             std::to_string(sum_error) + ")");
}

template <int N>
double cairn_fft(cairn::world& w, const fft_case& c, std::int64_t n) {
  const cairn::group all = w.group(cairn::ranks{0, w.size()});
  std::array<std::int64_t, N> shape{};
  shape.fill(n);
  auto cshape = shape;
  if (c.r2c) cshape[N - 1] = n / 2 + 1;
  std::array<cairn::dim_dist, N> dists{};
  dists.fill(cairn::dist::block);
  std::array<int, N> grid{};
  grid.fill(1);
  grid[0] = w.size();
  const cairn::layout<N> in(all, shape, dists, grid), out(all, cshape, dists, grid);
  cairn::fft_steps steps;
  cairn::fft_options opts;
  opts.rigor = c.measure ? cairn::fft_rigor::measure : cairn::fft_rigor::estimate;
  opts.steps = &steps;
  opts.transfer.chunks = c.chunks;
  opts.shared_columns = c.shared_columns;
  opts.column_tile = c.column_tile;
  cairn::fft_plan<double, N> plan(in, out, c.r2c ? cairn::fft_kind::r2c : cairn::fft_kind::c2c,
                                  opts);
  cairn::darray<cplx, N> y(out);
  std::vector<double> times;
  double worst = 0, sum_error = 0;
  const auto flat = [&](const auto& gi) {
    std::int64_t o = 0;
    for (int d = 0; d < N; ++d) o = o * n + gi[static_cast<std::size_t>(d)];
    return o;
  };
  const auto time_forward = [&](auto& x) {
    for (int r = 0; r < c.reps + 1; ++r) {  // the first is a warm-up
      w.barrier();
      const auto t0 = clock_type::now();
      plan.forward(x, y);
      const double t = slowest(w, std::chrono::duration<double>(clock_type::now() - t0).count());
      if (r > 0) times.push_back(t);
    }
  };
  // The zero frequency against the input's sum, and the round trip.
  const auto check = [&](auto& x, auto& back, auto value) {
    cplx sum = 0;
    x.for_each([&](const auto&, const auto& v) { sum += cplx(v); });
    const cplx total(w.allreduce(sum.real(), cairn::plus{}),
                     w.allreduce(sum.imag(), cairn::plus{}));
    const std::array<std::int64_t, N> zero{};
    if (y.get_layout().is_local(zero))
      sum_error = std::abs(y[y.get_layout().to_local(zero)] - total) / (std::abs(total) + 1);
    plan.backward(y, back, cairn::fft_scale::full);
    back.for_each([&](const auto& gi, const auto& v) {
      worst = std::max(worst, std::abs(cplx(v) - cplx(value(flat(gi)))));
    });
  };
  if (c.r2c) {
    cairn::darray<double, N> x(in), back(in);
    x.fill([&](const auto& gi) { return input(flat(gi)).real(); });
    time_forward(x);
    check(x, back, [](std::int64_t i) { return input(i).real(); });
  } else {
    cairn::darray<cplx, N> x(in), back(in);
    x.fill([&](const auto& gi) { return input(flat(gi)); });
    time_forward(x);
    check(x, back, [](std::int64_t i) { return input(i); });
  }
  check_round_trip("cairn", w.allreduce(worst, cairn::max{}), w.allreduce(sum_error, cairn::max{}));
  // Breakdown: this rank's step times per transform (forward and backward alike counted).
  const double per = 1e3 / static_cast<double>(std::max<std::int64_t>(steps.transforms, 1));
  const auto ms = [&](double s) { return std::to_string(slowest(w, s) * per); };
  const std::string parts = "local FFTs " + ms(steps.local_fft_s) + " ms, copies " +
                            ms(steps.copy_s) + " ms, redistributions " + ms(steps.redistribute_s) +
                            " ms (pack " + ms(steps.transfer.pack_s) + ", transmit/wait " +
                            ms(steps.transfer.transmit_s) + ", unpack/straight copies " +
                            ms(steps.transfer.unpack_s) + "), columns in every rank's slab " +
                            ms(steps.columns_s) + " ms";
  if (w.rank() == 0)
    note("fft " + std::string(to_string(w.engine())) + " P=" + std::to_string(w.size()) + " " +
         (c.r2c ? "r2c" : "c2c") + " N=" + std::to_string(n) + "^" + std::to_string(N) +
         ": cairn per transform (slowest rank per part, mean over " +
         std::to_string(steps.transforms) + " transforms): " + parts);
  return median(times) * 1e3;
}

#if CAIRN_BENCH_HAVE_FFTW_MPI
// FFTW's MPI transform on MPI_COMM_WORLD of a plain MPI program (fftw_mpi_init once).
double fftw_mpi_fft(const fft_case& c, std::int64_t n) {
  static const bool initialized = [] {
    fftw_mpi_init();
    return true;
  }();
  (void)initialized;
  std::vector<ptrdiff_t> shape(static_cast<std::size_t>(c.dims), static_cast<ptrdiff_t>(n));
  std::vector<ptrdiff_t> cshape = shape;
  if (c.r2c) cshape.back() = n / 2 + 1;
  ptrdiff_t local_n0 = 0, start0 = 0;
  const ptrdiff_t alloc =
      fftw_mpi_local_size(c.dims, cshape.data(), MPI_COMM_WORLD, &local_n0, &start0);
  const unsigned flags = c.measure ? FFTW_MEASURE : FFTW_ESTIMATE;
  fftw_complex* out = fftw_alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
  fftw_complex* back = fftw_alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
  double* rin = nullptr;
  fftw_complex* cin = nullptr;
  fftw_plan fwd = nullptr, bwd = nullptr;
  std::int64_t inner = 1;  // points per plane (logical)
  for (int d = 1; d < c.dims; ++d) inner *= n;
  const std::int64_t padded_last = c.r2c ? 2 * (n / 2 + 1) : n;  // FFTW-MPI's r2c padding
  if (c.r2c) {
    rin = fftw_alloc_real(static_cast<std::size_t>(std::max<ptrdiff_t>(2 * alloc, 1)));
    fwd = fftw_mpi_plan_dft_r2c(c.dims, shape.data(), rin, out, MPI_COMM_WORLD, flags);
    bwd = fftw_mpi_plan_dft_c2r(c.dims, shape.data(), back, rin, MPI_COMM_WORLD, flags);
  } else {
    cin = fftw_alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
    fwd = fftw_mpi_plan_dft(c.dims, shape.data(), cin, out, MPI_COMM_WORLD, FFTW_FORWARD, flags);
    bwd = fftw_mpi_plan_dft(c.dims, shape.data(), back, cin, MPI_COMM_WORLD, FFTW_BACKWARD, flags);
  }
  if (!fwd || !bwd) throw std::runtime_error("fft (mpi-raw): FFTW-MPI found no plan");
  // Planning may have written the arrays: fill afterwards.
  const auto fill = [&] {
    for (std::int64_t p = 0; p < local_n0; ++p)
      for (std::int64_t j = 0; j < inner; ++j) {
        const std::int64_t i = (start0 + p) * inner + j;
        const std::int64_t row = j / n, col = j % n;
        if (c.r2c) {
          rin[(p * (inner / n) + row) * padded_last + col] = input(i).real();
        } else {
          const cplx v = input(i);
          cin[p * inner + j][0] = v.real();
          cin[p * inner + j][1] = v.imag();
        }
      }
  };
  fill();
  std::vector<double> times;
  for (int r = 0; r < c.reps + 1; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = clock_type::now();
    fftw_execute(fwd);
    const double t = mpi_slowest(std::chrono::duration<double>(clock_type::now() - t0).count());
    if (r > 0) times.push_back(t);
  }
  // Checks: the zero frequency, and the round trip (into the input arrays, then compared).
  double sum_re = 0, sum_im = 0;
  for (std::int64_t p = 0; p < local_n0; ++p)
    for (std::int64_t j = 0; j < inner; ++j) {
      const cplx v = input((start0 + p) * inner + j);
      sum_re += v.real();
      sum_im += c.r2c ? 0 : v.imag();
    }
  double sums[2] = {sum_re, sum_im}, total[2] = {0, 0};
  MPI_Allreduce(sums, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double sum_error = 0;
  if (local_n0 > 0 && start0 == 0)
    sum_error = std::abs(cplx(out[0][0], out[0][1]) - cplx(total[0], total[1])) /
                (std::abs(cplx(total[0], total[1])) + 1);
  std::memcpy(back, out,
              sizeof(fftw_complex) * static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 0)));
  fftw_execute(bwd);
  double worst = 0;
  const double scale = 1.0 / static_cast<double>(inner * n);
  for (std::int64_t p = 0; p < local_n0; ++p)
    for (std::int64_t j = 0; j < inner; ++j) {
      const std::int64_t i = (start0 + p) * inner + j;
      const std::int64_t row = j / n, col = j % n;
      const cplx got = c.r2c ? cplx(rin[(p * (inner / n) + row) * padded_last + col])
                             : cplx(cin[p * inner + j][0], cin[p * inner + j][1]);
      const cplx want = c.r2c ? cplx(input(i).real()) : input(i);
      worst = std::max(worst, std::abs(got * scale - want));
    }
  double worst_all = 0, sum_all = 0;
  MPI_Allreduce(&worst, &worst_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&sum_error, &sum_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  fftw_destroy_plan(fwd);
  fftw_destroy_plan(bwd);
  fftw_free(out);
  fftw_free(back);
  if (rin) fftw_free(rin);
  if (cin) fftw_free(cin);
  check_round_trip("mpi-raw", worst_all, sum_all);
  return median(times) * 1e3;
}
#endif

int run_fft(const invocation& inv) {
  fft_case base;
  base.dims = static_cast<int>(count_param(inv.opts, "dims", 3, 2, 3));
  base.reps = static_cast<int>(count_param(inv.opts, "reps", inv.opts.quick ? 3 : 5, 1, 1001));
  base.chunks = static_cast<int>(count_param(inv.opts, "chunks", 1, 1, 64));
  base.shared_columns = count_param(inv.opts, "shared-columns", 1, 0, 1) != 0;
  base.column_tile =
      static_cast<std::int64_t>(count_param(inv.opts, "column-tile", 0, 0, std::uint64_t{1} << 20));
  const auto rigor = inv.opts.params.find("rigor");
  base.measure = rigor == inv.opts.params.end() || rigor->second != "estimate";
  if (rigor != inv.opts.params.end() && rigor->second != "estimate" && rigor->second != "measure")
    throw std::invalid_argument("--rigor is estimate or measure, not " + rigor->second);
  const std::vector<std::uint64_t> def =
      base.dims == 3
          ? (inv.opts.quick ? std::vector<std::uint64_t>{64} : std::vector<std::uint64_t>{128, 256})
          : (inv.opts.quick ? std::vector<std::uint64_t>{256}
                            : std::vector<std::uint64_t>{1024, 4096});
  const auto edges = count_list_param(inv.opts, "N", def, 2, 16384);
  std::vector<std::string> kinds{"c2c", "r2c"};
  if (const auto k = inv.opts.params.find("kind"); k != inv.opts.params.end()) {
    if (k->second != "c2c" && k->second != "r2c")
      throw std::invalid_argument("--kind is c2c or r2c, not " + k->second);
    kinds = {k->second};
  }
#if CAIRN_BENCH_HAVE_MPI
  // Under mpirun, MPI stays initialized (as a plain program initializes it) across the kinds'
  // runs: each run_sized would otherwise finalize it at its end.
  std::optional<plain_mpi> mpi;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::mpi) mpi.emplace();
#endif
  int rc = 0;
  for (const std::string& kind : kinds) {
    // Each kind is its own sized run; its baseline child measures that kind only.
    invocation one = inv;
    one.opts.params["kind"] = kind;
    fft_case c = base;
    c.r2c = kind == "r2c";
    sized_spec s;
    s.metric = "transform_ms";
    s.better = "lower";
    for (const auto n : edges) s.sizes.push_back(output_bytes(c, static_cast<std::int64_t>(n)));
    s.rounds = rounds_param(inv.opts);
    if (!inv.opts.raw_mpi_only &&
        cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
      s.launch.ranks = s.processes = threads_run_ranks(inv);
    s.mine = [c](cairn::world& w, std::size_t bytes) {
      const std::int64_t n = edge_of(c, bytes);
      return c.dims == 3 ? cairn_fft<3>(w, c, n) : cairn_fft<2>(w, c, n);
    };
#if CAIRN_BENCH_HAVE_FFTW_MPI
    s.raw = [c](std::size_t bytes) { return fftw_mpi_fft(c, edge_of(c, bytes)); };
#endif
    rc = std::max(rc, run_sized(one, s));
  }
  return rc;
}
#else
int run_fft(const invocation&) {
  note("fft: this cairn-bench was built without cairn::fft (scripts/install-deps installs FFTW)");
  return 2;
}
#endif

const param_registrar params{
    "fft",
    {{"dims", "2 (N^2 arrays) or 3 (N^3 boxes)", "3"},
     {"N", "edges, comma-separated", "128,256 (3-D), 1024,4096 (2-D); 64, 256 with --quick"},
     {"kind", "c2c or r2c", "both, one after the other"},
     {"rigor", "FFTW planning: estimate or measure (both sides)", "measure"},
     {"chunks", "cairn's redistributions: slabs per peer (transfer_options::chunks)", "1"},
     {"shared-columns",
      "1: transforms along dimension 0 in every rank's slab where ranks share memory "
      "(fft_options::shared_columns); 0: two transposes",
      "1"},
     {"column-tile", "columns per tile of those transforms (fft_options::column_tile; 0: chosen)",
      "0"},
     {"reps", "timed transforms per round (the median is reported)", "5, 3 with --quick"},
     {"rounds", "alternating rounds of cairn and the baseline per figure", "3, 1 with --quick"}}};

const registrar reg{{"fft",
                     "cairn::fft vs FFTW-MPI: distributed 2-D/3-D c2c and r2c transforms, slabs "
                     "in and out (ms per forward transform)",
                     run_fft}};

}  // namespace

}  // namespace cairn::bench
