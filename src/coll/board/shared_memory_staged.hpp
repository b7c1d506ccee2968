#pragma once
// Staged board collectives (shared_memory_staged.cpp): bcast, reduce, allreduce, allgather and
// reduce_scatter_block on the world copied through the ranks' staging rings in node memory, in
// pipelined chunks, instead of straight between the buffers.

#include <cstddef>
#include <cstdint>

#include "cairn/coll/algorithms.hpp"
#include "coll/board/shared_memory_flat.hpp"
#include "coll/engine/coll_rank.hpp"

namespace cairn::detail {

class rank_context;

/// The chunking in force: coll::default_staging(), or CAIRN_COLL_CHUNK and CAIRN_COLL_DEPTH
/// (read once; the same on every rank). A shape the ring cannot hold raises cairn::error naming
/// `call` and `rank`.
coll::staging_shape staging_config(const char* call, int rank);

/// One staged collective's progress on this rank, in chunks of this collective.
struct staged_progress {
  std::uint64_t base = 0;    ///< the chunks of earlier staged collectives (board_progress)
  std::uint64_t chunks = 0;  ///< this collective's chunks
  std::size_t elem = 1;      ///< bytes per element (a bcast's and an allgather's: 1)
  std::size_t chunk_elems = 0, slot_bytes = 0, depth = 0;
  std::uint64_t staged = 0, reduced = 0, copied = 0;
};

/// Starts staged collective `e` on the world: its chunking, counted after `base` chunks.
staged_progress begin_staged(rank_context& ctx, const board_call& e, std::uint64_t base);

/// Moves this rank's part of staged collective `e` as far as the other ranks' counters allow
/// (every rank published `e` and the signatures agree); true once it is done, with every
/// counter at p.base + p.chunks. Else `wait` receives the counter awaited. Peers never touch
/// this rank's buffers, only its ring, so the collective may finish here at once.
bool advance_staged(rank_context& ctx, const node_staging& s, const board_call& e,
                    staged_progress& p, board_wait& wait);

}  // namespace cairn::detail
