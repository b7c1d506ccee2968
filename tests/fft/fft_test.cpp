// Distributed FFTs on both engines: c2c and r2c/c2r, 2-D and 3-D, double and float, slabs and
// pencils, random shapes (odd sizes, fewer planes than ranks: empty parts) and random input and
// output layouts. Every output element is compared with a sequential FFTW transform of the whole
// array (computed on each rank from the same generator); round trips must give the input back;
// the input must be left as it was. Bad input raises cairn::error.
#include <fftw3.h>

#include <cmath>
#include <complex>
#include <random>
#include <sstream>

#include "cairn/fft/fft.hpp"
#include "cairn/fft/two_task.hpp"
#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::run;

namespace {

// The reference transforms plan on several ranks (threads) at once: FFTW's planner is made
// thread-safe before any rank starts.
const bool planner_safe = [] {
  fftw_make_planner_thread_safe();
  return true;
}();

template <class Real>
constexpr double tolerance = std::is_same_v<Real, double> ? 1e-12 : 1e-5;

// Value of global element gi (seeded): in [-1, 1), imaginary part for complex arrays.
template <std::size_t N>
std::complex<double> value(const std::array<std::int64_t, N>& gi, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto i : gi) x = (x ^ static_cast<std::uint64_t>(i)) * 0xBF58476D1CE4E5B9ull + 7;
  const double re = static_cast<double>(x >> 11) / 9007199254740992.0 * 2 - 1;
  x = x * 0x94D049BB133111EBull + 3;
  const double im = static_cast<double>(x >> 11) / 9007199254740992.0 * 2 - 1;
  return {re, im};
}

template <std::size_t N>
std::int64_t row_major_offset(const std::array<std::int64_t, N>& gi,
                              const std::array<std::int64_t, N>& shape) {
  std::int64_t o = 0;
  for (std::size_t d = 0; d < N; ++d) o = o * shape[d] + gi[d];
  return o;
}

