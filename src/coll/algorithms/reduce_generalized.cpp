#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "coll/algorithms/generalized_planners.hpp"

namespace cairn::coll {

void check_generalized_shape(const generalized_shape& s) {
  const int n = static_cast<int>(s.receives.size());
  if (s.participants < 1 || s.participants > n)
    throw std::invalid_argument("generalized reduce: participants outside [1, group size]");
  for (int r = s.participants; r < n; ++r)
    if (!s.receives[static_cast<std::size_t>(r)])
      throw std::invalid_argument(
          "generalized reduce: a group member that neither participates nor receives");
  if (std::find(s.receives.begin(), s.receives.end(), true) == s.receives.end())
    throw std::invalid_argument("generalized reduce: no receiver");
}

namespace {

// Builds the graph stage by stage, counting every rank's incoming and outgoing edges for the
// load-balancing choices.
class builder {
 public:
  builder(const generalized_shape& s, bool load_balance, const generalized_load* prior)
      : s_(s), lb_(load_balance), in_(s.receives.size(), 0), out_(s.receives.size(), 0) {
    if (prior)
      for (std::size_t r = 0; r < in_.size(); ++r) {
        if (r < prior->in.size()) in_[r] = prior->in[r];
        if (r < prior->out.size()) out_[r] = prior->out[r];
      }
  }

