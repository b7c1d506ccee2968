#pragma once
// The selection table, resolved for the start functions: every collective's algorithms named
// (CAIRN_COLL name <-> enum value, one table per collective), the rules of CAIRN_COLL followed by
// those of the default table (coll::default_selection_table(), src/coll/engine/selection_table.cpp)
// with their collective, algorithm and conditions resolved, and the choice they make for a call.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/generalized.hpp"

namespace cairn::detail {

/// Collectives in the order of coll::algorithm_catalog().
enum class coll_id : std::uint8_t {
  barrier,
  bcast,
  reduce,
  allreduce,
  gather,
  scatter,
  allgather,
  alltoall,
  reduce_scatter_block,
  scan,
  exscan,
  gatherv,
  scatterv,
  allgatherv,
  alltoallv,
  reduce_scatter,
  generalized_reduce,
};
inline constexpr std::size_t coll_count = 17;

/// The barrier's algorithms (it takes no per-call algorithm).
enum class barrier_algorithm : std::uint8_t { automatic, dissemination, shared_memory };
/// The algorithm of a collective that has only one (gather, scan, the v-collectives, ...).
enum class sole_algorithm : std::uint8_t { automatic, sole };

/// An algorithm of a collective: its name in CAIRN_COLL and the table, its enum value (never
/// `automatic`), and what it needs to run a call (a rule naming it is skipped where it cannot).
struct algorithm_entry {
  std::string_view name;
  std::uint8_t value = 0;
  /// The node board's collective it runs (shared_memory: the board is its provider; it needs
  /// every rank on one node and a size the board takes, board_refusal), none: by messages.
  board_collective board = board_collective::none;
  bool needs_commutative = false;  ///< the operation must be commutative (the rings)
  bool needs_unbalanced = false;   ///< no load balancing asked (nothing to balance on the board)
  /// How a board algorithm moves the data (board_path).
  board_path path = board_path::automatic;
  /// A commutative operation or a group whose nodes hold consecutive group ranks (the
  /// hierarchical algorithms combine node by node).
  bool needs_node_order = false;
  /// Nodes that each hold as many of the group's ranks (hierarchical_slices).
  bool needs_equal_nodes = false;

  template <class Alg>
  constexpr algorithm_entry(std::string_view n, Alg a, board_collective b = board_collective::none,
                            bool commutative = false, bool unbalanced = false,
                            board_path how = board_path::automatic, bool node_order = false,
                            bool equal_nodes = false)
      : name(n),
        value(static_cast<std::uint8_t>(a)),
        board(b),
        needs_commutative(commutative),
        needs_unbalanced(unbalanced),
        path(how),
        needs_node_order(node_order),
        needs_equal_nodes(equal_nodes) {}
};

/// A collective: its name, what the table's sizes measure, its algorithms.
struct collective_entry {
  coll_id id;
  std::string_view name;
  std::string_view size_meaning;
  std::span<const algorithm_entry> algorithms;
};

/// Every collective (index: coll_id).
std::span<const collective_entry> collective_table();

/// The collective whose algorithms enum `Alg` names (a compile error for other types).
template <class Alg>
constexpr coll_id collective_of() {
  if constexpr (std::is_same_v<Alg, barrier_algorithm>)
    return coll_id::barrier;
  else if constexpr (std::is_same_v<Alg, bcast_algorithm>)
    return coll_id::bcast;
  else if constexpr (std::is_same_v<Alg, reduce_algorithm>)
    return coll_id::reduce;
  else if constexpr (std::is_same_v<Alg, allreduce_algorithm>)
    return coll_id::allreduce;
  else if constexpr (std::is_same_v<Alg, allgather_algorithm>)
    return coll_id::allgather;
  else if constexpr (std::is_same_v<Alg, alltoall_algorithm>)
    return coll_id::alltoall;
  else if constexpr (std::is_same_v<Alg, reduce_scatter_block_algorithm>)
    return coll_id::reduce_scatter_block;
  else if constexpr (std::is_same_v<Alg, generalized_reduce_algorithm>)
    return coll_id::generalized_reduce;
  else
    static_assert(sizeof(Alg) == 0, "not an algorithms enum of a choosing collective");
}

/// What a rule's conditions may ask about a call (the same on every member of a right call).
struct call_facts {
  std::size_t bytes = 0;    ///< the size the table measures (collective_entry::size_meaning)
  std::size_t elem = 1;     ///< bytes per element: count = bytes / elem
  int ranks = 1;            ///< ranks in the group the collective runs on
  bool commutative = true;  ///< the operation's (true without one)
  bool balanced = false;    ///< the generalized reduce's load balancing (load_balance, balancer)
  bool processes = false;   ///< the ranks are processes (the MPI engine), not threads
  int nodes = 1;            ///< nodes the group's ranks sit on
  bool operator==(const call_facts&) const = default;
};

/// The quantities a condition compares (the flags are 0 or 1).
enum class fact : std::uint8_t {
  number,        ///< the condition's constant
  ranks,         ///< call_facts::ranks
  count,         ///< bytes / elem
  commutative,   ///< the operation is commutative
  power_of_two,  ///< ranks is a power of two
  count_check,   ///< CAIRN_COLL_CHECK is on
  balanced,      ///< load balancing asked (generalized reduce)
  processes,     ///< the ranks are processes (the MPI engine)
  nodes,         ///< call_facts::nodes
};
enum class comparison : std::uint8_t { lt, le, gt, ge, eq, ne };

/// A condition: `lhs op rhs` (a flag `f` is `f != 0`, `!f` is `f == 0`).
struct resolved_condition {
  fact lhs;
  comparison op;
  fact rhs;
  std::size_t value = 0;  ///< rhs == number
};

/// A rule with its collective and algorithm resolved by name.
struct resolved_rule {
  coll_id which;
  const algorithm_entry* algorithm;
  std::size_t min_bytes, max_bytes;
  std::vector<resolved_condition> conditions;
};

/// CAIRN_COLL's rules for `which` followed by the default table's (parsed once, on first use;
/// throws cairn::error on a bad CAIRN_COLL).
std::span<const resolved_rule> selection_rules(coll_id which);

/// True if CAIRN_COLL_CHECK is on (read once): every checked collective runs the count check
/// first, and the default table keeps collectives off the board.
bool count_check_enabled();

/// The first rule for `which` that applies to the call `f` on `t` and whose algorithm can run
/// it (or null: none, where the default table has no last rule for every call).
const resolved_rule* chosen_rule(const coll_target& t, coll_id which, const call_facts& f);

/// The algorithm: `requested` unless automatic, else the table's choice (CAIRN_COLL first).
template <class Alg>
Alg select_algorithm(const coll_target& t, const call_facts& f, Alg requested) {
  if (requested != Alg{}) return requested;
  const resolved_rule* r = chosen_rule(t, collective_of<Alg>(), f);
  return r ? static_cast<Alg>(r->algorithm->value) : Alg{};
}

/// The board collective of `which`'s board algorithm (none: it has none).
board_collective board_provider(coll_id which);

/// True if the table would put a call like `f` on the board at some other size (it sent `f`
/// to messages): ranks whose counts lie on either side would wait on different paths, so the
/// call runs behind a board gate (prepared::gate). False with the count check or off the board.
bool board_elsewhere(const coll_target& t, coll_id which, const call_facts& f);

/// The CAIRN_COLL name of `which`'s algorithm `a` (for messages and tests).
std::string_view algorithm_name(coll_id which, std::uint8_t value);

}  // namespace cairn::detail