template <std::size_t N>
std::int64_t count(const std::array<std::int64_t, N>& shape) {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

// The whole input array (row-major; real parts only for r2c) and its sequential transform by
// FFTW in double precision (c2c forward or backward, or r2c: the half spectrum).
template <std::size_t N>
struct reference {
  std::vector<std::complex<double>> input, output;
  reference(const std::array<std::int64_t, N>& shape, std::uint64_t seed, cairn::fft_kind kind,
            int sign) {
    input.resize(static_cast<std::size_t>(count(shape)));
    std::array<std::int64_t, N> gi{};
    for (std::size_t o = 0; o < input.size(); ++o) {
      input[o] = value(gi, seed);
      if (kind == cairn::fft_kind::r2c) input[o] = input[o].real();
      for (int d = static_cast<int>(N) - 1; d >= 0; --d) {
        if (++gi[static_cast<std::size_t>(d)] < shape[static_cast<std::size_t>(d)]) break;
        gi[static_cast<std::size_t>(d)] = 0;
      }
    }
    std::array<int, N> n{};
    for (std::size_t d = 0; d < N; ++d) n[d] = static_cast<int>(shape[d]);
    std::vector<std::complex<double>> in = input;
    output.resize(input.size());
    fftw_plan p =
        fftw_plan_dft(static_cast<int>(N), n.data(), reinterpret_cast<fftw_complex*>(in.data()),
                      reinterpret_cast<fftw_complex*>(output.data()), sign, FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
  }
  // Output element at gi (for r2c: gi in the half spectrum, same index in the full one).
  [[nodiscard]] std::complex<double> out(const std::array<std::int64_t, N>& gi,
                                         const std::array<std::int64_t, N>& shape) const {
    return output[static_cast<std::size_t>(row_major_offset(gi, shape))];
  }
  [[nodiscard]] std::complex<double> in(const std::array<std::int64_t, N>& gi,
                                        const std::array<std::int64_t, N>& shape) const {
    return input[static_cast<std::size_t>(row_major_offset(gi, shape))];
  }
  [[nodiscard]] double scale() const {
    double m = 0;
    for (auto& x : output) m = std::max(m, std::abs(x));
    return std::max(m, 1e-300);
  }
};

cairn::dim_dist random_dist(std::mt19937_64& g) {
  switch (g() % 5) {
    case 0:
    case 1: return cairn::dist::block;
    case 2: return cairn::dist::cyclic;
    case 3: return cairn::dist::block_cyclic(1 + static_cast<std::int64_t>(g() % 3));
    default: return cairn::dist::replicated;
  }
}

template <int N>
cairn::layout<N> random_layout(std::mt19937_64& g, const cairn::group& grp,
                               const std::array<std::int64_t, N>& shape) {
  std::array<cairn::dim_dist, N> d{};
  for (auto& x : d) x = random_dist(g);
  std::array<int, N> grid{};
  if (g() % 3 != 0) {  // else the default grid
    grid.fill(1);
    for (int p = grp.size(), f = 2; p > 1;) {
      if (p % f == 0) {
        grid[g() % N] *= f;
        p /= f;
      } else {
        ++f;
      }
    }
  }
  return cairn::layout<N>(grp, shape, d, grid);
}

// Extents in [1, max_extent].
template <int N>
std::array<std::int64_t, N> random_shape(std::mt19937_64& g, std::int64_t max_extent) {
  std::array<std::int64_t, N> shape{};
  for (auto& e : shape)
    e = 1 + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(max_extent));
  return shape;
}

// Largest |a - ref| over this rank's elements, relative to the reference's largest magnitude,
// taken over every rank.
double worst_of(cairn::world& w, double local) { return w.allreduce(local, cairn::max{}); }

// Forward, backward and round trips of a plan from `in_l` to `out_l` against FFTW's sequential
// transforms; neither input is written.
template <class Real, int N>
void check_layouts(cairn::world& w, const cairn::layout<N>& in_l, const cairn::layout<N>& out_l,
                   const std::array<std::int64_t, N>& shape, cairn::fft_kind kind,
                   const cairn::fft_options& opts, std::uint64_t seed) {
  using cplx = std::complex<Real>;
  std::ostringstream what;
  what << (kind == cairn::fft_kind::r2c ? "r2c " : "c2c ") << in_l << " -> " << out_l
       << (std::is_same_v<Real, float> ? " float" : " double");
  SCOPED_TRACE(what.str());
  cairn::fft_plan<Real, N> plan(in_l, out_l, kind, opts);
  const reference<static_cast<std::size_t>(N)> ref(shape, seed, kind, FFTW_FORWARD);
  const double tol = tolerance<Real>;

  if (kind == cairn::fft_kind::c2c) {
    cairn::darray<cplx, N> x(in_l), y(out_l), z(in_l);
    x.fill([&](const auto& gi) { return cplx(ref.in(gi, shape)); });
    plan.forward(x, y);
    double err = 0;
    y.for_each([&](const auto& gi, const cplx& v) {
      err = std::max(err, std::abs(std::complex<double>(v) - ref.out(gi, shape)));
    });
    EXPECT_LE(worst_of(w, err / ref.scale()), tol) << plan;
    // The input is left as it was.
    std::int64_t changed = 0;
    x.for_each([&](const auto& gi, const cplx& v) { changed += v != cplx(ref.in(gi, shape)); });
    EXPECT_EQ(changed, 0);
    // Backward against FFTW's backward transform of the same data (as a spectrum).
    const reference<static_cast<std::size_t>(N)> back(shape, seed, kind, FFTW_BACKWARD);
    cairn::darray<cplx, N> s(out_l);
    s.fill([&](const auto& gi) { return cplx(back.in(gi, shape)); });
    plan.backward(s, z);
    err = 0;
    z.for_each([&](const auto& gi, const cplx& v) {
      err = std::max(err, std::abs(std::complex<double>(v) - back.out(gi, shape)));
    });
    EXPECT_LE(worst_of(w, err / back.scale()), tol);
    // Round trip with full scaling.
    plan.backward(y, z, cairn::fft_scale::full);
    err = 0;
    z.for_each([&](const auto& gi, const cplx& v) {
      err = std::max(err, std::abs(std::complex<double>(v) - ref.in(gi, shape)));
    });
    EXPECT_LE(worst_of(w, err), tol * 10);
  } else {
    cairn::darray<Real, N> x(in_l), z(in_l);
    cairn::darray<cplx, N> y(out_l);
    x.fill([&](const auto& gi) { return static_cast<Real>(ref.in(gi, shape).real()); });
    plan.forward(x, y, cairn::fft_scale::symmetric);
    const double sym = std::sqrt(static_cast<double>(count(shape)));
    double err = 0;
    y.for_each([&](const auto& gi, const cplx& v) {
      err = std::max(err, std::abs(std::complex<double>(v) * sym - ref.out(gi, shape)));
    });
    EXPECT_LE(worst_of(w, err / ref.scale()), tol) << plan;
    const cairn::darray<cplx, N> spectrum = y;
    plan.backward(y, z, cairn::fft_scale::symmetric);
    err = 0;
    z.for_each([&](const auto& gi, const Real& v) {
      err = std::max(err, std::abs(static_cast<double>(v) - ref.in(gi, shape).real()));
    });
    EXPECT_LE(worst_of(w, err), tol * 10);
    // Neither input was written (c2r copies before FFTW overwrites its input).
    std::int64_t changed = 0;
    x.for_each([&](const auto& gi, const Real& v) {
      changed += v != static_cast<Real>(ref.in(gi, shape).real());
    });
    for (std::size_t i = 0; i < y.local_size(); ++i) changed += y.local()[i] != spectrum.local()[i];
    EXPECT_EQ(changed, 0);
  }
}

template <class Real, int N>
void check_case(cairn::world& w, std::mt19937_64& g, const std::array<std::int64_t, N>& shape,
                cairn::fft_kind kind, cairn::fft_decomposition dec, bool natural,
                std::uint64_t seed) {
  const cairn::group all = w.group(cairn::ranks{0, w.size()});
  auto cshape = shape;
  if (kind == cairn::fft_kind::r2c) cshape[N - 1] = shape[N - 1] / 2 + 1;
  cairn::fft_options opts;
  opts.rigor = cairn::fft_rigor::estimate;
  opts.decomposition = dec;
  const auto in_l = natural ? cairn::fft_space_layout<N>(all, shape, kind, opts)
                            : random_layout<N>(g, all, shape);
  const auto out_l = natural ? cairn::fft_frequency_layout<N>(all, shape, kind, opts)
                             : random_layout<N>(g, all, cshape);
  check_layouts<Real, N>(w, in_l, out_l, shape, kind, opts, seed);
}

// Slabs in and out (the output in the first batch's layout, as FFTW-MPI gives it): where the
// ranks reach each other's memory (one node) the transforms along dimension 0 run in every
// rank's slab, with tiles of random widths (the last tile narrower); elsewhere, or with
// shared_columns off, by two transposes. Random shapes, odd sizes and fewer planes than ranks
// (empty slabs), and an input in another layout (redistributed first, and the output of
// backward redistributed last).
template <class Real, int N>
void slab_cases(cairn::world& w, std::uint64_t seed, int cases, std::int64_t max_extent) {
  const cairn::group all = w.group(cairn::ranks{0, w.size()});
  std::mt19937_64 g(seed);
  for (int c = 0; c < cases; ++c) {
    const auto shape = random_shape<N>(g, max_extent);
    const auto kind = c % 2 ? cairn::fft_kind::r2c : cairn::fft_kind::c2c;
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    opts.decomposition = cairn::fft_decomposition::slabs;
    opts.shared_columns = c % 5 != 4;
    opts.column_tile = static_cast<std::int64_t>(g() % 4 == 0 ? 0 : 1 + g() % 9);
    auto cshape = shape;
    if (kind == cairn::fft_kind::r2c) cshape[N - 1] = shape[N - 1] / 2 + 1;
    std::array<cairn::dim_dist, N> blocks{};
    blocks.fill(cairn::dist::block);
    std::array<int, N> slabs{};
    slabs.fill(1);
    slabs[0] = w.size();
    const cairn::layout<N> out_l(all, cshape, blocks, slabs);
    const auto in_l = c % 3 == 2 ? random_layout<N>(g, all, shape)
                                 : cairn::fft_space_layout<N>(all, shape, kind, opts);
    SCOPED_TRACE("case " + std::to_string(c) + ", tile " + std::to_string(opts.column_tile));
    check_layouts<Real, N>(w, in_l, out_l, shape, kind, opts,
                           seed * 100 + static_cast<std::uint64_t>(c));
    // The plan says which way it went.
    const cairn::fft_plan<Real, N> plan(in_l, out_l, kind, opts);
    std::ostringstream text;
    text << plan;
    // On MPI only where cross-memory copies are allowed (the launch probe; CAIRN_CMA=0).
    const bool may_share = w.size() > 1 && w.node_count() == 1 && opts.shared_columns;
    const bool shared = has_text(text.str(), "in every rank's slab");
    if (w.engine() == cairn::engine::threads)
      EXPECT_EQ(shared, may_share) << text.str();
    else
      EXPECT_TRUE(!shared || may_share) << text.str();
  }
}

TEST(Fft, SlabsInAndOut) {
  run([](cairn::world& w) {
    slab_cases<double, 3>(w, 51, 10, 11);
    slab_cases<double, 2>(w, 52, 10, 20);
    slab_cases<float, 3>(w, 53, 5, 9);
    slab_cases<float, 2>(w, 54, 5, 17);
  });
}

template <class Real, int N>
void random_cases(cairn::world& w, std::uint64_t seed, int cases, std::int64_t max_extent) {
  std::mt19937_64 g(seed);
  for (int c = 0; c < cases; ++c) {
    const auto shape = random_shape<N>(g, max_extent);
    const auto kind = g() % 2 ? cairn::fft_kind::r2c : cairn::fft_kind::c2c;
    auto dec = cairn::fft_decomposition::automatic;
    if (N == 3 && g() % 3 == 0) dec = cairn::fft_decomposition::pencils;
    if (g() % 3 == 0) dec = cairn::fft_decomposition::slabs;
    check_case<Real, N>(w, g, shape, kind, dec, g() % 3 == 0,
                        seed * 100 + static_cast<std::uint64_t>(c));
  }
}

TEST(Fft, TwoDimensionsDouble) {
  run([](cairn::world& w) { random_cases<double, 2>(w, 21, 12, 14); });
}

TEST(Fft, ThreeDimensionsDouble) {
  run([](cairn::world& w) { random_cases<double, 3>(w, 31, 12, 9); });
}

TEST(Fft, FloatBothDimensions) {
  run([](cairn::world& w) {
    random_cases<float, 2>(w, 22, 6, 12);
    random_cases<float, 3>(w, 32, 6, 8);
  });
}

// Sizes that matter: powers of two as the benchmarks use them, primes, fewer planes than ranks.
TEST(Fft, ChosenShapes) {
  run([](cairn::world& w) {
    std::mt19937_64 g(41);
    for (const auto kind : {cairn::fft_kind::c2c, cairn::fft_kind::r2c}) {
      check_case<double, 3>(w, g, {16, 16, 16}, kind, cairn::fft_decomposition::automatic, true, 1);
      check_case<double, 3>(w, g, {2, 3, 17}, kind, cairn::fft_decomposition::automatic, false, 2);
      check_case<double, 3>(w, g, {5, 1, 7}, kind, cairn::fft_decomposition::pencils, true, 3);
      check_case<double, 2>(w, g, {32, 2}, kind, cairn::fft_decomposition::automatic, true, 4);
      check_case<double, 2>(w, g, {1, 13}, kind, cairn::fft_decomposition::slabs, false, 5);
    }
  });
}

// c2c in place (one array as input and output, a plan whose two layouts are one): forward and
// backward against FFTW, on layouts of each way a plan runs (one batch on one rank, slabs with
// the columns in every rank's slab or transposed, pencils, a random layout redistributed).
template <class Real, int N>
void in_place_cases(cairn::world& w, std::uint64_t seed, int cases, std::int64_t max_extent) {
  using cplx = std::complex<Real>;
  const cairn::group all = w.group(cairn::ranks{0, w.size()});
  std::mt19937_64 g(seed);
  for (int c = 0; c < cases; ++c) {
    const auto shape = random_shape<N>(g, max_extent);
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    opts.shared_columns = c % 4 != 3;
    if (N == 3 && c % 4 == 2) opts.decomposition = cairn::fft_decomposition::pencils;
    std::array<cairn::dim_dist, N> blocks{};
    blocks.fill(cairn::dist::block);
    std::array<int, N> slabs{};
    slabs.fill(1);
    slabs[0] = w.size();
    const auto l =
        c % 4 == 1 ? random_layout<N>(g, all, shape) : cairn::layout<N>(all, shape, blocks, slabs);
    SCOPED_TRACE("in place, case " + std::to_string(c));
    cairn::fft_plan<Real, N> plan(l, l, cairn::fft_kind::c2c, opts);
    const auto key = seed * 100 + static_cast<std::uint64_t>(c);
    for (const int sign : {FFTW_FORWARD, FFTW_BACKWARD}) {
      const reference<static_cast<std::size_t>(N)> ref(shape, key, cairn::fft_kind::c2c, sign);
      cairn::darray<cplx, N> x(l);
      x.fill([&](const auto& gi) { return cplx(ref.in(gi, shape)); });
      if (sign == FFTW_FORWARD)
        plan.forward(x, x);
      else
        plan.backward(x, x);
      double err = 0;
      x.for_each([&](const auto& gi, const cplx& v) {
        err = std::max(err, std::abs(std::complex<double>(v) - ref.out(gi, shape)));
      });
      EXPECT_LE(worst_of(w, err / ref.scale()), tolerance<Real>) << plan;
    }
  }
}

TEST(Fft, InPlace) {
  run([](cairn::world& w) {
    in_place_cases<double, 3>(w, 61, 8, 9);
    in_place_cases<double, 2>(w, 62, 8, 15);
    in_place_cases<double, 2>(w, 64, 4, 300);  // sizes where out-of-place plans fail in place
    in_place_cases<float, 2>(w, 63, 4, 12);
  });
}

// A plan is reused: many transforms with changing data, and a plan moved to another variable.
TEST(Fft, PlanReused) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const std::array<std::int64_t, 3> shape{6, 7, 10};
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    const cairn::layout<3> l(all, shape,
                             {cairn::dist::block, cairn::dist::block, cairn::dist::block});
    cairn::fft_plan<double, 3> first(l, l, cairn::fft_kind::c2c, opts);
    cairn::fft_plan<double, 3> plan = std::move(first);
    cairn::fft_steps steps;
    for (std::uint64_t rep = 0; rep < 4; ++rep) {
      const reference<3> ref(shape, 700 + rep, cairn::fft_kind::c2c, FFTW_FORWARD);
      cairn::darray<std::complex<double>, 3> x(l), y(l);
      x.fill([&](const auto& gi) { return ref.in(gi, shape); });
      plan.forward(x, y);
      double err = 0;
      y.for_each([&](const auto& gi, const std::complex<double>& v) {
        err = std::max(err, std::abs(v - ref.out(gi, shape)));
      });
      EXPECT_LE(worst_of(w, err / ref.scale()), 1e-12);
    }
    const std::string moved = message_of([&] {
      cairn::darray<std::complex<double>, 3> x(l), y(l);
      first.forward(x, y);  // NOLINT(bugprone-use-after-move): the moved-from state is checked
    });
    EXPECT_TRUE(has_text(moved, "the plan was moved from")) << moved;
  });
}