  generalized_graph run() {
    const int np = s_.participants;
    const int n = static_cast<int>(s_.receives.size());
    // Numbers: participating receivers first (R_p), then the other participants; each class in
    // group order. `pos[x]` is the group rank numbered x.
    std::vector<int> pos;
    for (int r = 0; r < np; ++r)
      if (receives(r)) pos.push_back(r);
    const int rp = static_cast<int>(pos.size());
    for (int r = 0; r < np; ++r)
      if (!receives(r)) pos.push_back(r);
    std::vector<int> others;  // R_np: group ranks [np, n)
    for (int r = np; r < n; ++r) others.push_back(r);

    int rho = 1;
    while (rho * 2 <= np) rho *= 2;
    const int folded = np - rho;
    const int folded_receivers = std::max(0, rp - rho);  // R_p members the fold would remove

    std::vector<int> slot;     // the butterfly: `blocks` runs of `width` positions
    std::vector<int> targets;  // receivers that get the result after the butterfly (R_np)
    int width = rho, blocks = 1;
    if (folded > 0 && static_cast<int>(others.size()) + folded_receivers > rho) {
      // Auxiliaries: the fold would leave more receivers than the ρ holders can serve in one
      // stage. Exchange over 2ρ slots instead; the empty ones go to non-participant receivers.
      g_.auxiliaries = true;
      const int aux = 2 * rho - np;  // <= |R_np| here (see the header)
      std::vector<int> cand = others;
      if (lb_)
        std::stable_sort(cand.begin(), cand.end(), [&](int a, int b) { return load(a) < load(b); });
      std::vector<bool> is_aux(static_cast<std::size_t>(n), false);
      for (int i = 0; i < aux; ++i)
        is_aux[static_cast<std::size_t>(cand[static_cast<std::size_t>(i)])] = true;
      slot = pos;
      for (int i = 0; i < aux; ++i) slot.push_back(cand[static_cast<std::size_t>(i)]);
      for (int r : others)
        if (!is_aux[static_cast<std::size_t>(r)]) targets.push_back(r);
      open_stage();  // its links are counted once pruned, with the butterfly's
      for (int i = 0; i < rho; ++i) {
        const int a = at(slot, i), b = at(slot, i + rho);
        auto& st = g_.stages.back();
        if (i + rho < np) {
          st.push_back({a, b, true});
          st.push_back({b, a, true});
        } else {
          st.push_back({a, b, false});  // the auxiliary starts with its partner's input
        }
      }
      blocks = 2;
    } else {
      if (folded > 0) {
        open_stage();
        for (int x = rho; x < np; ++x) {
          const int lo = at(pos, x - rho), hi = at(pos, x);
          const int survivor = pair(lo, hi);
          const int gone = survivor == lo ? hi : lo;
          pos[static_cast<std::size_t>(x - rho)] = survivor;
          if (receives(gone)) targets.push_back(gone);  // moves from R_p to R_np
        }
      }
      slot.assign(pos.begin(), pos.begin() + rho);
      targets.insert(targets.end(), others.begin(), others.end());
      const int m = std::max(std::min(rp, rho), static_cast<int>(targets.size()));
      while (width >= 2 * m) {  // halving: the upper half sends to the lower half
        open_stage();
        const int half = width / 2;
        for (int i = 0; i < half; ++i)
          slot[static_cast<std::size_t>(i)] = pair(at(slot, i), at(slot, i + half));
        width = half;
        slot.resize(static_cast<std::size_t>(width));
      }
    }

    // Who must hold the result after the butterfly: the receivers among the slots, and one
    // source per target for the first delivery stage (receivers first: they hold it anyway).
    std::vector<bool> holds(static_cast<std::size_t>(n), false);
    int holders = 0;
    for (int v : slot)
      if (receives(v)) {
        holds[static_cast<std::size_t>(v)] = true;
        ++holders;
      }
    const int sources = std::min(static_cast<int>(targets.size()), static_cast<int>(slot.size()));
    if (sources > holders) {
      std::vector<int> extra;
      for (int v : slot)
        if (!receives(v)) extra.push_back(v);
      if (lb_)
        std::stable_sort(extra.begin(), extra.end(),
                         [&](int a, int b) { return load(a) < load(b); });
      for (int i = 0; i < sources - holders; ++i)
        holds[static_cast<std::size_t>(at(extra, i))] = true;
    }

    // Butterfly in each block, then only the links whose value is used: backwards from the
    // holders, a link is kept if it leads to a node whose value is needed after its stage, and
    // its sender's value is then needed before. With the holders being the first
    // max(|R_p|, |R_np|) numbers this drops exactly the paper's links of the last stage into
    // the other nodes; with auxiliaries, whose holders may be sparse in a block, earlier links
    // too (the first stage, the exchange over 2ρ slots, is included).
    std::vector<std::vector<generalized_transfer>> tail;
    if (g_.auxiliaries) {
      tail.push_back(std::move(g_.stages.back()));
      g_.stages.pop_back();
    }
    for (int d = 1; d < width; d <<= 1) {
      auto& st = tail.emplace_back();
      for (int b = 0; b < blocks; ++b)
        for (int i = 0; i < width; ++i)
          st.push_back({at(slot, b * width + (i ^ d)), at(slot, b * width + i), true});
    }
    std::vector<bool> live = holds;
    for (auto st = tail.rbegin(); st != tail.rend(); ++st) {
      std::erase_if(*st, [&](const generalized_transfer& t) {
        return !live[static_cast<std::size_t>(t.to)];
      });
      for (const auto& t : *st) live[static_cast<std::size_t>(t.from)] = true;
    }
    for (auto& st : tail) {
      if (st.empty()) continue;
      open_stage();
      for (const auto& t : st) link(t.from, t.to, t.combine);
    }

    // Delivery: every holder sends to one target per stage (directly when the targets are no
    // more than the holders, else concurrent binomial broadcasts rooted at every holder).
    std::vector<int> have;
    for (int v : slot)
      if (holds[static_cast<std::size_t>(v)]) have.push_back(v);
    std::size_t next = 0;
    while (next < targets.size()) {
      open_stage();
      std::vector<int> senders = have;
      const std::size_t left = targets.size() - next;
      if (left < senders.size()) {
        if (lb_)
          std::stable_sort(senders.begin(), senders.end(), [&](int a, int b) {
            return out_[static_cast<std::size_t>(a)] < out_[static_cast<std::size_t>(b)];
          });
        senders.resize(left);
      }
      for (int v : senders) {
        const int t = at(targets, static_cast<int>(next++));
        link(v, t, false);
        have.push_back(t);
      }
    }
    return std::move(g_);
  }

