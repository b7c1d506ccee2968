#pragma once
/// \file
/// Algorithm choices a caller may force per call (default: chosen by message and group size
/// from the default table, which the environment variable CAIRN_COLL may override), and the
/// selection table itself for tools (cairn-info). On any group of ranks sharing one node,
/// `automatic` picks `shared_memory` for barrier and for bcast, reduce and allreduce up to
/// 16384 bytes (barrier has no algorithm argument: CAIRN_COLL=barrier=dissemination keeps it on
/// messages). Collectives with one algorithm: gather and scatter (binomial), gatherv and
/// scatterv (linear), allgatherv (ring), alltoallv (pairwise), reduce_scatter (pairwise), scan
/// and exscan (recursive doubling).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

/// Broadcast algorithms.
enum class bcast_algorithm {
  automatic,          ///< binomial below 512 KiB or on 2 ranks, else scatter + allgather
  binomial,           ///< binomial tree, log2 p steps (src/coll/bcast_binomial.cpp)
  scatter_allgather,  ///< van de Geijn, about 2 bytes per rank
                      ///< (src/coll/bcast_scatter_allgather.cpp)
  shared_memory,      ///< on a group of one node, up to 16384 bytes: through shared memory, no
                      ///< messages (the world: src/coll/shared_memory_flat.cpp; other groups:
                      ///< src/coll/shared_memory_group.cpp)
};

/// Reduce algorithms.
enum class reduce_algorithm {
  automatic,              ///< binomial below 512 KiB, on 2 ranks or with fewer elements than
                          ///< ranks, else reduce-scatter + gather
  binomial,               ///< binomial tree (src/coll/reduce_binomial.cpp)
  reduce_scatter_gather,  ///< Rabenseifner's reduce (src/coll/reduce_scatter_gather.cpp)
  shared_memory,          ///< as bcast_algorithm::shared_memory
};

/// Allreduce algorithms.
enum class allreduce_algorithm {
  automatic,           ///< recursive doubling below 64 KiB (or fewer elements than ranks);
                       ///< from 64 KiB Rabenseifner, from 256 KiB ring for commutative
                       ///< operations on more than 2 ranks
  recursive_doubling,  ///< butterfly with a fold for non-powers of two
                       ///< (src/coll/allreduce_recursive_doubling.cpp)
  ring,                ///< reduce-scatter + allgather rings, commutative operations only
                       ///< (src/coll/allreduce_ring.cpp)
  rabenseifner,   ///< recursive halving + recursive doubling (src/coll/allreduce_rabenseifner.cpp)
  shared_memory,  ///< as bcast_algorithm::shared_memory; operands combined in rank order
};

/// Allgather algorithms.
enum class allgather_algorithm {
  automatic,  ///< below 64 KiB of gathered data (size() x block) recursive doubling
              ///< on powers of two, else Bruck; from 64 KiB ring
  ring,       ///< p - 1 neighbour steps, bandwidth-optimal (src/coll/allgather_ring.cpp)
  bruck,      ///< ceil(log2 p) steps for any p, latency-optimal (src/coll/allgather_bruck.cpp)
  recursive_doubling,  ///< log2 p exchanges, folded for non-powers of two
                       ///< (src/coll/allgather_recursive_doubling.cpp)
};

/// Alltoall algorithms.
enum class alltoall_algorithm {
  automatic,  ///< Bruck for blocks up to 256 bytes on more than 4 ranks, else pairwise
  pairwise,   ///< p - 1 exchange steps (src/coll/alltoall_pairwise.cpp)
  bruck,      ///< ceil(log2 p) steps of packed blocks (src/coll/alltoall_bruck.cpp)
};

/// Reduce-scatter (block) algorithms.
enum class reduce_scatter_block_algorithm {
  automatic,  ///< ring for commutative operations from 256 KiB of input (size() x block)
              ///< on more than 2 ranks, else recursive halving (always for non-commutative ops)
  recursive_halving,  ///< log2 p steps, operands in rank order, any operation
                      ///< (src/coll/reduce_scatter_block_recursive_halving.cpp)
  ring,               ///< p - 1 neighbour steps, commutative operations only
                      ///< (src/coll/reduce_scatter_block_ring.cpp)
};

namespace coll {

/// A collective and its algorithms; `algorithms[i]` is the name of enum value i + 1 of the
/// collective's `*_algorithm` enum (value 0 is `automatic`).
struct collective_algorithms {
  std::string collective;               ///< e.g. "allreduce"
  std::vector<std::string> algorithms;  ///< e.g. {"recursive_doubling", "ring", "rabenseifner"}
  std::string size_meaning;             ///< what the byte sizes of the table measure
};

/// Every collective with its algorithms.
const std::vector<collective_algorithms>& algorithm_catalog();

/// One rule of a CAIRN_COLL selection: use `algorithm` for `collective` when the message size
/// lies in [min_bytes, max_bytes].
struct selection_rule {
  std::string collective;  ///< a name of algorithm_catalog()
  std::string algorithm;   ///< one of its algorithms
  std::size_t min_bytes = 0;
  std::size_t max_bytes = static_cast<std::size_t>(-1);
};

/// Parses a CAIRN_COLL string: comma-separated entries `collective=algorithm[@min-max]`, where
/// min and max are byte sizes (either may be empty; suffixes k, m, g for KiB, MiB, GiB), e.g.
/// "allreduce=ring@1048576-,alltoall=bruck@-256". Throws cairn::error naming the bad entry.
std::vector<selection_rule> parse_selection(std::string_view spec);

/// The rules of the environment variable CAIRN_COLL (read and parsed once; empty if unset).
/// Throws cairn::error naming the bad entry. A rule applies only where the caller asked for
/// `automatic`; a rule for an algorithm that cannot run the call (a ring for a non-commutative
/// operation) is skipped for that call.
const std::vector<selection_rule>& environment_selection();

/// The default table, one human-readable line per collective (what `automatic` picks).
std::vector<std::string> default_selection();

}  // namespace coll
}  // namespace cairn
