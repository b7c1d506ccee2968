#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/node_split.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allgather_hierarchical(std::span<const int> node_of, int me, std::size_t block) {
  const node_split n(node_of, me);
  const int p = static_cast<int>(node_of.size());
  const auto at = [](int r) { return static_cast<std::size_t>(r); };
  schedule s("allgather/hierarchical", p, me);
  // Node order: nodes in order of their first rank, each node's ranks in group order. Node k's
  // blocks start at first[k] there; place[r] is group rank r's.
  const int nodes = static_cast<int>(n.leaders.size());
  std::vector<std::size_t> first(at(nodes)), bytes(at(nodes));
  std::vector<int> place(at(p));
  int next = 0, mine = 0;
  for (int k = 0; k < nodes; ++k) {
    const int node = node_of[at(n.leaders[at(k)])];
    first[at(k)] = at(next) * block;
    if (node == node_of[at(me)]) mine = k;
    for (int r = 0; r < p; ++r)
      if (node_of[at(r)] == node) place[at(r)] = next++;
    bytes[at(k)] = at(next) * block - first[at(k)];
  }
  bool in_order = true;
  for (int r = 0; r < p; ++r) in_order = in_order && place[at(r)] == r;
  // The blocks gather in node order: in the output when that is group order, else in scratch
  // and copied into place at the end.
  const std::size_t all = at(p) * block;
  const region gathered = in_order ? region{slot::output, 0} : region{slot::temp, 0};
  const region scratch{slot::temp, in_order ? 0 : aligned64(all)};
  if (!in_order) s.temp_bytes = all;
  const region node_part{gathered.slot, gathered.offset + first[at(mine)]};
  // 1. Inside the node, gather to its leader (local rank 0).
  append(s, plan_gather_binomial(static_cast<int>(n.local.size()), n.my_local, 0, block),
         {{slot::input, 0}, node_part, scratch}, n.local);
  // 2. Among the leaders, every node's blocks (a ring: nodes may hold different counts).
  if (n.my_leader >= 0)
    append(s, plan_allgatherv_ring(nodes, n.my_leader, bytes, first),
           {node_part, gathered, scratch}, n.leaders);
  // 3. Inside the node, everything from the leader.
  append(s, plan_bcast_binomial(static_cast<int>(n.local.size()), n.my_local, 0, all),
         {gathered, gathered, scratch}, n.local);
  if (!in_order) {
    s.begin_round();
    for (int r = 0; r < p; ++r)
      s.copy({slot::temp, at(place[at(r)]) * block}, {slot::output, at(r) * block}, block);
  }
  return s;
}

}  // namespace cairn::coll
