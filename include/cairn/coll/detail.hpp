#pragma once
/// \file
/// The non-template boundary between the typed collective calls and the library: a bound
/// reduction operation and the entry points that plan and start a collective.

#include <cstddef>
#include <memory>
#include <type_traits>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::detail {

class rank_context;
struct group_members;

/// A reduction operation with its element type erased.
struct op_binding {
  /// to[i] = from[i] op to[i] (from_is_left) or to[i] op from[i], for n elements.
  void (*combine)(const void* op, const void* from, void* to, std::size_t n, bool from_is_left) =
      nullptr;
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

/// Binds `op` for elements of type T.
template <class T, class Op>
op_binding bind_op(const Op& op) {
  if constexpr (std::is_empty_v<Op> && std::is_default_constructible_v<Op>) {
    // Stateless operations (plus, min, ...) share one static object: no allocation per call.
    static const Op shared{};
    return op_binding{&combine_typed<T, Op>, std::shared_ptr<const void>(std::shared_ptr<const void>{}, &shared),
                      sizeof(T), op_commutative(op)};
  } else {
    return op_binding{&combine_typed<T, Op>, std::make_shared<Op>(op), sizeof(T), op_commutative(op)};
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
  const void* in = nullptr;    ///< the caller's input
  std::size_t in_count = 0;   ///< elements in `in`
  void* out = nullptr;        ///< the caller's output
  std::size_t out_count = 0;  ///< elements in `out`
  std::size_t elem = 1;       ///< element size in bytes
};

request start_barrier(const coll_target& t, const char* call);
request start_bcast(const coll_target& t, const char* call, void* buf, std::size_t bytes, int root);
request start_reduce(const coll_target& t, const char* call, const void* in, void* out,
                     std::size_t count, int root, const op_binding& op);
request start_allreduce(const coll_target& t, const char* call, const void* in, void* out,
                        std::size_t count, const op_binding& op, allreduce_algorithm alg);
/// Gather: checks `root` and the sizes (the block is `b.in_count` elements; on the root `b.out`
/// holds at least group size x block), plans and starts. Throws cairn::error before sending.
request start_gather(const coll_target& t, const char* call, const block_buffers& b, int root);
/// Scatter: the block is `b.out_count` elements; on the root `b.in` holds at least group size x
/// block.
request start_scatter(const coll_target& t, const char* call, const block_buffers& b, int root);
/// Allgather: the block is `b.in_count` elements; `b.out` holds at least group size x block.
request start_allgather(const coll_target& t, const char* call, const block_buffers& b,
                        allgather_algorithm alg);
/// Alltoall: `b.in_count` is a multiple of the group size; `b.out` holds at least as many.
request start_alltoall(const coll_target& t, const char* call, const block_buffers& b);
/// Reduce-scatter (block): the block is `b.out_count` elements; `b.in` holds at least group
/// size x block; they must not overlap. A forced ring needs a commutative `op`.
request start_reduce_scatter_block(const coll_target& t, const char* call, const block_buffers& b,
                                   const op_binding& op, reduce_scatter_block_algorithm alg);
/// Inclusive scan: `b.out_count` equals `b.in_count`; they must not overlap.
request start_scan(const coll_target& t, const char* call, const block_buffers& b, const op_binding& op);
/// Exclusive scan: as start_scan; the output of group rank 0 is not written.
request start_exscan(const coll_target& t, const char* call, const block_buffers& b, const op_binding& op);

}  // namespace cairn::detail