 private:
  static int at(const std::vector<int>& v, int i) { return v[static_cast<std::size_t>(i)]; }
  bool receives(int r) const { return s_.receives[static_cast<std::size_t>(r)]; }
  int load(int r) const {
    return in_[static_cast<std::size_t>(r)] + out_[static_cast<std::size_t>(r)];
  }
  void open_stage() { g_.stages.emplace_back(); }
  void link(int from, int to, bool combine) {
    g_.stages.back().push_back({from, to, combine});
    ++out_[static_cast<std::size_t>(from)];
    ++in_[static_cast<std::size_t>(to)];
  }
  // A fold or halving pair: by default `hi` sends to `lo`, which keeps the number. With load
  // balancing, interchangeable nodes (both receivers or neither) let the one with fewer incoming
  // edges receive and reduce (the paper's Figure 6: a node that only sent so far can receive at
  // the same time over its duplex link), then the one whose partner sent less. Returns the
  // node that stays.
  int pair(int lo, int hi) {
    int sender = hi, survivor = lo;
    if (lb_ && receives(lo) == receives(hi)) {
      auto cost = [&](int recv, int send) {
        return std::pair(in_[static_cast<std::size_t>(recv)], out_[static_cast<std::size_t>(send)]);
      };
      if (cost(hi, lo) < cost(lo, hi)) std::swap(sender, survivor);
    }
    link(sender, survivor, true);
    return survivor;
  }

