#pragma once
/// \file
/// Algorithm choices a caller may force per call (default: chosen by message and group size).
/// Scan and exscan have one algorithm, recursive doubling (Hillis-Steele, ceil(log2 p) steps,
/// operands in rank order; src/coll/scan_recursive_doubling.cpp, exscan_recursive_doubling.cpp).

namespace cairn {

/// Allreduce algorithms.
enum class allreduce_algorithm {
  automatic,           ///< recursive doubling below 256 KiB or for non-commutative ops, else ring
  recursive_doubling,  ///< butterfly with a fold for non-powers of two (src/coll/allreduce_recursive_doubling.cpp)
  ring,                ///< reduce-scatter + allgather rings (src/coll/allreduce_ring.cpp)
};

/// Allgather algorithms.
enum class allgather_algorithm {
  automatic,  ///< Bruck below 64 KiB of gathered data (size() x block), else ring
  ring,       ///< p - 1 neighbour steps, bandwidth-optimal (src/coll/allgather_ring.cpp)
  bruck,      ///< ceil(log2 p) steps for any p, latency-optimal (src/coll/allgather_bruck.cpp)
};

/// Reduce-scatter (block) algorithms.
enum class reduce_scatter_block_algorithm {
  automatic,          ///< ring for commutative operations from 256 KiB of input (size() x block)
                      ///< on more than 2 ranks, else recursive halving (always for non-commutative ops)
  recursive_halving,  ///< log2 p steps, operands in rank order, any operation
                      ///< (src/coll/reduce_scatter_block_recursive_halving.cpp)
  ring,               ///< p - 1 neighbour steps, commutative operations only
                      ///< (src/coll/reduce_scatter_block_ring.cpp)
};

}  // namespace cairn
