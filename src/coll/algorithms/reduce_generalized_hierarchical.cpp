#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/generalized_planners.hpp"
#include "coll/algorithms/node_split.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

namespace {

// One node's part of the reduction, in group ranks (group order).
struct node_part {
  int node = 0;
  std::vector<int> participants;  // reduce to the leader
  std::vector<int> takers;        // the holder, then the node's other receivers (its bcast)
  int leader = -1;                // the participant that speaks for the node's inputs
  int holder = -1;                // the receiver that gets the result from the other nodes
};

int index_of(const std::vector<int>& v, int x) {
  int i = 0;
  while (v[static_cast<std::size_t>(i)] != x) ++i;
  return i;
}

}  // namespace

schedule plan_reduce_generalized_hierarchical(const generalized_shape& shape,
                                              std::span<const int> node_of, int me,
                                              std::size_t bytes, bool direct) {
  check_generalized_shape(shape);
  const int n = static_cast<int>(shape.receives.size());
  if (static_cast<int>(node_of.size()) != n)
    throw std::invalid_argument("generalized reduce: a node for every group rank needed");
  if (me < 0 || me >= n) throw std::invalid_argument("generalized reduce: rank outside the group");
  const auto receives = [&](int g) { return bool(shape.receives[static_cast<std::size_t>(g)]); };
  const auto node_at = [&](int g) { return node_of[static_cast<std::size_t>(g)]; };

  // The nodes in order of their first group rank, with their leader and holder.
  std::vector<node_part> nodes;
  int mine = -1;
  for (int g = 0; g < n; ++g) {
    std::size_t k = 0;
    while (k < nodes.size() && nodes[k].node != node_at(g)) ++k;
    if (k == nodes.size()) nodes.push_back({node_at(g), {}, {}, -1, -1});
    if (g == me) mine = static_cast<int>(k);
    if (g < shape.participants) nodes[k].participants.push_back(g);
  }
  for (node_part& p : nodes) {
    for (int g : p.participants)
      if (p.leader < 0 && receives(g)) p.holder = p.leader = g;
    if (p.leader < 0 && !p.participants.empty()) p.leader = p.participants.front();
    for (int g = 0; g < n; ++g)  // where no participant receives, the first receiver holds
      if (p.holder < 0 && receives(g) && node_at(g) == p.node) p.holder = g;
    if (p.holder < 0) continue;
    p.takers.push_back(p.holder);
    for (int g = 0; g < n; ++g)
      if (g != p.holder && receives(g) && node_at(g) == p.node) p.takers.push_back(g);
  }

  // Among the nodes: a generalized reduce from the leaders to the holders (the planner's
  // numbering: the leaders, then the holders that do not participate).
  std::vector<int> speakers;
  generalized_shape across;
  for (const node_part& p : nodes)
    if (p.leader >= 0) {
      speakers.push_back(p.leader);
      across.receives.push_back(p.holder == p.leader);
    }
  across.participants = static_cast<int>(speakers.size());
  for (const node_part& p : nodes)
    if (p.holder >= 0 && p.holder != p.leader) {
      speakers.push_back(p.holder);
      across.receives.push_back(true);
    }

  schedule s("reduce_generalized/hierarchical", n, me);
  const node_part& here = nodes[static_cast<std::size_t>(mine)];
  const auto& ps = here.participants;
  const bool gathers = here.leader == me && ps.size() > 1;  // holds its node's partial sum
  // Scratch: [the node's partial sum, on a leader that gathers][the parts' scratch].
  const region partial{slot::temp, 0};
  const region scratch{slot::temp, gathers ? aligned64(bytes) : 0};
  const region out{slot::output, 0};
  // 1. Inside the node, the participants' inputs to the leader.
  if (ps.size() > 1 && me < shape.participants)
    append(s,
           plan_reduce_binomial(static_cast<int>(ps.size()), index_of(ps, me),
                                index_of(ps, here.leader), bytes, true),
           {{slot::input, 0}, partial, scratch}, ps);
  // 2. Among the nodes' leaders and holders.
  if (here.leader == me || here.holder == me) {
    generalized_graph graph = graph_reduce_generalized(across, false);
    if (direct) graph = deliver_directly(std::move(graph), across);
    append(s, plan_reduce_generalized(graph, across, index_of(speakers, me), bytes, false),
           {gathers ? partial : region{slot::input, 0}, out, scratch}, speakers);
    if (gathers) s.temp_bytes = std::max(s.temp_bytes, bytes);
  }
  // 3. Inside the node, from the holder to the other receivers.
  const auto& ts = here.takers;
  if (ts.size() > 1 && receives(me))
    append(s, plan_bcast_binomial(static_cast<int>(ts.size()), index_of(ts, me), 0, bytes),
           {out, out, scratch}, ts);
  return s;
}

}  // namespace cairn::coll