TEST(Fft, StepsAreCounted) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    for (const bool shared : {false, true}) {
      cairn::fft_steps steps;
      cairn::fft_options opts;
      opts.rigor = cairn::fft_rigor::estimate;
      opts.steps = &steps;
      opts.shared_columns = shared;
      const cairn::layout<2> in(all, {9, 8}, {cairn::dist::cyclic, cairn::dist::block});
      const cairn::layout<2> out(all, {9, 5}, {cairn::dist::block, cairn::dist::cyclic});
      cairn::fft_plan<double, 2> plan(in, out, cairn::fft_kind::r2c, opts);
      cairn::darray<double, 2> x(in);
      cairn::darray<std::complex<double>, 2> y(out);
      plan.forward(x, y);
      plan.backward(y, x);
      EXPECT_EQ(steps.transforms, 2);
      EXPECT_GE(steps.redistribute_s, 0.0);
      EXPECT_GT(steps.local_fft_s, 0.0);
      std::ostringstream text;
      text << plan;
      if (has_text(text.str(), "in every rank's slab")) {
        // The output is in the first batch's slabs (a grid of P x 1): the columns are done in
        // every rank's slab, and only the input (forward) and output (backward) move.
        EXPECT_TRUE(shared);
        EXPECT_EQ(steps.transfer.transfers, 2);
        EXPECT_GT(steps.columns_s, 0.0);
      } else {
        // One rank: every layout is the same placement, nothing moves. More: at least the
        // input, between the batches and the output, both ways.
        EXPECT_GE(steps.transfer.transfers, w.size() > 1 ? 4 : 0);
        EXPECT_EQ(steps.columns_s, 0.0);
      }
    }
  });
}

