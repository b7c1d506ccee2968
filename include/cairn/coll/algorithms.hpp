#pragma once
/// \file
/// Algorithm choices a caller may force per call (default: chosen by message and group size).

namespace cairn {

/// Allreduce algorithms.
enum class allreduce_algorithm {
  automatic,           ///< recursive doubling below 256 KiB or for non-commutative ops, else ring
  recursive_doubling,  ///< butterfly with a fold for non-powers of two (src/coll/allreduce_recursive_doubling.cpp)
  ring,                ///< reduce-scatter + allgather rings (src/coll/allreduce_ring.cpp)
};

}  // namespace cairn
