#include "msg/rank_space.hpp"

#include <algorithm>

namespace cairn::msg::detail {

namespace {
// Node numbers of `world_nodes` renumbered 0, 1, ... in order of first appearance: every rank
// of the space computes the same numbers from the same list.
rank_space numbered(int me, const char* what, const std::vector<int>& world_nodes) {
  rank_space s;
  s.me = me;
  s.size = static_cast<int>(world_nodes.size());
  s.what = what;
  std::vector<int> seen;
  s.node_of.reserve(world_nodes.size());
  for (int n : world_nodes) {
    auto it = std::find(seen.begin(), seen.end(), n);
    if (it == seen.end()) {
      seen.push_back(n);
      it = seen.end() - 1;
    }
    s.node_of.push_back(static_cast<int>(it - seen.begin()));
  }
  s.nodes = static_cast<int>(seen.size());
  return s;
}
}  // namespace

rank_space space_of(const cairn::world& w) {
  std::vector<int> nodes(static_cast<std::size_t>(w.size()));
  for (int r = 0; r < w.size(); ++r) nodes[static_cast<std::size_t>(r)] = w.node_of(r);
  return numbered(w.rank(), "world", nodes);
}

rank_space space_of(const cairn::group& g) {
  const cairn::world w = g.world();
  if (g.rank() < 0)
    cairn::detail::fail("channel", w.rank(), "this rank is not a member of the group (", g.size(),
                        " ranks)");
  std::vector<int> nodes;
  nodes.reserve(g.members().size());
  for (int r : g.members()) nodes.push_back(w.node_of(r));
  return numbered(g.rank(), "group", nodes);
}

}  // namespace cairn::msg::detail
