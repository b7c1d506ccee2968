#pragma once
// A flow graph lowered onto ranks (src/flow/lower.cpp): a value, the same on every rank, that
// the runner of each rank executes and to_dot draws.

#include <cstdint>
#include <string>
#include <vector>

#include "cairn/coll/generalized.hpp"
#include "cairn/flow/graph.hpp"

namespace cairn::flow::detail {

struct lowered {
  int ranks = 0;
  std::vector<int> rank_of;  // instance -> rank

  /// A bound output queue of an instance; its index is its number on the wire.
  struct binding {
    int instance = -1;
    queue_ref q;
    std::vector<in_port> targets;  // where its items go (not for a reduce that remains)
    int reduce = -1;               // the lowered reduce it joins, or -1
    int via = -1;                  // the collective module it flows through, or -1
    int lane = -1;                 // the lane that carries its items to other ranks, or -1
  };
  std::vector<binding> bindings;

  /// The bindings of one module vector's output queue whose items cross ranks, sent on a typed
  /// channel of their own (detail::lane_plan). Only when lanes carry the item type and no two of
  /// those instances share a rank: a lane item's source rank then names its binding.
  struct lane {
    int group = -1;
    queue_ref q;
    std::vector<int> bindings;  // increasing
  };
  std::vector<lane> lanes;

  /// A reduce module with at least two participants: a generalized reduce over rank sets.
  struct reduce {
    int module = -1;                // graph_data::collectives index
    std::vector<int> participants;  // instances, increasing
    std::vector<in_port> receivers;
    std::vector<int> p_ranks, r_ranks;  // increasing
    generalized_reduce_options opt;
    reduce_balancer history;  // earlier reduces' graphs (graph_options::balance_reduces)
    /// Rounds a rank may have started and not yet delivered (later ones wait, combined).
    std::uint64_t rounds_in_flight = 4;
    /// A reduce sharing ranks with others (opt: the butterfly) whose rounds past a board slot's
    /// payload run the default algorithm instead (on one node: the board, straight or staged).
    bool long_rounds_on_board = false;
  };
  std::vector<reduce> reduces;
  /// Modules lowered away: reduces with one participant, bcasts (their sends go straight to
  /// the receivers).
  std::vector<int> vanished;

  /// Input queues something flows into.
  std::vector<in_port> fed;
};

/// Lowers `g` onto `ranks` ranks (every building error not caught while building).
lowered lower(const graph_data& g, int ranks);

}  // namespace cairn::flow::detail
