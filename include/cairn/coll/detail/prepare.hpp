#pragma once
/// \file
/// Internal: the non-template boundary between the typed collective calls and the library: a
/// bound reduction operation and the entry points that plan and start a collective.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn {
struct generalized_reduce_options;
}  // namespace cairn

namespace cairn::coll {
class schedule;
}  // namespace cairn::coll

namespace cairn::detail {

class rank_context;
struct group_members;

/// Whether `op` is commutative: is_commutative_v<Op> (cairn's operations, the standard
/// function objects, specializations), else its `commutative` member read at run time
/// (cairn::op), else false.
template <class Op>
constexpr bool op_commutative(const Op& op) {
  if constexpr (is_commutative_v<Op>)
    return true;
  else if constexpr (requires { op.commutative; })
    return static_cast<bool>(op.commutative);
  else
    return false;
}

/// A reduction operation with its element type erased.
struct op_binding {
  /// to[i] = from[i] op to[i] (from_is_left) or to[i] op from[i], for n elements.
  void (*combine)(const void* op, const void* from, void* to, std::size_t n,
                  bool from_is_left) = nullptr;
  std::shared_ptr<const void> op;  ///< the operation object
  std::size_t elem = 1;            ///< element size in bytes
  bool commutative = true;
};

template <class T, class Op>
void combine_typed(const void* op, const void* from, void* to, std::size_t n, bool from_is_left) {
  const Op& f = *static_cast<const Op*>(op);
  const T* a = static_cast<const T*>(from);
  T* b = static_cast<T*>(to);
  if (from_is_left)
    for (std::size_t i = 0; i < n; ++i) b[i] = f(a[i], b[i]);
  else
    for (std::size_t i = 0; i < n; ++i) b[i] = f(b[i], a[i]);
}

// The predefined arithmetic and bitwise operations on the arithmetic types, as X(type, op):
// their combine_typed is compiled once, in the library (src/coll/engine/combine.cpp, with its
// loops vectorized), not in the caller's code, whose flags may not vectorize them (g++ 12 does
// not at -O2: a 64 KiB allreduce of doubles on 2 threads ranks took 2.81 against 2.25 us).
// clang-format off
#define CAIRN_DETAIL_NUMBER_COMBINES(X, T) \
  X(T, ::cairn::plus) X(T, ::cairn::multiplies) X(T, ::cairn::min) X(T, ::cairn::max)
#define CAIRN_DETAIL_INTEGER_COMBINES(X, T) \
  CAIRN_DETAIL_NUMBER_COMBINES(X, T)        \
  X(T, ::cairn::bit_and) X(T, ::cairn::bit_or) X(T, ::cairn::bit_xor)
#define CAIRN_DETAIL_BUILTIN_COMBINES(X)                  \
  CAIRN_DETAIL_INTEGER_COMBINES(X, signed char)           \
  CAIRN_DETAIL_INTEGER_COMBINES(X, unsigned char)         \
  CAIRN_DETAIL_INTEGER_COMBINES(X, short)                 \
  CAIRN_DETAIL_INTEGER_COMBINES(X, unsigned short)        \
  CAIRN_DETAIL_INTEGER_COMBINES(X, int)                   \
  CAIRN_DETAIL_INTEGER_COMBINES(X, unsigned)              \
  CAIRN_DETAIL_INTEGER_COMBINES(X, long)                  \
  CAIRN_DETAIL_INTEGER_COMBINES(X, unsigned long)         \
  CAIRN_DETAIL_INTEGER_COMBINES(X, long long)             \
  CAIRN_DETAIL_INTEGER_COMBINES(X, unsigned long long)    \
  CAIRN_DETAIL_NUMBER_COMBINES(X, float)                  \
  CAIRN_DETAIL_NUMBER_COMBINES(X, double)
// clang-format on
#define CAIRN_DETAIL_EXTERN_COMBINE(T, Op) \
  extern template void combine_typed<T, Op>(const void*, const void*, void*, std::size_t, bool);
CAIRN_DETAIL_BUILTIN_COMBINES(CAIRN_DETAIL_EXTERN_COMBINE)
#undef CAIRN_DETAIL_EXTERN_COMBINE

/// Binds `op` for elements of type T.
template <class T, class Op>
op_binding bind_op(const Op& op) {
  if constexpr (std::is_empty_v<Op> && std::is_default_constructible_v<Op>) {
    // Stateless operations (plus, min, ...) share one static object: no allocation per call.
    static const Op shared{};
    return op_binding{&combine_typed<T, Op>,
                      std::shared_ptr<const void>(std::shared_ptr<const void>{}, &shared),
                      sizeof(T), op_commutative(op)};
  } else {
    return op_binding{&combine_typed<T, Op>, std::make_shared<Op>(op), sizeof(T),
                      op_commutative(op)};
  }
}

/// Where a collective runs: the rank, the group and this rank's place in it.
struct coll_target {
  rank_context* ctx;
  std::shared_ptr<const group_members> members;
  int group_rank;  ///< this rank in the group
  int world_rank;  ///< this rank in the world (for error messages)
};

/// The buffers of a collective on fixed-size blocks (gather, scatter, allgather, alltoall,
/// reduce_scatter_block) or of a scan, with element counts as the caller passed them; the
/// entry points check them against the group size and each other.
struct block_buffers {
  const void* in = nullptr;   ///< the caller's input
  std::size_t in_count = 0;   ///< elements in `in`
  void* out = nullptr;        ///< the caller's output
  std::size_t out_count = 0;  ///< elements in `out`
  std::size_t elem = 1;       ///< element size in bytes
  /// The in-place form (cairn::in_place): `in` and `out` are the caller's one buffer, which
  /// holds the input where the collective documents it (this rank's block at its place, ...).
  bool in_place = false;
};

/// The collectives that may run on the node board (shared memory, no messages).
enum class board_collective : std::uint8_t {
  none,
  barrier,
  bcast,
  reduce,
  allreduce,
  reduce_generalized,
  allgather,            ///< bytes: one rank's block; out: every block, in group order
  reduce_scatter_block  ///< bytes: one rank's block (its output); in: one block per rank
};

/// How a board collective moves its data: `automatic` through the slots up to their payload and
/// straight between the buffers beyond (src/coll/board/shared_memory_direct.cpp); `direct`
/// straight at every size; `staged` through the staging rings in pipelined chunks
/// (src/coll/board/shared_memory_staged.cpp).
enum class board_path : std::uint8_t { automatic, direct, staged };

/// A planned collective bound to its buffers: what a start needs. Starting it again (a
/// persistent collective) reuses the plan; starts must come in the same order on every member.
struct prepared {
  // A constructor rather than an aggregate: aggregate initialization zero-fills the whole
  // object first (a measurable part of a short collective's cost).
  prepared() = default;
  prepared(coll_target t, const char* c, std::shared_ptr<const coll::schedule> p, const void* i,
           void* o, op_binding b, std::size_t bytes = 0, int root = -1, bool check = false)
      : target(std::move(t)),
        call(c),
        plan(std::move(p)),
        in(i),
        out(o),
        op(std::move(b)),
        check_bytes(bytes),
        check_root(root),
        checked(check) {}

