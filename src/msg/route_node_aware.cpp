// route::node_aware — node-local/node-remote routing (YGM's NLNR; TRAM's node-aware schemes).

#include "cairn/msg/route.hpp"
#include "msg/rank_space.hpp"

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

namespace {
table_router make_node_aware(const detail::rank_space& s) {
  return table_router(node_aware_next_hops(s.me, s.node_of), s.nodes > 1 ? 3 : 1,
                      "node-aware over " + std::to_string(s.nodes) + " nodes");
}
}  // namespace

table_router route::node_aware::make(const world& w) const {
  return make_node_aware(detail::space_of(w));
}
table_router route::node_aware::make(const group& g) const {
  return make_node_aware(detail::space_of(g));
}

}  // namespace cairn::msg
