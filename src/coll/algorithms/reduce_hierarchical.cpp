#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/node_split.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_reduce_hierarchical(std::span<const int> node_of, int me, int root, std::size_t bytes,
                                  std::size_t elem, bool commutative, reduce_algorithm across) {
  const node_split n(node_of, me, root);
  const int p = static_cast<int>(node_of.size());
  schedule s("reduce/hierarchical", p, me);
  // A node's partial result: the root's output on the root, scratch elsewhere (the output of a
  // rank other than the root may be empty). The parts' own scratch follows it.
  const region partial = me == root ? region{slot::output, 0} : region{slot::temp, 0};
  const region scratch{slot::temp, me == root ? 0 : aligned64(bytes)};
  if (me != root) s.temp_bytes = bytes;
  // 1. Inside the node, to its leader (the root in the root's node).
  append(s,
         plan_reduce_binomial(static_cast<int>(n.local.size()), n.my_local, n.local_leader(), bytes,
                              commutative),
         {{slot::input, 0}, partial, scratch}, n.local);
  // 2. Among the leaders, to the root (nodes in order of their first rank).
  if (n.my_leader >= 0) {
    const int nodes = static_cast<int>(n.leaders.size()), l = n.my_leader;
    const int to = n.leader_index(root);
    append(s,
           across == reduce_algorithm::reduce_scatter_gather
               ? plan_reduce_scatter_gather(nodes, l, to, bytes, elem, commutative)
               : plan_reduce_binomial(nodes, l, to, bytes, commutative),
           {partial, partial, scratch}, n.leaders);
  }
  return s;
}

}  // namespace cairn::coll