TEST(Fft, Schedules) {
  cairn::fft_options o;
  std::ostringstream a, b, c, d;
  a << cairn::plan_fft_schedule({64, 64, 64}, 4, cairn::fft_kind::r2c, o);
  EXPECT_EQ(a.str(),
            "fft r2c [64 x 64 x 64] over 4 ranks, slabs: dims {1,2} on grid 4x1x1; "
            "dims {0} on grid 1x4x1");
  b << cairn::plan_fft_schedule({8, 8, 8}, 16, cairn::fft_kind::c2c, o);
  EXPECT_EQ(b.str(),
            "fft c2c [8 x 8 x 8] over 16 ranks, pencils: dims {2} on grid 4x4x1; "
            "dims {1} on grid 4x1x4; dims {0} on grid 1x4x4");
  o.pencil_grid = {3, 2};
  o.decomposition = cairn::fft_decomposition::pencils;
  c << cairn::plan_fft_schedule({9, 9, 9}, 6, cairn::fft_kind::c2c, o);
  EXPECT_EQ(c.str(),
            "fft c2c [9 x 9 x 9] over 6 ranks, pencils: dims {2} on grid 3x2x1; "
            "dims {1} on grid 3x1x2; dims {0} on grid 1x3x2");
  d << cairn::plan_fft_schedule({10, 3}, 1, cairn::fft_kind::c2c, {});
  EXPECT_EQ(d.str(), "fft c2c [10 x 3] over 1 rank, slabs: dims {0,1} on grid 1x1");
  EXPECT_TRUE(
      has_text(message_of([&] {
                 (void)cairn::plan_fft_schedule({4, 4, 4}, 5, cairn::fft_kind::c2c, o, "x", 2);
               }),
               "cairn::x: rank 2: pencil grid 3x2 does not cover the group of 5 ranks"));
  cairn::fft_options p;
  p.decomposition = cairn::fft_decomposition::pencils;
  EXPECT_TRUE(has_text(message_of([&] {
                         (void)cairn::plan_fft_schedule({4, 4}, 2, cairn::fft_kind::c2c, p);
                       }),
                       "pencils need 3 dimensions, the shape has 2"));
  EXPECT_TRUE(has_text(message_of([&] {
                         (void)cairn::plan_fft_schedule({4, 0, 2}, 2, cairn::fft_kind::c2c, {});
                       }),
                       "extent 0 of dimension 1"));
}

