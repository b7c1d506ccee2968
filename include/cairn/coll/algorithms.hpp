#pragma once
/// \file
/// Algorithm choices a caller may force per call, and the selection table for tools
/// (cairn-info). `automatic` (the default) takes the first rule of the selection table that
/// applies to the call and whose algorithm can run it: the rules of the environment variable
/// CAIRN_COLL first, then the default table (default_selection_table(), written in the same
/// syntax: src/coll/engine/selection_table.cpp). Which algorithm `automatic` picks for which call
/// is written there and nowhere else.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

/// Broadcast algorithms.
enum class bcast_algorithm {
  automatic,          ///< the selection table's choice
  binomial,           ///< binomial tree, log2 p steps (src/coll/algorithms/bcast_binomial.cpp)
  scatter_allgather,  ///< van de Geijn, about 2 bytes per rank
                      ///< (src/coll/algorithms/bcast_scatter_allgather.cpp)
  shared_memory,      ///< on a group of one node, no messages: through the node board up to
                  ///< 16384 bytes (the world: src/coll/board/shared_memory_flat.cpp; other groups:
                  ///< src/coll/board/shared_memory_group.cpp), straight between the buffers beyond
                  ///< where ranks can copy across processes
                  ///< (src/coll/board/shared_memory_direct.cpp)
  shared_memory_direct,  ///< as shared_memory, straight between the buffers at every size
  shared_memory_staged,  ///< on one node (the world or a group): through node memory in
                         ///< pipelined chunks, never straight between the buffers
                         ///< (src/coll/board/shared_memory_staged.cpp)
  hierarchical,          ///< across nodes: among one leader per node, then binomial inside
                         ///< each node (src/coll/algorithms/bcast_hierarchical.cpp)
};

/// Reduce algorithms.
enum class reduce_algorithm {
  automatic,              ///< the selection table's choice
  binomial,               ///< binomial tree (src/coll/algorithms/reduce_binomial.cpp)
  reduce_scatter_gather,  ///< Rabenseifner's reduce (src/coll/algorithms/reduce_scatter_gather.cpp)
  shared_memory,          ///< as bcast_algorithm::shared_memory
  shared_memory_direct,   ///< as bcast_algorithm::shared_memory_direct
  shared_memory_staged,   ///< as bcast_algorithm::shared_memory_staged; operands in rank order
  hierarchical,           ///< across nodes: binomial inside each node to its leader, then
                          ///< among the leaders (src/coll/algorithms/reduce_hierarchical.cpp)
};

/// Allreduce algorithms.
enum class allreduce_algorithm {
  automatic,             ///< the selection table's choice
  recursive_doubling,    ///< butterfly with a fold for non-powers of two
                         ///< (src/coll/algorithms/allreduce_recursive_doubling.cpp)
  ring,                  ///< reduce-scatter + allgather rings, commutative operations only
                         ///< (src/coll/algorithms/allreduce_ring.cpp)
  rabenseifner,          ///< recursive halving + recursive doubling
                         ///< (src/coll/algorithms/allreduce_rabenseifner.cpp)
  shared_memory,         ///< as bcast_algorithm::shared_memory; operands combined in rank order
  shared_memory_direct,  ///< as bcast_algorithm::shared_memory_direct
  shared_memory_staged,  ///< as bcast_algorithm::shared_memory_staged; operands in rank order
  hierarchical,          ///< across nodes: reduce inside each node, allreduce among one leader
                         ///< per node, bcast inside each node; operands in group order where
                         ///< each node holds consecutive group ranks, else commutative only
                         ///< (src/coll/algorithms/allreduce_hierarchical.cpp)
  hierarchical_slices,   ///< across nodes of equal size, for long vectors: reduce-scatter inside
                         ///< each node, each slice reduced across nodes by its own rank,
                         ///< allgather inside each node; the same order rule as hierarchical
                         ///< (src/coll/algorithms/allreduce_hierarchical_slices.cpp)
};

/// Allgather algorithms.
enum class allgather_algorithm {
  automatic,  ///< the selection table's choice
  ring,       ///< p - 1 neighbour steps, bandwidth-optimal (src/coll/algorithms/allgather_ring.cpp)
  bruck,      ///< ceil(log2 p) steps for any p, latency-optimal
              ///< (src/coll/algorithms/allgather_bruck.cpp)
  recursive_doubling,  ///< log2 p exchanges, folded for non-powers of two
                       ///< (src/coll/algorithms/allgather_recursive_doubling.cpp)
  shared_memory,  ///< as bcast_algorithm::shared_memory, with up to 16384 bytes per rank's block
                  ///< through the slots: every rank copies every block, no messages
  shared_memory_direct,  ///< as shared_memory, every rank reading the others' blocks straight
                         ///< from their buffers at every size
  shared_memory_staged,  ///< as bcast_algorithm::shared_memory_staged: every rank stages its
                         ///< block, chunk by chunk, and copies the others' out
  hierarchical,          ///< across nodes: gather to one leader per node, ring among the
                         ///< leaders, bcast inside each node
                         ///< (src/coll/algorithms/allgather_hierarchical.cpp)
};

