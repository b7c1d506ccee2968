// The transforms along dimension 0 of slabs straight in every rank's memory
// (shared_columns.hpp).

#include "shared_columns.hpp"

#include <algorithm>
#include <cstring>

#include "cairn/runtime/detail/fail.hpp"

namespace cairn::detail {

template <class Real>
shared_columns<Real>::shared_columns(const char* call, int world_rank, const layout_desc& slabs,
                                     int me, int sign, unsigned flags, std::int64_t tile,
                                     std::int64_t run_bytes)
    : me_(me) {
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
  // Dimension 0 is the grid's first (its coordinate is the group rank), in blocks: each rank's
  // rows follow the previous rank's.
  row_begin_.assign(static_cast<std::size_t>(p) + 1, 0);
  row_start_.resize(static_cast<std::size_t>(rows_));
  for (std::int64_t i = 0; i < rows_; ++i) {
    ++row_begin_[static_cast<std::size_t>(rows.owner(i)) + 1];
    row_start_[static_cast<std::size_t>(i)] = rows.local(i) * columns_;
  }
  for (int q = 0; q < p; ++q)
    row_begin_[static_cast<std::size_t>(q) + 1] += row_begin_[static_cast<std::size_t>(q)];
  runs_.reserve(static_cast<std::size_t>(rows_));
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
void shared_columns<Real>::run(const std::uintptr_t* parts, rank_context* ctx, const int* world_of,
                               const char* call) const {
  constexpr auto es = static_cast<std::int64_t>(2 * sizeof(Real));
  auto* const tile = static_cast<std::byte*>(tile_.get());
  const int p = static_cast<int>(row_begin_.size()) - 1;
  // Moves the tile's rows of every rank: gathers them, or (`write`) scatters them back.
  const auto move = [&](std::int64_t c0, std::int64_t w, bool write) {
    const auto bytes = static_cast<std::size_t>(w * es);
    for (int q = 0; q < p; ++q) {
      const std::int64_t b = row_begin_[static_cast<std::size_t>(q)];
      const std::int64_t e = row_begin_[static_cast<std::size_t>(q) + 1];
      // Only scattering writes a part (peer_run holds both ways' addresses unqualified).
      auto* const part = reinterpret_cast<std::byte*>(parts[2 * q + (write ? 1 : 0)]);
      const auto there = [&](std::int64_t i) {
        return part + (row_start_[static_cast<std::size_t>(i)] + c0) * es;
      };
      if (!ctx || q == me_) {
        for (std::int64_t i = b; i < e; ++i)
          std::memcpy(write ? there(i) : tile + i * w * es, write ? tile + i * w * es : there(i),
                      bytes);
      } else if (b != e) {
        runs_.clear();
        for (std::int64_t i = b; i < e; ++i)
          runs_.push_back(peer_run{tile + i * w * es, there(i), bytes});
        copy_with_peer(*ctx, call, world_of[q], write, runs_.data(), runs_.size());
      }
    }
  };
  for (std::int64_t t = first_; t < end_; ++t) {
    const std::int64_t c0 = t * width_;
    const std::int64_t w = std::min(width_, columns_ - c0);
    move(c0, w, false);
    (w == width_ ? full_ : last_).execute(tile, tile);
    move(c0, w, true);
  }
}

template class shared_columns<double>;
template class shared_columns<float>;

}  // namespace cairn::detail