// Ranks that plan different transforms all fail at once, naming the first rank that differs
// from rank 0 and what it passed, instead of taking different steps and waiting forever.
TEST(Fft, RanksDisagree) {
  run([](cairn::world& w) {
    if (w.size() < 2) return;
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const int me = w.rank(), last = w.size() - 1;
    const std::string prefix = "cairn::fft_plan: rank " + std::to_string(me) + ": ";
    const cairn::layout<3> l(all, {6, 5, 4},
                             {cairn::dist::block, cairn::dist::block, cairn::dist::block},
                             {w.size(), 1, 1});
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    const auto plan_with = [&](const cairn::layout<3>& in, const cairn::fft_options& o) {
      return message_of([&] { cairn::fft_plan<double, 3>(in, l, cairn::fft_kind::c2c, o); });
    };
    cairn::fft_options off = opts;
    off.shared_columns = me != 1;
    std::string m = plan_with(l, off);
    EXPECT_TRUE(has_text(m, prefix + "ranks disagree on the plan: rank 1 passes shared_columns 0, "
                                     "rank 0 passes 1"))
        << m;
    cairn::fft_options rigor = opts;
    if (me == last) rigor.rigor = cairn::fft_rigor::measure;
    m = plan_with(l, rigor);
    EXPECT_TRUE(has_text(m, prefix + "ranks disagree on the plan: rank " + std::to_string(last) +
                                " passes rigor (0 estimate, 1 measure, 2 patient) 1, rank 0 "
                                "passes 0"))
        << m;
    cairn::fft_options tile = opts;
    tile.column_tile = me == last ? 7 : 0;
    m = plan_with(l, tile);
    EXPECT_TRUE(has_text(m, prefix + "ranks disagree on the plan: rank " + std::to_string(last) +
                                " passes column_tile 7, rank 0 passes 0"))
        << m;
    // Rank 0 alone deals dimension 0 cyclically (blocks of 3 elsewhere): every other rank
    // differs from it.
    const std::int64_t rows = 2 * w.size() + 1;
    const auto rows_by = [&](cairn::dim_dist d) {
      return cairn::layout<3>(all, {rows, 5, 4}, {d, cairn::dist::block, cairn::dist::block},
                              {w.size(), 1, 1});
    };
    const auto blocks = rows_by(cairn::dist::block);
    m = message_of([&] {
      cairn::fft_plan<double, 3>(me == 0 ? rows_by(cairn::dist::cyclic) : blocks, blocks,
                                 cairn::fft_kind::c2c, opts);
    });
    EXPECT_TRUE(has_text(m, prefix + "ranks disagree on the plan: rank 1 passes input layout's "
                                     "dimension 0 block 3, rank 0 passes 1"))
        << m;
    // Agreeing ranks plan and transform as before.
    cairn::fft_plan<double, 3> fine(l, l, cairn::fft_kind::c2c, opts);
    EXPECT_EQ(fine.schedule().ranks, w.size());
  });
}