/// Alltoall algorithms.
enum class alltoall_algorithm {
  automatic,  ///< the selection table's choice
  pairwise,   ///< p - 1 exchange steps (src/coll/algorithms/alltoall_pairwise.cpp)
  bruck,      ///< ceil(log2 p) steps of packed blocks (src/coll/algorithms/alltoall_bruck.cpp)
};

/// Reduce-scatter (block) algorithms.
enum class reduce_scatter_block_algorithm {
  automatic,          ///< the selection table's choice
  recursive_halving,  ///< log2 p steps, operands in rank order, any operation
                      ///< (src/coll/algorithms/reduce_scatter_block_recursive_halving.cpp)
  ring,               ///< p - 1 neighbour steps, commutative operations only
                      ///< (src/coll/algorithms/reduce_scatter_block_ring.cpp)
  shared_memory,  ///< as bcast_algorithm::shared_memory, with up to 16384 bytes of input per rank
                  ///< through the slots: each rank combines its block of every input, in rank
                  ///< order
  shared_memory_direct,  ///< as shared_memory, reading its block of the others' inputs straight
                         ///< from their buffers at every size
  shared_memory_staged,  ///< as bcast_algorithm::shared_memory_staged: every rank stages the
                         ///< others' blocks, chunk by chunk, and combines its own in rank order
};

namespace coll {

/// A collective and its algorithms (the names CAIRN_COLL and the table use; each names a value
/// of the collective's `*_algorithm` enum where it has one).
struct collective_algorithms {
  std::string collective;               ///< e.g. "allreduce"
  std::vector<std::string> algorithms;  ///< e.g. {"recursive_doubling", "ring", "rabenseifner"}
  std::string size_meaning;             ///< what the byte sizes of the table measure
};

/// Every collective with its algorithms (the generalized reduce as "generalized_reduce").
const std::vector<collective_algorithms>& algorithm_catalog();

/// One rule of a selection table: use `algorithm` for `collective` when the message size lies
/// in [min_bytes, max_bytes] and every condition holds.
struct selection_rule {
  std::string collective;                                ///< a name of algorithm_catalog()
  std::string algorithm;                                 ///< one of its algorithms
  std::size_t min_bytes = 0;                             ///< smallest size the rule applies to
  std::size_t max_bytes = static_cast<std::size_t>(-1);  ///< largest size the rule applies to
  /// Conditions on the call, all of which must hold, in canonical form (no spaces): a flag
  /// `commutative`, `power_of_two` (of the ranks), `count_check` (CAIRN_COLL_CHECK) or
  /// `balanced` (the generalized reduce's load balancing), `processes` (the ranks are
  /// processes: the MPI engine), or one negated with `!`; or a
  /// comparison `ranks<op>N`, `count<op>N`, `nodes<op>N`, `count<op>ranks` or `nodes<op>ranks`
  /// with op one of < <= > >= == != (ranks: the group's size; count: elements in the measured
  /// size; nodes: the nodes the group's ranks sit on).
  std::vector<std::string> conditions;
};

/// The pipeline of the staged shared-memory collectives (the algorithm shared_memory_staged):
/// bytes per chunk and chunks in flight per rank.
struct staging_shape {
  std::size_t chunk = 0;  ///< bytes per chunk (CAIRN_COLL_CHUNK overrides it)
  std::size_t depth = 0;  ///< chunks in flight per rank (CAIRN_COLL_DEPTH overrides it)
};
/// The default shape, chosen by measurement (written beside the default table).
staging_shape default_staging();

/// Parses a selection string (CAIRN_COLL, the default table): comma-separated entries
/// `collective=algorithm[@min-max][ if condition[ and condition]...]`, where min and max are
/// byte sizes (either may be empty; suffixes k, m, g for KiB, MiB, GiB), e.g.
/// "allreduce=ring@1048576-,alltoall=bruck@-256 if ranks>8". Throws cairn::error naming the
/// bad entry.
std::vector<selection_rule> parse_selection(std::string_view spec);

/// A rule in the canonical syntax parse_selection reads (sizes with the largest exact suffix:
/// "allreduce=ring@256k- if commutative and ranks>2").
std::string to_string(const selection_rule& r);

/// The rules of the environment variable CAIRN_COLL (read and parsed once; empty if unset).
/// Throws cairn::error naming the bad entry. A rule applies only where the caller asked for
/// `automatic`; a rule for an algorithm that cannot run the call (a ring for a non-commutative
/// operation, shared_memory off one node) is skipped for that call.
const std::vector<selection_rule>& environment_selection();

/// The default table, in CAIRN_COLL syntax (canonical: the rules' to_string joined by ","):
/// for each collective, the first rule that applies and can run the call picks its algorithm,
/// after CAIRN_COLL's rules; the last rule of each collective applies to every call.
std::string_view default_selection_table();

/// The default table, parsed.
const std::vector<selection_rule>& default_selection();

}  // namespace coll
}  // namespace cairn