  coll_target target{};
  const char* call = "";
  std::shared_ptr<const coll::schedule> plan;
  const void* in = nullptr;
  void* out = nullptr;
  op_binding op;
  /// The call's signature, the same on every member when the call is right (CAIRN_COLL_CHECK):
  /// bytes per rank and the root (-1: none); not checked when `checked` is false (v-collectives,
  /// whose counts legitimately differ).
  std::size_t check_bytes = 0;
  int check_root = -1;
  bool checked = false;
  /// Set (with no plan) when the collective runs on the node board; its signature is then
  /// always checked (check_bytes, check_root).
  board_collective board = board_collective::none;
  /// Set with `board` and a plan: the plan runs by messages once every member's signature met
  /// on the board (a gate: where counts on either side of a board threshold would put ranks on
  /// different paths, every rank reports the disagreement instead of waiting forever).
  bool gate = false;
  /// Set with `board`: how the data moves.
  board_path path = board_path::automatic;
  /// A generalized reduce on the board: the group's first `board_participants` ranks
  /// contribute, the world ranks in `board_receivers` (sorted) receive.
  std::int32_t board_participants = 0;
  std::shared_ptr<const std::vector<int>> board_receivers;
};

/// Starts a prepared collective (moves its plan and operation into the running collective).
request start_prepared(prepared&& p);
/// Starts a prepared collective again (a persistent collective's start).
request start_prepared(const prepared& p);
/// Gives a board collective (which runs without a plan) a plan to print: its name
/// ("allreduce/shared_memory"), group size and rank, no steps.
void describe_board_plan(prepared& p);
/// Reserves the number (in issue order) of a collective on the group of `t` that is started
/// later with start_reserved: the later stage of a non-blocking collective of several stages
/// (sizes, then the data) keeps its place among the collectives issued after it.
std::uint32_t reserve_collective(const coll_target& t);
/// Gives back a number reserved for a collective that is never started (its tag is free
/// again; a group's collectives wait for their tag while it is held).
void release_collective(const coll_target& t, std::uint32_t seq);
/// Starts `p` as the collective numbered `seq` on its group (reserve_collective). `p` must run
/// by messages: a v-collective, or one with its algorithm forced off the board; a gate is
/// dropped (every member computed the same sizes).
request start_reserved(prepared&& p, std::uint32_t seq);
/// Runs a prepared collective to its end (a blocking call: on the board without a request,
/// else started and waited for).
void run_blocking(prepared&& p);

/// Per-rank element counts and displacements of a v-collective (displacements in elements
/// from the buffer's start; empty = packed in rank order).
struct vector_layout {
  std::span<const std::size_t> counts;
  std::span<const std::size_t> displs;
};

// The prepare functions check the arguments (throwing cairn::error before anything is sent),
// choose the algorithm (`automatic`: CAIRN_COLL, then the default table) and plan.
prepared prepare_barrier(const coll_target& t, const char* call);
prepared prepare_bcast(const coll_target& t, const char* call, void* buf, std::size_t bytes,
                       int root, bcast_algorithm alg);
prepared prepare_reduce(const coll_target& t, const char* call, const void* in, void* out,
                        std::size_t count, int root, const op_binding& op, reduce_algorithm alg);
prepared prepare_allreduce(const coll_target& t, const char* call, const void* in, void* out,
                           std::size_t count, const op_binding& op, allreduce_algorithm alg);

/// The longest allreduce (bytes per rank) that run_short_allreduce takes: what a board slot
/// carries. (Where the table moves shorter ones straight between the buffers, as on the threads
/// engine from 1 KiB, the short path moves them so too.) Measured on 2 MPI-engine ranks against
/// the prepared call: 8 B 0.107-0.133 against 0.142-0.188 us; from 8 KiB no difference beyond
/// the noise.
inline constexpr std::size_t short_allreduce_max = 16384;
/// A blocking allreduce of at most short_allreduce_max bytes that the selection table puts on
/// the node board of `t`, the world (or a group of every rank in world order: board_on_world),
/// run there without being planned when nothing else of the rank's is on the board
/// (src/coll/board/shared_memory_flat.cpp). True if it ran (its data moved, or its error was
/// raised); false if it did nothing and must be prepared.
bool run_short_allreduce(const coll_target& t, const char* call, const void* in, void* out,
                         std::size_t count, const op_binding& op);
/// A blocking barrier on the world (as there) that the table puts on the board, run as
/// run_short_allreduce runs a short allreduce: true if it ran.
bool run_short_barrier(const coll_target& t, const char* call);
/// A blocking barrier: run_short_barrier where it takes it, else prepared and run.
inline void run_barrier(const coll_target& t, const char* call) {
  if (!run_short_barrier(t, call)) run_blocking(prepare_barrier(t, call));
}
/// A blocking allreduce (count elements checked): run_short_allreduce where it takes it, else
/// prepared and run.
inline void run_allreduce(const coll_target& t, const char* call, const void* in, void* out,
                          std::size_t count, const op_binding& op, allreduce_algorithm alg) {
  if (alg == allreduce_algorithm::automatic && count * op.elem <= short_allreduce_max &&
      run_short_allreduce(t, call, in, out, count, op))
    return;
  run_blocking(prepare_allreduce(t, call, in, out, count, op, alg));
}
/// Gather: the block is `b.in_count` elements; on the root `b.out` holds at least group size x
/// block. In place: the buffer holds group size x block, this rank's block at its place.
prepared prepare_gather(const coll_target& t, const char* call, const block_buffers& b, int root);
/// Scatter: the block is `b.out_count` elements; on the root `b.in` holds at least group size x
/// block. In place: the buffer holds group size x block; this rank's block stays (root) or
/// lands (elsewhere) at its place.
prepared prepare_scatter(const coll_target& t, const char* call, const block_buffers& b, int root);
/// Allgather: the block is `b.in_count` elements; `b.out` holds at least group size x block.
/// In place: the buffer holds group size x block, this rank's block at its place.
prepared prepare_allgather(const coll_target& t, const char* call, const block_buffers& b,
                           allgather_algorithm alg);
/// Alltoall: `b.in_count` is a multiple of the group size; `b.out` holds at least as many. In
/// place: the buffer's blocks are sent and replaced by the received ones.
prepared prepare_alltoall(const coll_target& t, const char* call, const block_buffers& b,
                          alltoall_algorithm alg);
/// Reduce-scatter (block): the block is `b.out_count` elements; `b.in` holds at least group
/// size x block; they must not overlap. A forced ring needs a commutative `op`. In place: the
/// buffer holds group size x block, the result lands in its first block.
prepared prepare_reduce_scatter_block(const coll_target& t, const char* call,
                                      const block_buffers& b, const op_binding& op,
                                      reduce_scatter_block_algorithm alg);
/// Inclusive scan: `b.out_count` equals `b.in_count`; they must not overlap (in place: one
/// buffer).
prepared prepare_scan(const coll_target& t, const char* call, const block_buffers& b,
                      const op_binding& op);
/// Exclusive scan: as prepare_scan; the output of group rank 0 is not written.
prepared prepare_exscan(const coll_target& t, const char* call, const block_buffers& b,
                        const op_binding& op);
/// Gatherv: this rank sends `b.in_count` elements; on the root, `recv` (group size entries)
/// places rank r's block in `b.out`.
prepared prepare_gatherv(const coll_target& t, const char* call, const block_buffers& b,
                         vector_layout recv, int root);
/// Scatterv: this rank receives `b.out_count` elements; on the root, `send` (group size
/// entries) picks rank r's block from `b.in`.
prepared prepare_scatterv(const coll_target& t, const char* call, const block_buffers& b,
                          vector_layout send, int root);
/// Allgatherv: this rank sends `b.in_count` elements (= recv.counts[rank]); `recv` places
/// rank r's block in `b.out`.
prepared prepare_allgatherv(const coll_target& t, const char* call, const block_buffers& b,
                            vector_layout recv);
/// Alltoallv: `send` picks the block for rank r from `b.in`, `recv` places rank r's block in
/// `b.out`.
prepared prepare_alltoallv(const coll_target& t, const char* call, const block_buffers& b,
                           vector_layout send, vector_layout recv);
/// Reduce-scatter with per-rank counts: `b.in` holds the blocks packed in rank order (the sum
/// of `counts`), rank r gets block r reduced in `b.out` (at least counts[rank] elements).
prepared prepare_reduce_scatter(const coll_target& t, const char* call, const block_buffers& b,
                                std::span<const std::size_t> counts, const op_binding& op);

/// Generalized reduce on the world of `t`: checks the rank sets and the buffers (cairn::error
/// before anything is sent), builds the group P ∪ R (participants in increasing rank order, then
/// the other receivers in increasing order) and plans (plans are cached per rank), recording the
/// graph in `opt.balancer` if any. `in_count`/`out_count` are elements as the caller passed them.
prepared prepare_reduce_generalized(const coll_target& t, const char* call,
                                    std::span<const int> participants,
                                    std::span<const int> receivers, const void* in,
                                    std::size_t in_count, void* out, std::size_t out_count,
                                    const op_binding& op, const generalized_reduce_options& opt);

}  // namespace cairn::detail
