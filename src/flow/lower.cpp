// Lowering a flow graph onto ranks: placement, the bound output queues and where their items
// go, reduces as generalized reduces over rank sets (or nothing, with one participant).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "coll/board/board_layout.hpp"
#include "flow/lowered.hpp"

namespace cairn::flow::detail {
namespace {

std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The sequence space of reduce module `c` (generalized_reduce_options::stream): "flow" and its
// number, never 0 (the space of the collectives on the group itself).
std::uint64_t stream_of(int c) { return 0x666C6F7700000000ull + static_cast<std::uint64_t>(c) + 1; }

// The lanes of `l` (lowered::lane), in the order of their first bindings.
void plan_lanes(const graph_data& g, lowered& l) {
  struct candidate {
    lowered::lane lane;
    std::vector<int> ranks;  // of its bindings' instances
    bool crosses = false;
  };
  std::vector<candidate> found;
  for (std::size_t b = 0; b < l.bindings.size(); ++b) {
    const lowered::binding& lb = l.bindings[b];
    if (lb.reduce >= 0 || !lb.q.type->make_lane) continue;
    const int group = g.group_of[static_cast<std::size_t>(lb.instance)];
    auto c = std::find_if(found.begin(), found.end(), [&](const candidate& x) {
      return x.lane.group == group && x.lane.q.id == lb.q.id;
    });
    if (c == found.end()) {
      found.push_back(candidate{lowered::lane{group, lb.q, {}}, {}});
      c = found.end() - 1;
    }
    const int from = l.rank_of[static_cast<std::size_t>(lb.instance)];
    c->lane.bindings.push_back(static_cast<int>(b));
    c->ranks.push_back(from);
    for (const in_port& t : lb.targets)
      c->crosses |= l.rank_of[static_cast<std::size_t>(t.instance)] != from;
  }
  for (candidate& c : found) {
    std::sort(c.ranks.begin(), c.ranks.end());
    if (!c.crosses || std::adjacent_find(c.ranks.begin(), c.ranks.end()) != c.ranks.end()) continue;
    for (int b : c.lane.bindings)
      l.bindings[static_cast<std::size_t>(b)].lane = static_cast<int>(l.lanes.size());
    l.lanes.push_back(std::move(c.lane));
  }
}

}  // namespace

lowered lower(const graph_data& g, int ranks) {
  const char* call = "flow::graph::run";
  lowered l;
  l.ranks = ranks;
  // Placement: the user's, else balanced blocks in declaration order (consecutive instances
  // share a rank, consecutive ranks share a node); fewer instances than ranks spread out.
  const auto n = static_cast<std::int64_t>(g.group_of.size());
  if (n == 0) g.fail(call, "a graph with no module instance");
  l.rank_of.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const int p = g.placed[static_cast<std::size_t>(i)];
    l.rank_of[static_cast<std::size_t>(i)] = p >= 0 ? p : static_cast<int>(i * ranks / n);
  }
  const auto rank_of = [&](int i) { return l.rank_of[static_cast<std::size_t>(i)]; };

  // Collective modules: participants (sources) and receivers.
  const std::size_t nc = g.collectives.size();
  std::vector<std::vector<int>> sources(nc);
  for (const out_decl& o : g.outs)
    if (o.collective >= 0) sources[static_cast<std::size_t>(o.collective)].push_back(o.instance);
  std::vector<int> lowered_index(nc, -1);
  reduce_balancer history;
  for (std::size_t c = 0; c < nc; ++c) {
    const collective_decl& d = g.collectives[c];
    const std::string what = std::string(d.is_reduce ? "reduce '" : "bcast '") + d.name + "'";
    if (sources[c].empty())
      g.fail(call, what + " has no " + (d.is_reduce ? "participant" : "source") +
                       ": no output queue flows into it");
    if (g.receivers[c].empty())
      g.fail(call, what + " has no receiver: it flows into no input queue");
    std::vector<int> s = sources[c];
    std::sort(s.begin(), s.end());
    for (std::size_t k = 1; k < s.size(); ++k)
      if (s[k] == s[k - 1])
        g.fail(call, g.instance_name(s[k]) + " flows into " + what +
                         " from two output queues (one item per round per participant)");
    if (!d.is_reduce || s.size() == 1) {  // the sends go straight to the receivers
      l.vanished.push_back(static_cast<int>(c));
      continue;
    }
    lowered::reduce red;
    red.module = static_cast<int>(c);
    red.participants = s;
    red.receivers = g.receivers[c];
    std::vector<int> pr, rr;
    for (int i : s) pr.push_back(rank_of(i));
    for (const in_port& p : red.receivers) rr.push_back(rank_of(p.instance));
    red.p_ranks = sorted_unique(pr);
    red.r_ranks = sorted_unique(rr);
    red.opt.stream = stream_of(static_cast<int>(c));
    if (g.opts.balance_reduces) {
      red.opt.load_balance = true;
      red.history = history;
      history.record(red.p_ranks, red.r_ranks, red.opt.direct_delivery);
    }
    lowered_index[c] = static_cast<int>(l.reduces.size());
    l.reduces.push_back(std::move(red));
  }

