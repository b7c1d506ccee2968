// route::node_aware — node-local/node-remote routing (YGM's NLNR; TRAM's node-aware schemes).

#include "cairn/msg/route.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::msg {

std::vector<int> node_aware_next_hops(int me, const std::vector<int>& node_of) {
  int nodes = 0;
  for (int n : node_of) nodes = n + 1 > nodes ? n + 1 : nodes;
  std::vector<std::vector<int>> on(static_cast<std::size_t>(nodes));
  for (std::size_t r = 0; r < node_of.size(); ++r)
    on[static_cast<std::size_t>(node_of[r])].push_back(static_cast<int>(r));
  const int a = node_of[static_cast<std::size_t>(me)];
  const auto& mine = on[static_cast<std::size_t>(a)];
  const int na = static_cast<int>(mine.size());
  std::vector<int> next(node_of.size());
  for (std::size_t dest = 0; dest < node_of.size(); ++dest) {
    const int b = node_of[dest];
    if (b == a) {  // same node: straight there
      next[dest] = static_cast<int>(dest);
      continue;
    }
    // The rank of my node that serves node b collects everything for b (node-local hop),
    // then sends it across to the rank of b with its own local index (node-remote hop);
    // there the item is on its owner's node.
    const int serving = b % na;
    const int forwarder = mine[static_cast<std::size_t>(serving)];
    if (forwarder != me) {
      next[dest] = forwarder;
    } else {
      const auto& theirs = on[static_cast<std::size_t>(b)];
      next[dest] = theirs[static_cast<std::size_t>(serving) % theirs.size()];
    }
  }
  return next;
}

table_router route::node_aware::make(const world& w) const {
  std::vector<int> node_of(static_cast<std::size_t>(w.size()));
  for (int r = 0; r < w.size(); ++r) node_of[static_cast<std::size_t>(r)] = w.node_of(r);
  return table_router(node_aware_next_hops(w.rank(), node_of), w.node_count() > 1 ? 3 : 1,
                      "node-aware over " + std::to_string(w.node_count()) + " nodes");
}

}  // namespace cairn::msg
