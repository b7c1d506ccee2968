#pragma once
/// \file
/// Distributed FFTs of `darray`s: 2-D and 3-D, complex-to-complex and real-to-complex /
/// complex-to-real, double and float. A plan (`fft_plan`) is made once from the input and output
/// layouts and reused: its schedule (`fft_schedule`, a printable value) says which layout the data
/// takes for each batch of local transforms (slabs or pencils); cairn's redistribution plans move
/// it between them, FFTW does the local transforms. Link `cairn::fft`.

#include <array>
#include <complex>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include "cairn/array/darray.hpp"
#include "cairn/array/transfer.hpp"

namespace cairn {

/// What a distributed FFT transforms.
enum class fft_kind : std::uint8_t {
  c2c,  ///< complex to complex, both ways
  r2c,  ///< real to complex forward (the last dimension keeps n/2 + 1), complex to real backward
};

/// How the array is cut for the local transforms.
enum class fft_decomposition : std::uint8_t {
  automatic,  ///< slabs while every rank gets a slab in both steps, else pencils (3-D)
  slabs,      ///< one distributed dimension: 2-D rows then columns; 3-D planes then lines
  pencils,    ///< 3-D: two distributed dimensions (a p0 x p1 grid), three batches of lines
};

/// How hard FFTW's planner searches (FFTW_ESTIMATE, FFTW_MEASURE, FFTW_PATIENT). Measuring takes
/// seconds for large local transforms but finds plans several times faster than estimating.
enum class fft_rigor : std::uint8_t { estimate, measure, patient };

/// Scaling of a transform's output (FFTW computes unscaled transforms).
enum class fft_scale : std::uint8_t {
  none,       ///< unscaled: a forward then backward transform multiplies by the element count
  full,       ///< divided by the number of elements of the (real) shape
  symmetric,  ///< divided by the square root of that number
};

/// Time this rank spent in the steps of distributed FFTs, added up over every transform run
/// with this record in fft_options::steps.
struct fft_steps {
  double local_fft_s = 0;     ///< FFTW's local transforms
  double copy_s = 0;          ///< scaling and copies outside the redistributions
  transfer_steps transfer;    ///< the redistributions (packing, transmission, unpacking)
  double redistribute_s = 0;  ///< wall time inside the redistributions (start to completion)
  /// Transforms along dimension 0 done in every rank's slab (fft_options::shared_columns): the
  /// tiles' copies and transforms, and the two collectives around them.
  double columns_s = 0;
  std::int64_t transforms = 0;  ///< distributed transforms completed
};

/// Options of a distributed FFT plan.
struct fft_options {
  /// Slabs or pencils.
  fft_decomposition decomposition = fft_decomposition::automatic;
  /// Pencils' process grid p0 x p1 (product: the group size); zeros: the most square one.
  std::array<int, 2> pencil_grid{0, 0};
  /// FFTW's planning rigor.
  fft_rigor rigor = fft_rigor::measure;
  /// How the redistributions move data (straight copies, chunked pipelining). `steps` and
  /// `on_slab` are ignored: use fft_options::steps.
  transfer_options transfer{};
  /// If set, this rank adds each transform's step times to `*steps` (must outlive the plan).
  fft_steps* steps = nullptr;
  /// Where a rank reaches its peers' memory (the threads engine on one node; the MPI engine on
  /// one node with cross-memory copies, as straight array transfers), a slab plan whose output
  /// is in its first batch's layout transforms along dimension 0 straight in every rank's
  /// slab, a tile of columns at a time, instead of transposing the array there and back. The
  /// same on every rank of the group.
  bool shared_columns = true;
  /// Columns per tile of those transforms (0: rows of 256 bytes in a tile, 16 double complex
  /// columns; across processes 8 KiB).
  std::int64_t column_tile = 0;
};

/// One batch of local transforms of a schedule: the layout the data has during it (process
/// grid over the group, every transformed dimension whole on each rank) and the dimensions
/// transformed, in the order a forward transform visits the batches.
struct fft_stage {
  std::vector<int> grid;  ///< process grid extent per dimension (BLOCK distribution)
  std::vector<int> dims;  ///< dimensions transformed in this batch
};

/// The rank-independent schedule of a distributed FFT: a value, printable, computed from the
/// shape, the group size, the kind and the options alone.
struct fft_schedule {
  fft_kind kind = fft_kind::c2c;                               ///< what is transformed
  std::vector<std::int64_t> shape;                             ///< the (real, for r2c) global shape
  int ranks = 1;                                               ///< group size
  fft_decomposition decomposition = fft_decomposition::slabs;  ///< slabs or pencils (chosen)
  std::vector<fft_stage> stages;                               ///< in forward order
  /// The complex shape: `shape`, with the last dimension n/2 + 1 for r2c.
  [[nodiscard]] std::vector<std::int64_t> complex_shape() const;
};

/// The schedule of an FFT of `shape` (2 or 3 dimensions) over `ranks` ranks. No communication.
/// Throws cairn::error (naming `call` and `rank`) on an unsupported rank count of dimensions or
/// a pencil grid that does not match `ranks`.
fft_schedule plan_fft_schedule(const std::vector<std::int64_t>& shape, int ranks, fft_kind kind,
                               const fft_options& opts, const char* call = "plan_fft_schedule",
                               int rank = -1);

/// Prints "fft r2c [64 x 64 x 64] over 4 ranks, pencils: dims {2} on grid 2x2x1, ...".
std::ostream& operator<<(std::ostream& os, const fft_schedule& s);

namespace detail {
template <class Real>
class fft_engine;
/// Layout, in the shape `shape`, of the grid `grid` over `g` (BLOCK everywhere).
layout_desc fft_block_desc(const char* call, int rank, int group_size,
                           const std::vector<std::int64_t>& shape, const std::vector<int>& grid);
}  // namespace detail

/// A distributed FFT of arrays of `Real` (double or float) with N = 2 or 3 dimensions, between a
/// space-domain layout `in` and a frequency-domain layout `out` over one group. c2c: both hold
/// std::complex<Real> in the same shape. r2c: `in` holds Real in the shape n, `out` holds
/// std::complex<Real> in n with the last dimension n/2 + 1 (FFTW's half spectrum). Any layouts
/// (distributions, grids, empty ranks): the plan redistributes where they differ from its
/// schedule. Every rank of the group makes the plan and runs each transform, in the same order.
/// Not for use by two threads at once (it holds the work buffers); one plan per rank.
template <class Real, int N>
class fft_plan {
  static_assert(std::is_same_v<Real, double> || std::is_same_v<Real, float>,
                "cairn::fft_plan: Real is double or float");
  static_assert(N == 2 || N == 3, "cairn::fft_plan: 2-D or 3-D");

