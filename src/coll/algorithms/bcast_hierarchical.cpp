#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/node_split.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_bcast_hierarchical(std::span<const int> node_of, int me, int root, std::size_t bytes,
                                 bcast_algorithm across) {
  const node_split n(node_of, me, root);
  const int p = static_cast<int>(node_of.size());
  schedule s("bcast/hierarchical", p, me);
  const slot_map on_out{{slot::output, 0}, {slot::output, 0}, {slot::temp, 0}};
  // 1. Among the leaders (the root leads its node), from the root.
  if (n.my_leader >= 0) {
    const int nodes = static_cast<int>(n.leaders.size()), l = n.my_leader;
    const int from = n.leader_index(root);
    append(s,
           across == bcast_algorithm::scatter_allgather
               ? plan_bcast_scatter_allgather(nodes, l, from, bytes)
               : plan_bcast_binomial(nodes, l, from, bytes),
           on_out, n.leaders);
  }
  // 2. Inside every node, from its leader.
  append(s,
         plan_bcast_binomial(static_cast<int>(n.local.size()), n.my_local, n.local_leader(), bytes),
         on_out, n.local);
  return s;
}

}  // namespace cairn::coll
