#pragma once
// The planner of Aspen's generalized reduce (participants P, receivers R, any sets of ranks).
// Like the planners of planners.hpp it is a pure function; it runs on the group P ∪ R whose
// group ranks are: the participants first (group ranks [0, |P|)), then the receivers that do not
// participate. Every rank builds the whole communication graph (it is small: O(|P ∪ R| log |P|)
// messages) and keeps its own part, so that all ranks agree on it by construction.

#include <cstddef>
#include <span>
#include <vector>

#include "cairn/coll/schedule.hpp"

namespace cairn::coll {

/// Who takes part in a generalized reduce, in group ranks of P ∪ R.
struct generalized_shape {
  int participants = 0;        ///< group ranks [0, participants) contribute an input
  std::vector<bool> receives;  ///< per group rank: gets the result (true for every non-participant)
};

/// One message of the communication graph.
struct generalized_transfer {
  int from = 0;          ///< group rank of the sender
  int to = 0;            ///< group rank of the receiver
  bool combine = false;  ///< the receiver reduces it into its value (else it becomes its value)
};

/// Messages per group rank of communication graphs built earlier (section 3.3's load balancing
/// across concurrent reductions); empty vectors mean none.
struct generalized_load {
  std::vector<int> in;   ///< incoming edges per group rank
  std::vector<int> out;  ///< outgoing edges per group rank
};

/// The whole communication graph of a generalized reduce, stage by stage. Every rank sends at
/// most one and receives at most one message per stage (the single-port model of the paper),
/// except the receivers that direct delivery (deliver_directly) gives two operands at once.
struct generalized_graph {
  std::vector<std::vector<generalized_transfer>> stages;  ///< the messages of each stage
  /// The first stage is an exchange over 2ρ slots in which non-participant receivers stand in
  /// for the missing participants (section 2.1's "auxiliaries"); see plan_reduce_generalized.
  bool auxiliaries = false;
  /// deliver_directly removed at least one forwarding hop (the schedules are named "_direct").
  bool direct = false;
};

/// Builds the communication graph of Aspen's generalized reduce (section 3.2):
///  1. number the participants receivers first (so that R_p has the lowest numbers);
///  2. fold to ρ = 2^floor(log2 |P|): participant X ≥ ρ sends to X - ρ; folded receivers move
///     from R_p to R_np;
///  3. while |P| ≥ 2 max(|R_p|, |R_np|), the upper half sends to the lower half;
///  4. butterfly among the rest; its last stage keeps only the links to the nodes that need the
///     result (R_p and one source per member of R_np: the first max(|R_p|, |R_np|) numbers);
///  5. deliver to R_np: one message per member from distinct holders, or concurrent binomial
///     broadcasts from every holder when R_np outnumbers them.
/// One deviation, so that the paper's bound of 2 + floor(log2 |P|) stages holds whenever
/// |R_np| ≤ |P|: when |P| is not a power of two and the fold would leave more than ρ receivers
/// for step 5 (which then needs two stages), step 2 becomes an exchange over 2ρ slots: folded
/// pairs swap their data and 2ρ - |P| non-participant receivers take the empty slots, receiving
/// the input of their partner; the lower and the upper ρ slots then run two butterflies on the
/// same data, and 2ρ nodes hold the result before step 5 (the auxiliaries of section 2.1).
/// With `load_balance` (section 3.3), the free choices are made greedily against the edges
/// counted so far (`prior`, then this graph's earlier stages): in a fold or halving pair of
/// interchangeable nodes (both receivers or both not) the one with fewer incoming edges
/// receives (and reduces), ties going to the one whose partner has fewer outgoing edges, then to
/// the paper's direction; extra result holders, auxiliaries and delivery senders are the least
/// loaded candidates. The stage count is the same either way.
generalized_graph graph_reduce_generalized(const generalized_shape& shape, bool load_balance,
                                           const generalized_load* prior = nullptr);

/// Direct delivery: where the graph has a participant h that is not a receiver take one last
/// operand (s -> h, combine; h has no other message in that stage) only to forward the result
/// to a non-participant receiver t in the next stage (h -> t; h has no other message then or
/// later, t none before), both operands go to t in the first of the two stages instead (s -> t,
/// h -> t) and t reduces them. One stage less on that
/// path (e.g. |P| = 2, R = {x} not in P: one stage instead of two), the same messages and
/// reductions; t receives two messages in one stage, outside the paper's single-port model but
/// no slower in it (t's two receives take the time of the forwarding chain they replace).
/// Empty stages left behind are dropped; `direct` is set when anything changed.
generalized_graph deliver_directly(generalized_graph graph, const generalized_shape& shape);

/// The schedule of group rank `me` in graph_reduce_generalized(shape, ...), for `bytes` of
/// elements. Receivers accumulate in their output, other participants in scratch; a participant
/// sends straight from its input until it has reduced something, and receives its first operand
/// straight into its accumulator (no copy of its input). Commutative operations only
/// (the numbering and the butterfly reorder operands): throws std::invalid_argument otherwise,
/// or when the shape is malformed.
schedule plan_reduce_generalized(const generalized_shape& shape, int me, std::size_t bytes,
                                 bool commutative, bool load_balance,
                                 const generalized_load* prior = nullptr);

/// The same, from a graph built already, e.g. by deliver_directly (`load_balance` only names the
/// schedule). A rank may receive several operands in one stage.
schedule plan_reduce_generalized(const generalized_graph& graph, const generalized_shape& shape,
                                 int me, std::size_t bytes, bool load_balance);

/// Section 3.1's form for ranks on several nodes: the participants of each node reduce to one
/// of them, its leader (binomial tree); the leaders run the butterfly's reduce to one receiver
/// per node that has receivers, its holder; each holder broadcasts the result to its node's
/// other receivers (binomial tree). Only leaders and holders talk between nodes. A node's leader
/// is its first participant that receives, else its first participant; its holder is that
/// leader where it receives, else its first receiver. `node_of[g]` is group rank g's node (any
/// numbering); `direct` applies deliver_directly to the graph among the nodes. Commutative
/// operations only; throws std::invalid_argument on a malformed shape.
schedule plan_reduce_generalized_hierarchical(const generalized_shape& shape,
                                              std::span<const int> node_of, int me,
                                              std::size_t bytes, bool direct);

/// Throws std::invalid_argument unless `shape` has participants, a receiver, and every member
/// after the participants receives.
void check_generalized_shape(const generalized_shape& shape);

}  // namespace cairn::coll
