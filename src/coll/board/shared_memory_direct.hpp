#pragma once
// Board collectives longer than a slot's payload (shared_memory_direct.cpp): bcast, reduce,
// allreduce, the generalized reduce, allgather and reduce_scatter_block, whose ranks publish the
// addresses of their buffers on the board instead of their data, and then move the data straight
// between the members' buffers.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "coll/board/shared_memory_flat.hpp"

namespace cairn::detail {

class rank_context;

/// What a direct board collective's slot carries in place of data: its owner's buffers. A
/// reduce-scatter's peers write nothing into its output: `out` there names where its input's
/// first block is read (the input, or the copy an in-place call kept: board_call::first_block).
struct direct_buffers {
  std::uint64_t in = 0, out = 0;
};

/// Writes buffers `in` and `out` into a slot's payload.
inline void publish_buffers(std::byte* payload, const void* in, const void* out) noexcept {
  const direct_buffers b{reinterpret_cast<std::uintptr_t>(in),
                         reinterpret_cast<std::uintptr_t>(out)};
  std::memcpy(payload, &b, sizeof b);
}
/// Writes the buffers of `e` into a slot's payload (what a direct collective publishes).
inline void publish_buffers(std::byte* payload, const board_call& e) noexcept {
  const std::byte* second = e.out;
  if (e.kind == board_collective::reduce_scatter_block)
    second = e.first_block.empty() || e.in != e.out ? e.in : e.first_block.data();
  publish_buffers(payload, e.in, second);
}
/// The buffers a direct collective published in a slot's payload.
inline direct_buffers published_buffers(const std::byte* payload) noexcept {
  direct_buffers b;
  std::memcpy(&b, payload, sizeof b);
  return b;
}

/// True if board collectives of `kind` carrying `bytes` per rank (board_call::carried) move data
/// straight between the ranks' buffers (longer than a slot's payload) rather than through the
/// slots.
bool board_moves_direct(board_collective kind, std::size_t bytes) noexcept;
/// True if a board collective of `kind` and `bytes` on `path` moves straight between the
/// buffers: forced (direct), or past a slot's payload (automatic); never staged.
inline bool board_moves_direct(board_collective kind, std::size_t bytes, board_path path) noexcept {
  return path == board_path::direct ||
         (path == board_path::automatic && board_moves_direct(kind, bytes));
}

/// Moves this rank's share of direct board collective `e` once every member published
/// (signatures checked and equal): `members` are the world ranks in group order, `me` and
/// `root` (e.root) group ranks, `bufs[q]` member q's buffers. Returns an error text, empty if
/// every byte moved. The caller must not let the collective complete on any member before
/// every member returned from this (their buffers are read and written until then).
std::string move_direct(rank_context& ctx, const board_call& e, std::span<const int> members,
                        int me, std::span<const direct_buffers> bufs);

}  // namespace cairn::detail
