#pragma once
// Staged board collectives (shared_memory_staged.cpp): bcast, reduce, allreduce, allgather and
// reduce_scatter_block on the world or a group copied through the ranks' staging rings in node
// memory, in pipelined chunks, instead of straight between the buffers.

#include <cstddef>
#include <cstdint>
#include <span>

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

/// The staging areas (node_staging) a staged collective copies through, by the rank's place q
/// in its group: q's area and world rank. `bells`: a group's board, whose members' doorbells
/// each publication rings (they watch those: shared_memory_group.cpp); null on the world,
/// where a parked rank watches the word it awaits.
struct staging_members {
  std::span<std::byte* const> areas;
  std::span<const int> world;
  const node_board* bells = nullptr;
};

/// Starts staged collective `e` on `ranks` ranks whose rings hold `ring_bytes`: its chunking,
/// counted after `base` chunks.
staged_progress begin_staged(rank_context& ctx, const board_call& e, std::uint64_t base, int ranks,
                             std::size_t ring_bytes);

/// Moves the part of group rank `me` in staged collective `e` as far as the other ranks'
/// counters allow (every rank published `e` and the signatures agree); true once it is done,
/// with every counter at p.base + p.chunks. Else `wait` receives the counter awaited. Peers
/// never touch this rank's buffers, only its ring, so the collective may finish here at once.
bool advance_staged(rank_context& ctx, const staging_members& m, int me, const board_call& e,
                    staged_progress& p, board_wait& wait);

}  // namespace cairn::detail