TEST(Fft, BadInput) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const int me = w.rank();
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    const cairn::layout<2> in(all, {6, 8}, {cairn::dist::block, cairn::dist::block});
    const cairn::layout<2> half(all, {6, 5}, {cairn::dist::block, cairn::dist::block});
    const std::string prefix = "cairn::fft_plan: rank " + std::to_string(me) + ": ";
    EXPECT_TRUE(has_text(
        message_of([&] { cairn::fft_plan<double, 2>(in, in, cairn::fft_kind::r2c, opts); }),
        prefix + "a r2c transform of [6 x 8]"))
        << message_of([&] { cairn::fft_plan<double, 2>(in, in, cairn::fft_kind::r2c, opts); });
    EXPECT_TRUE(has_text(
        message_of([&] { cairn::fft_plan<double, 2>(in, in, cairn::fft_kind::r2c, opts); }),
        "needs an output of shape [6 x 5]"));
    cairn::fft_plan<double, 2> plan(in, half, cairn::fft_kind::r2c, opts);
    const cairn::layout<2> other(all, {6, 8}, {cairn::dist::cyclic, cairn::dist::block});
    cairn::darray<double, 2> x(other);
    cairn::darray<std::complex<double>, 2> y(half), c(in);
    const std::string m = message_of([&] { plan.forward(x, y); });
    EXPECT_TRUE(has_text(
        m, "cairn::fft_plan::forward: rank " + std::to_string(me) + ": the input has the layout "))
        << m;
    EXPECT_TRUE(has_text(m, ", the plan's is ")) << m;
    EXPECT_TRUE(has_text(message_of([&] { plan.forward(c, y); }), "a c2c transform on a r2c plan"));
    if (w.size() > 1) {
      const cairn::group one = w.group(cairn::ranks{0, 1});
      if (me == 0) {
        const cairn::layout<2> small(one, {6, 8}, {cairn::dist::block, cairn::dist::block});
        EXPECT_TRUE(has_text(
            message_of([&] { cairn::fft_plan<double, 2>(in, small, cairn::fft_kind::c2c, opts); }),
            "the input and output layouts are over different groups"));
      }
    }
  });
}

}  // namespace