  // Reduces that share a rank with another reduce must not fill a rank's keyed board slots
  // (node_board::group_slots, serving all its groups) with rounds of one reduce that the others
  // reach only after a round of another reduce, which would then find no slot (a deadlock).
  // Their short rounds send messages (the butterfly), whose arrivals wait in the receiver's
  // queue. Their long rounds, on one node, go on the board, which never holds a slot past a
  // round's end for them (no eager tail past the slots' payload): each reduce's rounds in flight
  // on a rank are bounded so that those of all the reduces a rank takes part in fit its slots.
  std::vector<std::vector<int>> ranks_of;  // P u R of each reduce
  for (const lowered::reduce& r : l.reduces) {
    std::vector<int> v = r.p_ranks;
    v.insert(v.end(), r.r_ranks.begin(), r.r_ranks.end());
    ranks_of.push_back(sorted_unique(std::move(v)));
  }
  std::vector<int> sharing(static_cast<std::size_t>(ranks), 0);  // sharing reduces per rank
  std::vector<bool> shares(l.reduces.size(), false);
  for (std::size_t a = 0; a < l.reduces.size(); ++a)
    for (std::size_t b = 0; b < l.reduces.size(); ++b) {
      if (a == b) continue;
      std::vector<int> both;
      std::set_intersection(ranks_of[a].begin(), ranks_of[a].end(), ranks_of[b].begin(),
                            ranks_of[b].end(), std::back_inserter(both));
      if (!both.empty()) shares[a] = true;
    }
  for (std::size_t a = 0; a < l.reduces.size(); ++a)
    if (shares[a])
      for (int r : ranks_of[a]) ++sharing[static_cast<std::size_t>(r)];
  const auto slots = static_cast<int>(cairn::detail::node_board::group_slots);
  const bool board = g.w.node_count() == 1 && !g.opts.balance_reduces;
  for (std::size_t a = 0; a < l.reduces.size(); ++a) {
    if (!shares[a]) continue;
    lowered::reduce& red = l.reduces[a];
    red.opt.algorithm = generalized_reduce_algorithm::butterfly;
    int most = 1;  // the most sharing reduces on one of its ranks
    for (int r : ranks_of[a]) most = std::max(most, sharing[static_cast<std::size_t>(r)]);
    if (!board || most > slots) continue;
    red.long_rounds_on_board = true;
    red.rounds_in_flight =
        std::min<std::uint64_t>(red.rounds_in_flight, static_cast<std::uint64_t>(slots / most));
  }

  // Bound output queues, in statement order.
  for (const out_decl& o : g.outs) {
    lowered::binding b;
    b.instance = o.instance;
    b.q = o.q;
    if (o.collective >= 0) {
      const auto c = static_cast<std::size_t>(o.collective);
      if (lowered_index[c] >= 0) {
        b.reduce = lowered_index[c];
      } else {
        b.via = o.collective;
        b.targets = g.receivers[c];
      }
    } else {
      b.targets = o.targets;
    }
    l.bindings.push_back(std::move(b));
  }
  plan_lanes(g, l);

  // Input queues something flows into.
  const auto feed = [&](const in_port& p) {
    if (std::find(l.fed.begin(), l.fed.end(), p) == l.fed.end()) l.fed.push_back(p);
  };
  for (const lowered::binding& b : l.bindings)
    for (const in_port& p : b.targets) feed(p);
  for (const lowered::reduce& red : l.reduces)
    for (const in_port& p : red.receivers) feed(p);
  return l;
}

}  // namespace cairn::flow::detail
