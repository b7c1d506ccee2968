#pragma once
// The flat shared-memory collectives (shared_memory_flat.cpp): barrier, bcast, reduce and
// allreduce on the world through the node board, and the choice between them and those on
// groups (shared_memory_group.hpp).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/schedule.hpp"
#include "coll/engine/executor.hpp"
#include "transport/request_state.hpp"

namespace cairn::detail {

class rank_context;

/// The bytes of input a board collective of `kind` with `bytes` per rank carries in its slot on a
/// board of `ranks` members: a reduce-scatter's whole input (a block per member), else `bytes`.
inline std::size_t board_carried(board_collective kind, std::size_t bytes,
                                 std::size_t ranks) noexcept {
  return kind == board_collective::reduce_scatter_block ? bytes * ranks : bytes;
}

/// Null if board collective `kind` of `bytes` per rank (an allgather's or reduce-scatter's block)
/// on `t` can run on the board (every rank shares the node; the payload fits a slot, or the
/// collective moves its data straight between the buffers where the engine can:
/// shared_memory_direct.hpp) by `path` (direct: straight at every size; staged: through the staging
/// rings, shared_memory_staged.hpp); else why not, as the end of a sentence
/// ("needs ...").
const char* board_refusal(const coll_target& t, board_collective kind, std::size_t bytes,
                          board_path path = board_path::automatic);
/// The algorithm name of a board path ("shared_memory", "shared_memory_direct", ...).
const char* board_algorithm_name(board_path path);
/// True if `t` is the world (or a group of all ranks in world order): its board collectives
/// run here, those of other groups in shared_memory_group.cpp.
bool board_on_world(const coll_target& t);

/// What a board collective was called with, and its error: the start of both board forms'
/// running state.
struct board_call {
  const std::byte* in = nullptr;
  std::byte* out = nullptr;
  op_binding op;
  board_collective kind = board_collective::none;
  std::size_t bytes = 0;
  int root = -1;
  const char* call = "";
  std::string error;
  /// A gate (prepared::gate): the schedule that runs by messages once the signatures agree,
  /// and its fingerprint (what the slot publishes).
  std::shared_ptr<const coll::schedule> then;
  std::uint64_t algorithm = 0;
  /// A generalized reduce: its participants (the group's first ranks) and receivers (world
  /// ranks, sorted), as in prepared.
  std::int32_t participants = 0;
  std::shared_ptr<const std::vector<int>> receivers;
  /// How its data moves (prepared::path).
  board_path path = board_path::automatic;
  /// An in-place reduce-scatter moving straight between the buffers: a copy of its input's
  /// first block, which its output overwrites while a peer may still read it (keep_first_block).
  std::vector<std::byte> first_block;

  /// The bytes of input its slot carries on a board of `ranks` members (board_carried).
  std::size_t carried(std::size_t ranks) const noexcept {
    return board_carried(kind, bytes, ranks);
  }
  /// Before a direct collective publishes its buffers: an in-place reduce-scatter keeps a copy
  /// of its input's first block for the peer that reads it (publish_buffers names the copy).
  void keep_first_block() {
    if (kind == board_collective::reduce_scatter_block && in == out)
      first_block.assign(in, in + bytes);
  }

  void bind_call(const prepared& p) {
    in = static_cast<const std::byte*>(p.in);
    out = static_cast<std::byte*>(p.out);
    op = p.op;
    kind = p.board;
    bytes = p.check_bytes;
    root = p.check_root;
    call = p.call;
    algorithm = 0;
    path = p.path;
    if (p.gate) [[unlikely]]
      bind_gate(p);
    else if (then) [[unlikely]]
      then.reset();
    participants = p.board_participants;
    if (p.board_receivers || receivers) [[unlikely]]
      receivers = p.board_receivers;
  }
  /// Sets `then` and `algorithm` for a gate (out of line: the board's calls stay short).
  void bind_gate(const prepared& p);
};

/// The collective's name in messages ("allreduce", "generalized reduce").
const char* board_name(board_collective k);
/// What a rank's slot says of its call: kind (board_collective, with direct_kind_bit or
/// staged_kind_bit where its data moves so), bytes, root (-1: none) and the algorithm's
/// fingerprint if it runs by messages (0: on the board).
inline constexpr std::uint32_t staged_kind_bit = 0x100, direct_kind_bit = 0x200;
struct board_signature {
  std::uint32_t kind;
  std::uint64_t bytes;
  int root;
  std::uint64_t algorithm;
};
/// The error of ranks that disagree: world rank `q` called `theirs`, this rank `mine`, in board
/// collective number `seq` on the world (group_size 0) or on a group.
std::string board_disagreement(int q, const board_signature& theirs, const board_signature& mine,
                               std::uint64_t seq, std::size_t group_size);

/// Runs a prepared board collective (p.board) to its end, with no request (a blocking call).
void run_on_board(const prepared& p);
/// A blocking barrier, or allreduce of `bytes` (at most short_allreduce_max), on the world (or a
/// group of every rank in world order) that the selection table puts on the board by `path`
/// (automatic or direct), run without a prepared call when the rank has nothing else on the board
/// (no collective in flight, no tail, no late error) and its slot is free; a peer that has not
/// arrived (or, for a direct one, finished) within a few polls leaves the wait to the general
/// loop. True if it ran (raising its error, if any), false if it did nothing.
bool run_short_on_board(const coll_target& t, const char* call, board_collective kind,
                        board_path path, const void* in, void* out, std::size_t bytes,
                        const op_binding& op);
/// Starts a prepared board collective; its request is a collective's (kind::layer) marked
/// by `phase == board_phase`, advanced and finished by the functions below.
request start_on_board(const prepared& p);

/// The request of a board collective whose state `exec` the rank holds (entered): marked by
/// `phase`, registered with the progress engine and advanced once.
request board_request(rank_context& ctx, const char* call, std::uint8_t phase, void* exec);

inline constexpr std::uint8_t board_phase = 1;
/// Completes the rank's board tails (board_progress) as far as they go, from the
/// rank's progress engine (coll_rank::advance).
void board_advance_tails(rank_context& ctx);
/// Completes them all, and those on groups, waiting for the other ranks' calls (the end of the
/// rank's function), and raises a disagreement one of them found.
void board_finish_tails(rank_context& ctx);
/// Advances the rank's tails (watching what they wait for when no collective on the world's
/// board is in flight); then, if `error` is empty, moves into it a disagreement a tail found
/// (raised by the later collective that completed, whose error `error` is).
void board_take_deferred(rank_context& ctx, std::string& error);
/// Completes the request `s` of a board collective (world or group) whose part is done and
/// that hands over to no gate's schedule: its error is `error`, or else a disagreement a tail
/// found meanwhile (board_take_deferred). True (the request is done).
bool complete_board_request(rank_context& ctx, request_state* s, std::string& error);
/// The text of such a disagreement, found after the rank's `kind` #seq had returned.
std::string board_late(std::string why, board_collective kind, std::uint64_t seq);
/// As coll_advance, coll_finish, coll_cancel and coll_describe (executor.hpp) for board
/// collectives.
bool board_advance(rank_context& ctx, request_state* s);
bool board_finish(request_state* s, std::string& error);
void board_cancel(rank_context& ctx, request_state* s);
std::string board_describe(const request_state* s);

}  // namespace cairn::detail
