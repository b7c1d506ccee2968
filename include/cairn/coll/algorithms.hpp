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

/// Allgather algorithms.
enum class allgather_algorithm {
  automatic,  ///< Bruck below 64 KiB of gathered data (size() x block), else ring
  ring,       ///< p - 1 neighbour steps, bandwidth-optimal (src/coll/allgather_ring.cpp)
  bruck,      ///< ceil(log2 p) steps for any p, latency-optimal (src/coll/allgather_bruck.cpp)
};

}  // namespace cairn