namespace {

// HPF/MPI's two-task pipeline: task A (the first half of the ranks) transforms rows and sends,
// task B (the rest) receives and transforms columns; several datasets stream through, each
// checked on B against FFTW's 2-D transform.
template <class Real>
void two_task_case(cairn::world& w, cairn::fft_kind kind, std::array<std::int64_t, 2> shape,
                   std::uint64_t seed) {
  using cplx = std::complex<Real>;
  const int na = (w.size() + 1) / 2;
  const cairn::group a = w.group(cairn::ranks{0, na}), b = w.group(cairn::ranks{na, w.size()});
  auto cshape = shape;
  if (kind == cairn::fft_kind::r2c) cshape[1] = shape[1] / 2 + 1;
  const cairn::layout<2> rows(a, shape, {cairn::dist::block_cyclic(2), cairn::dist::block},
                              {a.size(), 1});
  const cairn::layout<2> cols(b, cshape, {cairn::dist::block, cairn::dist::cyclic}, {1, b.size()});
  cairn::fft_options opts;
  opts.rigor = cairn::fft_rigor::estimate;
  cairn::fft_two_task<Real> plan(rows, cols, kind, opts);
  constexpr int datasets = 5;
  if (a.rank() >= 0) {
    for (int d = 0; d < datasets; ++d) {
      const reference<2> ref(shape, seed + static_cast<std::uint64_t>(d), kind, FFTW_FORWARD);
      if (kind == cairn::fft_kind::r2c) {
        cairn::darray<Real, 2> x(rows);
        x.fill([&](const auto& gi) { return static_cast<Real>(ref.in(gi, shape).real()); });
        plan.send(x);  // x goes away at once: the plan sends from its own buffers
      } else {
        cairn::darray<cplx, 2> x(rows);
        x.fill([&](const auto& gi) { return cplx(ref.in(gi, shape)); });
        plan.send(x);
      }
    }
    plan.flush();
  } else {
    for (int d = 0; d < datasets; ++d) {
      const reference<2> ref(shape, seed + static_cast<std::uint64_t>(d), kind, FFTW_FORWARD);
      cairn::darray<cplx, 2> y(cols);
      plan.receive(y);
      double err = 0;
      y.for_each([&](const auto& gi, const cplx& v) {
        err = std::max(err, std::abs(std::complex<double>(v) - ref.out(gi, shape)));
      });
      EXPECT_LE(err / ref.scale(), tolerance<Real>) << "dataset " << d << ": " << plan;
    }
  }
}

TEST(Fft, TwoTaskPipeline) {
  run([](cairn::world& w) {
    if (w.size() < 2) return;  // two tasks need two ranks
    two_task_case<double>(w, cairn::fft_kind::c2c, {12, 10}, 900);
    two_task_case<double>(w, cairn::fft_kind::r2c, {7, 16}, 910);
    two_task_case<float>(w, cairn::fft_kind::r2c, {9, 5}, 920);
  });
}

// Ranks of the two tasks that plan different pipelines all fail at once instead of waiting
// in redistributions that do not match.
TEST(Fft, TwoTaskRanksDisagree) {
  run([](cairn::world& w) {
    if (w.size() < 2) return;
    const int me = w.rank(), last = w.size() - 1;
    const std::string prefix =
        "cairn::fft_two_task: rank " + std::to_string(me) + ": ranks disagree on the plan: rank ";
    const int na = (w.size() + 1) / 2;
    const cairn::group a = w.group(cairn::ranks{0, na}), b = w.group(cairn::ranks{na, w.size()});
    const auto rows_by = [&](cairn::dim_dist d, std::int64_t n) {
      return cairn::layout<2>(a, {9, n}, {d, cairn::dist::block}, {a.size(), 1});
    };
    const auto cols_of = [&](std::int64_t n) {
      return cairn::layout<2>(b, {9, n}, {cairn::dist::block, cairn::dist::block}, {1, b.size()});
    };
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    // The last rank asks for r2c (with the columns that fit it), the others for c2c.
    const bool real = me == last;
    std::string m = message_of([&] {
      cairn::fft_two_task<double>(rows_by(cairn::dist::block, 8), cols_of(real ? 5 : 8),
                                  real ? cairn::fft_kind::r2c : cairn::fft_kind::c2c, opts);
    });
    EXPECT_TRUE(has_text(
        m, prefix + std::to_string(last) + " passes kind (0 c2c, 1 r2c) 1, rank 0 passes 0"))
        << m;
    // Rank 1 cuts its transfers into more slabs.
    cairn::fft_options chunked = opts;
    chunked.transfer.chunks = me == 1 ? 3 : 1;
    m = message_of([&] {
      cairn::fft_two_task<double>(rows_by(cairn::dist::block, 8), cols_of(8), cairn::fft_kind::c2c,
                                  chunked);
    });
    EXPECT_TRUE(has_text(m, prefix + "1 passes transfer.chunks 3, rank 0 passes 1")) << m;
    // Rank 0 alone deals the rows cyclically (blocks of ceil(9 / A's ranks) elsewhere).
    m = message_of([&] {
      cairn::fft_two_task<double>(rows_by(me == 0 ? cairn::dist::cyclic : cairn::dist::block, 8),
                                  cols_of(8), cairn::fft_kind::c2c, opts);
    });
    const std::string block = std::to_string((9 + a.size() - 1) / a.size());
    EXPECT_TRUE(has_text(
        m, prefix + "1 passes rows layout's dimension 0 block " + block + ", rank 0 passes 1"))
        << m;
    // Rank 1 sees task A as rank 0 alone (and so task B as the rest).
    if (w.size() > 2) {
      const int split = me == 1 ? 1 : na;
      const cairn::group a2 = w.group(cairn::ranks{0, split});
      const cairn::group b2 = w.group(cairn::ranks{split, w.size()});
      m = message_of([&] {
        cairn::fft_two_task<double>(
            cairn::layout<2>(a2, {9, 8}, {cairn::dist::block, cairn::dist::block}, {a2.size(), 1}),
            cairn::layout<2>(b2, {9, 8}, {cairn::dist::block, cairn::dist::block}, {1, b2.size()}),
            cairn::fft_kind::c2c, opts);
      });
      EXPECT_TRUE(
          has_text(m, prefix + "1 passes task A's ranks 1, rank 0 passes " + std::to_string(na)))
          << m;
    }
  });
}

TEST(Fft, TwoTaskBadInput) {
  run([](cairn::world& w) {
    const int me = w.rank();
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const cairn::layout<2> rows(all, {6, 8}, {cairn::dist::block, cairn::dist::block},
                                {w.size(), 1});
    const std::string m = message_of([&] { cairn::fft_two_task<double>(rows, rows); });
    EXPECT_TRUE(has_text(m, "cairn::fft_two_task: rank " + std::to_string(me) +
                                ": world rank 0 "
                                "is in both tasks"))
        << m;
    if (w.size() < 2) return;
    const cairn::group a = w.group(cairn::ranks{0, 1}), b = w.group(cairn::ranks{1, w.size()});
    const cairn::layout<2> split(a, {6, 8}, {cairn::dist::block, cairn::dist::block}, {1, 1});
    const cairn::layout<2> cols_wrong(b, {6, 8}, {cairn::dist::block, cairn::dist::block},
                                      {b.size(), 1});
    if (b.size() > 1) {
      const std::string c = message_of([&] { cairn::fft_two_task<double>(split, cols_wrong); });
      EXPECT_TRUE(has_text(c, "splits the columns (its grid must be 1 in dimension 0)")) << c;
    }
    const cairn::layout<2> cols(b, {6, 8}, {cairn::dist::block, cairn::dist::block}, {1, b.size()});
    const std::string r =
        message_of([&] { cairn::fft_two_task<double>(split, cols, cairn::fft_kind::r2c); });
    EXPECT_TRUE(has_text(r, "needs columns of shape [6 x 5]")) << r;
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    cairn::fft_two_task<double> plan(split, cols, cairn::fft_kind::c2c, opts);
    if (me == 0) {
      cairn::darray<double, 2> real(split);
      EXPECT_TRUE(has_text(message_of([&] { plan.send(real); }), "a r2c dataset on a c2c plan"));
      cairn::darray<std::complex<double>, 2> y(cols);
      EXPECT_TRUE(has_text(message_of([&] { plan.receive(y); }), "in task A (the rows): it sends"));
    }
  });
}

}  // namespace
