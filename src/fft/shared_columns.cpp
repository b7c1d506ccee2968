// The transforms along dimension 0 of slabs straight in every rank's memory
// (shared_columns.hpp).

#include "shared_columns.hpp"

#include <algorithm>
#include <cstring>

#include "cairn/runtime/detail/fail.hpp"

namespace cairn::detail {

namespace {

// Bytes of a row's run in a tile when its width is chosen: four cache lines. Measured on 2
// threads ranks (cairn-bench fft, double complex, tiles of 8, 16, 32 and 64 columns): 16 was
// fastest at 128^3 r2c (a tile of 32 KiB), at 1024^2 (256 KiB) and at 4096^2 (1 MiB); runs of
// one line (4 columns) were slower than the two transposes at 1024^2.
constexpr std::int64_t run_bytes = 256;

}  // namespace

template <class Real>
shared_columns<Real>::shared_columns(const char* call, int world_rank, const layout_desc& slabs,
                                     int me, int sign, unsigned flags, std::int64_t tile) {
  constexpr auto es = static_cast<std::int64_t>(2 * sizeof(Real));
  const dim_map& rows = slabs.dims[0];
  rows_ = rows.n;
  columns_ = 1;
  for (int d = 1; d < slabs.ndim; ++d) {
    if (slabs.dims[static_cast<std::size_t>(d)].g != 1)
      fail(call, world_rank, "transforms along dimension 0 in place need dimension ", d,
           " whole on every rank, not on a grid of ", slabs.dims[static_cast<std::size_t>(d)].g);
    columns_ *= slabs.dims[static_cast<std::size_t>(d)].n;
  }
  if (tile < 0) fail(call, world_rank, "a tile of ", tile, " columns");
  width_ = tile != 0 ? tile : run_bytes / es;
  width_ = std::clamp<std::int64_t>(width_, 1, columns_);
  const std::int64_t tiles = (columns_ + width_ - 1) / width_;
  const int p = slabs.grid_size();
  first_ = tiles * me / p;
  end_ = tiles * (me + 1) / p;
  row_rank_.resize(static_cast<std::size_t>(rows_));
  row_start_.resize(static_cast<std::size_t>(rows_));
  for (std::int64_t i = 0; i < rows_; ++i) {
    // Dimension 0 is the grid's first: its coordinate is the group rank.
    row_rank_[static_cast<std::size_t>(i)] = rows.owner(i);
    row_start_[static_cast<std::size_t>(i)] = rows.local(i) * columns_;
  }
  if (first_ == end_) return;
  const std::vector<int> dim0{0};
  const auto plan = [&](std::int64_t width) {
    const std::int64_t shape[2] = {rows_, width};
    return local_transform<Real>(call, world_rank, "a tile of columns", local_kind::c2c, sign, 2,
                                 shape, shape, dim0, true, flags);
  };
  full_ = plan(width_);
  if (const std::int64_t rest = columns_ % width_; rest != 0 && end_ == tiles) last_ = plan(rest);
  tile_ = fftw_buffer<Real>(static_cast<std::size_t>(rows_ * width_ * es));
}

template <class Real>
void shared_columns<Real>::run(const std::byte* const* from, std::byte* const* to) const {
  constexpr auto es = static_cast<std::int64_t>(2 * sizeof(Real));
  auto* const tile = static_cast<std::byte*>(tile_.get());
  for (std::int64_t t = first_; t < end_; ++t) {
    const std::int64_t c0 = t * width_;
    const std::int64_t w = std::min(width_, columns_ - c0);
    const auto run_bytes = static_cast<std::size_t>(w * es);
    for (std::int64_t i = 0; i < rows_; ++i) {
      const auto r = static_cast<std::size_t>(i);
      std::memcpy(tile + i * w * es, from[row_rank_[r]] + (row_start_[r] + c0) * es, run_bytes);
    }
    (w == width_ ? full_ : last_).execute(tile, tile);
    for (std::int64_t i = 0; i < rows_; ++i) {
      const auto r = static_cast<std::size_t>(i);
      std::memcpy(to[row_rank_[r]] + (row_start_[r] + c0) * es, tile + i * w * es, run_bytes);
    }
  }
}

template class shared_columns<double>;
template class shared_columns<float>;

}  // namespace cairn::detail
