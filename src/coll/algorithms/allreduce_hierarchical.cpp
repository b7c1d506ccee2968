#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/node_split.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allreduce_flat(allreduce_algorithm a, int p, int me, std::size_t bytes,
                             std::size_t elem, bool commutative) {
  if (a == allreduce_algorithm::ring) return plan_allreduce_ring(p, me, bytes, elem);
  if (a == allreduce_algorithm::rabenseifner)
    return plan_allreduce_rabenseifner(p, me, bytes, elem, commutative);
  return plan_allreduce_recursive_doubling(p, me, bytes, elem, commutative);
}

schedule plan_allreduce_hierarchical(std::span<const int> node_of, int me, std::size_t bytes,
                                     std::size_t elem, bool commutative,
                                     allreduce_algorithm across) {
  const node_split n(node_of, me);
  const int p = static_cast<int>(node_of.size());
  const int here = static_cast<int>(n.local.size());
  const int nodes = static_cast<int>(n.leaders.size());
  schedule s("allreduce/hierarchical", p, me);
  // Each part's scratch starts at 0: the parts run one after the other.
  const slot_map in_to_out{{slot::input, 0}, {slot::output, 0}, {slot::temp, 0}};
  const slot_map on_out{{slot::output, 0}, {slot::output, 0}, {slot::temp, 0}};
  // 1. Inside the node, to its leader's output (local rank 0: the node's ranks keep group order,
  //    so a non-commutative operation folds them in order).
  append(s, plan_reduce_binomial(here, n.my_local, 0, bytes, commutative), in_to_out, n.local);
  // 2. Among the leaders, in place in their outputs (nodes in order of their first rank).
  if (n.my_leader >= 0) {
    append(s, plan_allreduce_flat(across, nodes, n.my_leader, bytes, elem, commutative), on_out,
           n.leaders);
  }
  // 3. Inside the node, from the leader.
  append(s, plan_bcast_binomial(here, n.my_local, 0, bytes), on_out, n.local);
  return s;
}

}  // namespace cairn::coll