  const generalized_shape& s_;
  bool lb_;
  std::vector<int> in_, out_;
  generalized_graph g_;
};

}  // namespace

generalized_graph graph_reduce_generalized(const generalized_shape& shape, bool load_balance,
                                           const generalized_load* prior) {
  check_generalized_shape(shape);
  return builder(shape, load_balance, prior).run();
}

schedule plan_reduce_generalized(const generalized_shape& shape, int me, std::size_t bytes,
                                 bool commutative, bool load_balance,
                                 const generalized_load* prior) {
  if (!commutative)
    throw std::invalid_argument("generalized reduce: the butterfly needs a commutative operation");
  return plan_reduce_generalized(graph_reduce_generalized(shape, load_balance, prior), shape, me,
                                 bytes, load_balance);
}

generalized_graph deliver_directly(generalized_graph graph, const generalized_shape& shape) {
  check_generalized_shape(shape);
  auto& st = graph.stages;
  const auto involves = [](const generalized_transfer& t, int r) {
    return t.from == r || t.to == r;
  };
  const auto edges_of = [&](std::size_t k, int r) {
    return std::count_if(st[k].begin(), st[k].end(),
                         [&](const generalized_transfer& t) { return involves(t, r); });
  };
  for (std::size_t k = 1; k < st.size(); ++k) {
    for (std::size_t i = 0; i < st[k].size();) {
      const generalized_transfer e = st[k][i];
      const int h = e.from, t = e.to;
      bool fuse = !e.combine && !shape.receives[static_cast<std::size_t>(h)] &&
                  t >= shape.participants && edges_of(k, h) == 1;
      for (std::size_t j = k + 1; fuse && j < st.size(); ++j)
        fuse = edges_of(j, h) == 0;  // h only forwards
      for (std::size_t j = 0; fuse && j < k; ++j)
        fuse = edges_of(j, t) == 0;          // t is free until now
      generalized_transfer* last = nullptr;  // h's one edge in stage k - 1: its last operand
      if (fuse && edges_of(k - 1, h) == 1)
        for (auto& f : st[k - 1])
          if (f.to == h && f.combine) last = &f;
      if (!last) {
        ++i;
        continue;
      }
      last->to = t;  // s -> t becomes t's value, h's own value goes along in the same stage
      last->combine = false;
      st[k - 1].push_back({h, t, true});
      st[k].erase(st[k].begin() + static_cast<std::ptrdiff_t>(i));
      graph.direct = true;
    }
  }
  std::erase_if(st, [](const std::vector<generalized_transfer>& v) { return v.empty(); });
  return graph;
}

schedule plan_reduce_generalized(const generalized_graph& graph, const generalized_shape& shape,
                                 int me, std::size_t bytes, bool load_balance) {
  check_generalized_shape(shape);
  const int n = static_cast<int>(shape.receives.size());
  if (me < 0 || me >= n) throw std::invalid_argument("generalized reduce: rank outside the group");
  std::string name =
      load_balance ? "reduce_generalized/aspen_balanced" : "reduce_generalized/aspen";
  if (graph.direct) name += "_direct";
  schedule s(std::move(name), n, me);
  const bool participant = me < shape.participants;
  const bool receiver = shape.receives[static_cast<std::size_t>(me)];
  // The value a rank holds: its input until it reduces something, then the accumulator (the
  // output on receivers, scratch elsewhere). A participant's first operand lands straight in the
  // accumulator (reduced with the input next round: no copy); later ones in scratch after it.
  const region in{slot::input, 0};
  const region acc = receiver ? region{slot::output, 0} : region{slot::temp, 0};
  const std::size_t tmp_base = receiver ? 0 : bytes;
  bool has_value = participant, in_acc = false, first_in_acc = false;
  std::size_t pending = 0, most_pending = 0;  // operands waiting in scratch slots
  std::vector<const generalized_transfer*> sets, combines;
  auto tmp = [&](std::size_t j) { return region{slot::temp, tmp_base + j * bytes}; };
  auto settle = [&] {  // reduce the operands received in the previous round
    if (first_in_acc) {
      s.reduce(in, acc, bytes, /*from_is_left=*/false);
      first_in_acc = false;
      in_acc = true;
    }
    for (std::size_t j = 0; j < pending; ++j) s.reduce(tmp(j), acc, bytes, /*from_is_left=*/false);
    pending = 0;
  };
  for (const auto& stage : graph.stages) {
    const generalized_transfer* send = nullptr;
    sets.clear();
    combines.clear();
    for (const auto& t : stage) {
      if (t.from == me) send = &t;
      if (t.to == me) (t.combine ? combines : sets).push_back(&t);
    }
    if (!send && sets.empty() && combines.empty()) continue;
    s.begin_round();
    settle();
    if (send) {
      if (!has_value)
        throw std::logic_error("generalized reduce: a rank sends before it holds a value");
      s.send(send->to, in_acc ? acc : in, bytes);
    }
    if (sets.size() > 1)
      throw std::logic_error("generalized reduce: a rank gets two values in one stage");
    if (!sets.empty()) {
      // (A folded receiver gets the result after giving its input away.) The accumulator is not
      // being sent this round: the graph never sends from and delivers a whole value to the
      // same rank in one stage.
      if (send || first_in_acc || pending)
        throw std::logic_error("generalized reduce: a value received while in use");
      s.recv(sets.front()->from, acc, bytes);
      has_value = in_acc = true;
    }
    for (const generalized_transfer* c : combines) {
      if (!has_value) throw std::logic_error("generalized reduce: a rank reduces into nothing");
      if (!in_acc && !first_in_acc) {
        s.recv(c->from, acc, bytes);  // not sent this round: the rank sends its input
        first_in_acc = true;
      } else {
        s.recv(c->from, tmp(pending++), bytes);
        most_pending = std::max(most_pending, pending);
      }
    }
  }
  if (first_in_acc || pending) {
    s.begin_round();
    settle();
  }
  if (receiver && !in_acc) {  // a participant that never received: its input is the result
    if (!participant) throw std::logic_error("generalized reduce: a receiver gets nothing");
    s.begin_round();
    s.copy(in, acc, bytes);
  }
  s.temp_bytes = most_pending ? tmp_base + most_pending * bytes : receiver || !in_acc ? 0 : bytes;
  return s;
}

}  // namespace cairn::coll
