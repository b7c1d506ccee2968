#pragma once
// The transforms along dimension 0 of slabs, done straight in every rank's memory: where a rank
// reaches its peers' memory (the threads engine on one node by pointers, the MPI engine on one
// node by cross-memory copies, detail::copy_with_peer), a slab FFT need not transpose the
// array to make dimension 0 local and transpose it back. Each rank takes a share of the
// columns (the flattened indices of the other dimensions), copies a tile of them from every
// rank's slab into a buffer of its own, transforms the tile there (in cache) and copies it back
// into every rank's slab: the data crosses memory twice instead of four times, and the strided
// transforms over the whole array become transforms of a tile. The caller brackets run() with
// the exchange of the ranks' buffer addresses and a barrier (fft_engine::run_columns).

#include <cstdint>
#include <vector>

#include "cairn/array/detail/layout_desc.hpp"
#include "cairn/array/detail/transfer.hpp"
#include "local_transform.hpp"

namespace cairn::detail {

template <class Real>
class shared_columns {
 public:
  shared_columns() = default;
  /// Plans group rank `me`'s share of the transforms (FFTW sign `sign`) along dimension 0 of
  /// the complex array in layout `slabs` (dimension 0 in blocks over the group, the others
  /// whole), `tile` columns at a time (0: runs of `run_bytes` bytes).
  shared_columns(const char* call, int world_rank, const layout_desc& slabs, int me, int sign,
                 unsigned flags, std::int64_t tile, std::int64_t run_bytes);

  /// Transforms the share: `parts[2 q]` and `parts[2 q + 1]` are the addresses of group rank
  /// q's local parts to read and to write (the same to transform in place). Every rank's parts
  /// must stay put until all ranks ran. Without `ctx` the parts are in this address space; with
  /// it, other ranks' parts are in their processes (world rank `world_of[q]`), copied by
  /// copy_with_peer.
  void run(const std::uintptr_t* parts, rank_context* ctx, const int* world_of,
           const char* call) const;

  /// Columns per tile.
  [[nodiscard]] std::int64_t tile() const noexcept { return width_; }
  /// This rank's tiles.
  [[nodiscard]] std::int64_t tiles() const noexcept { return end_ - first_; }
  /// The columns of one row (the product of the extents of dimensions 1 and on).
  [[nodiscard]] std::int64_t columns() const noexcept { return columns_; }

 private:
  std::int64_t rows_ = 0;             // dimension 0's extent
  std::int64_t columns_ = 0;          // columns per row
  std::int64_t width_ = 0;            // columns per tile (the last may have fewer)
  std::int64_t first_ = 0, end_ = 0;  // this rank's tiles
  int me_ = 0;
  // Rows [row_begin_[q], row_begin_[q + 1]) are group rank q's (blocks), each row's first
  // element at row_start_[row] in its part.
  std::vector<std::int64_t> row_begin_;
  std::vector<std::int64_t> row_start_;
  mutable std::vector<peer_run> runs_;  // run(): one peer's rows of a tile
  local_transform<Real> full_, last_;   // a tile of width_ columns; the last, narrower one
  fftw_buffer<Real> tile_;
};

}  // namespace cairn::detail