 public:
  /// Complex element type.
  using complex = std::complex<Real>;
  /// Space-domain element type: Real for r2c, complex for c2c.
  template <fft_kind K>
  using space_type = std::conditional_t<K == fft_kind::r2c, Real, complex>;

  /// Plans the transform between `in` (space) and `out` (frequency). Every rank of the layouts'
  /// group calls it with the same layouts, kind and options: ranks that differ all throw
  /// cairn::error naming the first rank that differs and what it passed (one allgather of the
  /// plan's facts). Throws cairn::error on layouts over different groups, shapes that do not
  /// match `kind`, or bad options. Planning with fft_rigor::measure runs FFTW's measurements.
  fft_plan(const layout<N>& in, const layout<N>& out, fft_kind kind = fft_kind::c2c,
           const fft_options& opts = {});
  /// Frees the plan's FFTW plans and buffers.
  ~fft_plan();
  /// Moves the plan (the moved-from plan refuses to run).
  fft_plan(fft_plan&&) noexcept;
  /// Moves the plan (the moved-from plan refuses to run).
  fft_plan& operator=(fft_plan&&) noexcept;
  fft_plan(const fft_plan&) = delete;
  fft_plan& operator=(const fft_plan&) = delete;

  /// c2c forward transform (FFTW's sign -1) of `in` (layout `in`) into `out` (layout `out`).
  /// `in` is left as it is, unless it is `out`: where the plan's two layouts are one, one
  /// array may be both and is transformed in place.
  void forward(const darray<complex, N>& in, darray<complex, N>& out,
               fft_scale scale = fft_scale::none);
  /// c2c backward transform (sign +1) of `in` (layout `out`) into `out` (layout `in`); in
  /// place like forward().
  void backward(const darray<complex, N>& in, darray<complex, N>& out,
                fft_scale scale = fft_scale::none);
  /// r2c forward transform of `in` (layout `in`) into the half spectrum `out` (layout `out`).
  void forward(const darray<Real, N>& in, darray<complex, N>& out,
               fft_scale scale = fft_scale::none);
  /// c2r backward transform of the half spectrum `in` (layout `out`) into `out` (layout `in`).
  /// `in` is left as it is (FFTW's c2r transforms overwrite their input: the plan copies first
  /// where that input would be yours).
  void backward(const darray<complex, N>& in, darray<Real, N>& out,
                fft_scale scale = fft_scale::none);

  /// The schedule.
  [[nodiscard]] const fft_schedule& schedule() const noexcept;
  /// The space-domain layout.
  [[nodiscard]] const layout<N>& in_layout() const noexcept { return in_; }
  /// The frequency-domain layout.
  [[nodiscard]] const layout<N>& out_layout() const noexcept { return out_; }
  /// What one transform does on this rank: the schedule and the steps (redistributions, local
  /// transforms, copies) with their buffers.
  friend std::ostream& operator<<(std::ostream& os, const fft_plan& p) { return p.print(os); }

 private:
  std::ostream& print(std::ostream& os) const;
  layout<N> in_;
  layout<N> out_;
  std::unique_ptr<detail::fft_engine<Real>> engine_;
};

/// The layout of the data when a forward transform's first batch of local transforms runs (for
/// r2c: in the real shape): an input in this layout is transformed without a redistribution
/// first.
template <int N>
layout<N> fft_space_layout(const group& g, const std::array<std::int64_t, N>& shape,
                           fft_kind kind = fft_kind::c2c, const fft_options& opts = {});

/// The layout of the data after a forward transform's last batch (in the complex shape): an
/// output in this layout needs no redistribution at the end.
template <int N>
layout<N> fft_frequency_layout(const group& g, const std::array<std::int64_t, N>& shape,
                               fft_kind kind = fft_kind::c2c, const fft_options& opts = {});

}  // namespace cairn
