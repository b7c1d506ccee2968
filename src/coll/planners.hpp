#pragma once
// Schedule planners, one algorithm per file (src/coll/<collective>_<algorithm>.cpp). Each is a
// pure function of the group size p, this rank's group rank and the message size.

#include <cstddef>

#include "cairn/coll/schedule.hpp"

namespace cairn::coll {

/// Dissemination barrier: ceil(log2 p) rounds of zero-byte messages.
schedule plan_barrier_dissemination(int p, int me);

/// Binomial-tree broadcast of `bytes` from group rank `root` (sends after the one receive all
/// go in one round).
schedule plan_bcast_binomial(int p, int me, int root, std::size_t bytes);

/// Binomial-tree reduce to `root`. With a non-commutative operation the tree is rooted at
/// rank 0 (each subtree is a contiguous rank range, so operands stay in rank order) and the
/// result is forwarded to `root`.
schedule plan_reduce_binomial(int p, int me, int root, std::size_t bytes, bool commutative);

/// Recursive-doubling (butterfly) allreduce. Non-powers of two fold first: with a commutative
/// operation as in Aspen (section 2.1: ranks beyond the largest power of two p' send to
/// rank - p', which take part in the butterfly and send the result back), otherwise adjacent
/// pairs (2i, 2i+1) fold so that operands stay in rank order. 2 + floor(log2 p) rounds of
/// messages when p is not a power of two, log2 p when it is.
schedule plan_allreduce_recursive_doubling(int p, int me, std::size_t bytes, std::size_t elem,
                                           bool commutative);

/// Ring allreduce (reduce-scatter ring then allgather ring, 2(p-1) rounds, each rank sends
/// about 2 bytes (p-1)/p): bandwidth-optimal for long vectors. Commutative operations only.
schedule plan_allreduce_ring(int p, int me, std::size_t bytes, std::size_t elem);

}  // namespace cairn::coll
