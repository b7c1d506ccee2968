#include <algorithm>

#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/node_split.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allreduce_hierarchical_slices(std::span<const int> node_of, int me, std::size_t bytes,
                                            std::size_t elem, bool commutative,
                                            allreduce_algorithm across) {
  const node_split n(node_of, me);
  const int p = static_cast<int>(node_of.size());
  const int q = static_cast<int>(n.local.size());
  const auto at = [](int r) { return static_cast<std::size_t>(r); };
  schedule s("allreduce/hierarchical_slices", p, me);
  // Slice r of the vector (whole elements, as even as they go) is local rank r's to reduce
  // across nodes.
  const std::size_t count = bytes / elem, per = count / at(q), extra = count % at(q);
  std::vector<std::size_t> len(at(q)), off(at(q));
  std::size_t o = 0;
  for (int r = 0; r < q; ++r) {
    len[at(r)] = (per + (at(r) < extra ? 1 : 0)) * elem;
    off[at(r)] = o;
    o += len[at(r)];
  }
  const std::size_t mine = len[at(n.my_local)], at_mine = off[at(n.my_local)];
  // The ranks that hold the same local index on every node, nodes in order of their first rank
  // (every node holds q ranks).
  std::vector<int> peers;
  for (int l : n.leaders) {
    int k = 0;
    for (int r = 0; r < p; ++r)
      if (node_of[at(r)] == node_of[at(l)] && k++ == n.my_local) peers.push_back(r);
  }
  int my_peer = 0;
  while (peers[at(my_peer)] != me) ++my_peer;
  // 1. Inside the node, reduce-scatter: this rank's slice reduced over its node, in scratch (the
  //    output may be the input, whose own slice the fold still reads).
  const region slice{slot::temp, 0};
  append(s, plan_reduce_scatter_pairwise(q, n.my_local, len),
         {{slot::input, 0}, slice, {slot::temp, aligned64(mine)}}, n.local);
  s.temp_bytes = std::max(s.temp_bytes, mine);
  s.begin_round();
  s.copy(slice, {slot::output, at_mine}, mine);
  // 2. Across nodes, the slice in place in the output, with the same local rank of every node.
  const region in_out{slot::output, at_mine};
  const int nodes = static_cast<int>(peers.size());
  append(s, plan_allreduce_flat(across, nodes, my_peer, mine, elem, commutative),
         {in_out, in_out, {slot::temp, 0}}, peers);
  // 3. Inside the node, allgather the slices.
  append(s, plan_allgatherv_ring(q, n.my_local, len, off),
         {in_out, {slot::output, 0}, {slot::temp, 0}}, n.local);
  return s;
}

}  // namespace cairn::coll
