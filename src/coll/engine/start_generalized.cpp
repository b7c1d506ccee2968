// The entry point of the generalized reduce: check the rank sets and buffers, build the group
// P ∪ R, plan (or find the cached plan) and prepare it for a start on that group.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cairn/coll/generalized.hpp"
#include "coll/algorithms/generalized_planners.hpp"
#include "coll/board/shared_memory_flat.hpp"
#include "coll/engine/plan_cache.hpp"
#include "coll/engine/selection.hpp"
#include "coll/engine/start_checks.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn {

namespace {

// Sorted copy of `ranks` into `out` (reusing its capacity); fails on an empty set, a rank
// outside [0, world_size) (world_size < 0: no upper bound known) or a rank listed twice.
void sorted_set(const char* call, int rank, const char* what, std::span<const int> ranks,
                int world_size, std::vector<int>& out) {
  out.assign(ranks.begin(), ranks.end());
  std::sort(out.begin(), out.end());
  if (out.empty()) detail::fail(call, rank, "empty ", what, " set");
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] < 0 && world_size < 0)
      detail::fail(call, rank, what, " rank ", out[i], " is not a rank");
    if (out[i] < 0 || (world_size >= 0 && out[i] >= world_size))
      detail::fail(call, rank, what, " rank ", out[i], " is outside the world of ", world_size,
                   " ranks");
    if (i > 0 && out[i] == out[i - 1])
      detail::fail(call, rank, what, " rank ", out[i], " is listed twice");
  }
}

// The group P ∪ R: participants in increasing rank order, then the other receivers.
std::vector<int> members_of(const std::vector<int>& p, const std::vector<int>& r) {
  std::vector<int> m = p;
  for (int x : r)
    if (!std::binary_search(p.begin(), p.end(), x)) m.push_back(x);
  return m;
}

coll::generalized_shape shape_of(const std::vector<int>& p, const std::vector<int>& r,
                                 const std::vector<int>& members) {
  coll::generalized_shape s;
  s.participants = static_cast<int>(p.size());
  s.receives.resize(members.size());
  for (std::size_t i = 0; i < members.size(); ++i)
    s.receives[i] = std::binary_search(r.begin(), r.end(), members[i]);
  return s;
}

// The balancer's counts for the members (group rank order).
coll::generalized_load load_of(const reduce_balancer& b, const std::vector<int>& members) {
  coll::generalized_load l;
  for (int w : members) {
    l.in.push_back(b.incoming(w));
    l.out.push_back(b.outgoing(w));
  }
  return l;
}

void record_graph(reduce_balancer& b, const coll::generalized_graph& g,
                  const std::vector<int>& members) {
  for (const auto& stage : g.stages)
    for (const auto& t : stage)
      b.add_edge(members[static_cast<std::size_t>(t.from)],
                 members[static_cast<std::size_t>(t.to)]);
}

// The graph every rank of P ∪ R builds for these options (direct delivery applied last, so that
// the balancer's choices are the paper's).
coll::generalized_graph graph_of(const coll::generalized_shape& shape, bool balance,
                                 const coll::generalized_load* load, bool direct) {
  coll::generalized_graph g = coll::graph_reduce_generalized(shape, balance, load);
  return direct ? coll::deliver_directly(std::move(g), shape) : g;
}

// Plans are pure functions of (P, R, this rank, bytes, balancing, direct delivery, the
// balancer's counts of the members): cached per thread (a rank is one thread) with the group and
// the graph's edges, so a repeated reduction plans and allocates nothing.
struct plan_key {
  std::vector<int> p, r, load;
  int me = 0;
  std::size_t bytes = 0;
  bool balance = false;
  bool direct = false;
  bool board = false;         // no graph and no plan: on the node board
  bool hierarchical = false;  // plan_reduce_generalized_hierarchical (no graph to balance)
  std::uint64_t stream = 0;
  bool operator==(const plan_key&) const = default;
};
struct plan_key_hash {
  std::size_t operator()(const plan_key& k) const noexcept {
    std::size_t h = k.bytes * 0x9E3779B97F4A7C15ull + static_cast<std::size_t>(k.me) * 8 +
                    k.hierarchical * 16u + k.board * 4u + k.balance * 2u + k.direct +
                    k.stream * 0xC2B2AE3D27D4EB4Full;
    auto mix = [&h](std::size_t v) { h = (h ^ v) * 0x100000001B3ull + (h >> 29); };
    for (const auto* v : {&k.p, &k.r, &k.load}) {
      mix(v->size());
      for (int x : *v) mix(static_cast<std::size_t>(static_cast<unsigned>(x)));
    }
    return h;
  }
};
struct cached_plan {
  std::shared_ptr<const detail::group_members> members;
  std::shared_ptr<const std::vector<int>>
      receivers;  // R, sorted (the board's signature, its takers)
  std::shared_ptr<const coll::schedule> plan;
  coll::generalized_graph graph;  // for the balancer
  int group_rank = 0;
};

// The algorithm of the call `f`: the one forced (refused with the reason where it cannot run),
// or the selection table's choice (automatic: the butterfly).
generalized_reduce_algorithm algorithm_of(const detail::coll_target& t, const char* call,
                                          const generalized_reduce_options& opt,
                                          const detail::call_facts& f) {
  using alg = generalized_reduce_algorithm;
  if (opt.algorithm == alg::shared_memory || opt.algorithm == alg::shared_memory_staged) {
    const detail::board_path path = opt.algorithm == alg::shared_memory
                                        ? detail::board_path::automatic
                                        : detail::board_path::staged;
    const char* name = detail::board_algorithm_name(path);
    if (const char* why =
            detail::board_refusal(t, detail::board_collective::reduce_generalized, f.bytes, path))
      detail::fail(call, t.world_rank, "the ", name, " algorithm ", why);
    if (f.balanced)
      detail::fail(call, t.world_rank, "the ", name,
                   " algorithm sends no messages to balance (load_balance, balancer)");
  }
  if (opt.algorithm == alg::hierarchical && f.balanced)
    detail::fail(call, t.world_rank,
                 "the hierarchical algorithm does not balance its messages (load_balance, "
                 "balancer)");
  return detail::select_algorithm(t, f, opt.algorithm);
}

// The nodes the ranks of P and R sit on (`seen`: one flag per node, reused).
int nodes_spanned(const detail::topology& topo, const std::vector<int>& p,
                  const std::vector<int>& r, std::vector<char>& seen) {
  if (topo.node_count == 1) return 1;
  seen.assign(static_cast<std::size_t>(topo.node_count), 0);
  int nodes = 0;
  for (const auto* v : {&p, &r})
    for (int w : *v) {
      char& s = seen[static_cast<std::size_t>(topo.node_of[static_cast<std::size_t>(w)])];
      nodes += !s;
      s = 1;
    }
  return nodes;
}

// Ranks in P ∪ R (both sorted).
int union_size(const std::vector<int>& p, const std::vector<int>& r) {
  std::size_t both = 0;
  for (std::size_t i = 0, j = 0; i < p.size() && j < r.size();) {
    if (p[i] == r[j]) ++both;
    if (p[i] <= r[j])
      ++i;
    else
      ++j;
  }
  return static_cast<int>(p.size() + r.size() - both);
}

}  // namespace

void reduce_balancer::add_edge(int from, int to) {
  if (from < 0 || to < 0)
    throw error("cairn::reduce_balancer::add_edge: ranks " + std::to_string(from) + " -> " +
                std::to_string(to) + " are not world ranks");
  const std::size_t need = static_cast<std::size_t>(std::max(from, to)) + 1;
  if (in_.size() < need) {
    in_.resize(need, 0);
    out_.resize(need, 0);
  }
  ++out_[static_cast<std::size_t>(from)];
  ++in_[static_cast<std::size_t>(to)];
}

void reduce_balancer::record(const rank_set& participants, const rank_set& receivers,
                             bool direct_delivery) {
  const char* call = "reduce_balancer::record";
  std::vector<int> p, r;
  sorted_set(call, -1, "participant", participants.ranks(), -1, p);
  sorted_set(call, -1, "receiver", receivers.ranks(), -1, r);
  const std::vector<int> members = members_of(p, r);
  const coll::generalized_load load = load_of(*this, members);
  record_graph(*this, graph_of(shape_of(p, r, members), true, &load, direct_delivery), members);
}

namespace detail {

prepared prepare_reduce_generalized(const coll_target& t, const char* call,
                                    std::span<const int> participants,
                                    std::span<const int> receivers, const void* in,
                                    std::size_t in_count, void* out, std::size_t out_count,
                                    const op_binding& op, const generalized_reduce_options& opt) {
  const int me = t.world_rank;
  const int world_size = static_cast<int>(t.members->world_ranks.size());
  struct plans {  // per rank (rank_context::layer)
    explicit plans(rank_context&) {}
    plan_key key;  // reused: its vectors keep their capacity
    std::vector<char> seen;
    bounded_cache<plan_key, std::shared_ptr<const cached_plan>, plan_key_hash, 1024> cache;
  };
  auto& [key, seen, cache] = t.ctx->layer<plans>();
  sorted_set(call, me, "participant", participants, world_size, key.p);
  sorted_set(call, me, "receiver", receivers, world_size, key.r);
  const bool participates = std::binary_search(key.p.begin(), key.p.end(), me);
  const bool receives = std::binary_search(key.r.begin(), key.r.end(), me);
  if (!participates && !receives)
    fail(call, me, "this rank is neither a participant nor a receiver (", key.p.size(),
         " participants, ", key.r.size(), " receivers, first participant ", key.p.front(), ")");
  if (!op.commutative)
    fail(call, me,
         "the generalized reduce needs a commutative operation (its butterfly combines operands in "
         "any order)");
  std::size_t n = out_count;
  if (participates) {
    n = in_count;
    if (receives && out_count != in_count)
      fail(call, me, "output holds ", out_count, " elements, input ", in_count);
  } else if (in_count != 0) {
    fail(call, me, "input holds ", in_count,
         " elements; a receiver that does not participate passes an empty input");
  }
  const std::size_t bytes = checked_bytes(call, me, n, op.elem);
  if (participates && receives && bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(in), b = reinterpret_cast<std::uintptr_t>(out);
    if (a < b + bytes && b < a + bytes) fail(call, me, "input and output overlap");
  }

  reduce_balancer* const balancer = opt.balancer;
  const call_facts f{bytes,
                     op.elem,
                     union_size(key.p, key.r),
                     op.commutative,
                     opt.load_balance || balancer,
                     t.ctx->engine() == cairn::engine::mpi,
                     nodes_spanned(t.ctx->topo(), key.p, key.r, seen)};
  const generalized_reduce_algorithm chosen = algorithm_of(t, call, opt, f);
  const bool staged = chosen == generalized_reduce_algorithm::shared_memory_staged;
  key.board = staged || chosen == generalized_reduce_algorithm::shared_memory;
  key.hierarchical = chosen == generalized_reduce_algorithm::hierarchical;
  key.me = me;
  key.bytes = bytes;
  key.balance = opt.load_balance || balancer;
  key.direct = opt.direct_delivery;
  key.stream = opt.stream;
  key.load.clear();
  if (balancer)
    for (const auto* v : {&key.p, &key.r})
      for (int w : *v) {
        key.load.push_back(balancer->incoming(w));
        key.load.push_back(balancer->outgoing(w));
      }
  const std::shared_ptr<const cached_plan> c = cache.get(key, [&] {
    auto made = std::make_shared<cached_plan>();
    std::vector<int> members = members_of(key.p, key.r);
    const coll::generalized_shape shape = shape_of(key.p, key.r, members);
    const coll::generalized_load load =
        balancer ? load_of(*balancer, members) : coll::generalized_load{};
    made->group_rank =
        static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
    made->receivers = std::make_shared<const std::vector<int>>(key.r);
    if (key.hierarchical) {
      std::vector<int> node_of;
      for (int w : members) node_of.push_back(t.ctx->topo().node_of[static_cast<std::size_t>(w)]);
      made->plan =
          std::make_shared<const coll::schedule>(coll::plan_reduce_generalized_hierarchical(
              shape, node_of, made->group_rank, bytes, key.direct));
    } else if (!key.board) {
      made->graph = graph_of(shape, key.balance, &load, key.direct);
      made->plan = std::make_shared<const coll::schedule>(
          coll::plan_reduce_generalized(made->graph, shape, made->group_rank, bytes, key.balance));
    }
    made->members =
        std::make_shared<const group_members>(std::move(members), t.ctx->topo(), key.stream);
    return std::shared_ptr<const cached_plan>(std::move(made));
  });
  if (balancer) record_graph(*balancer, c->graph, c->members->world_ranks);
  // Started on the group P ∪ R: its tags and sequence numbers are those of that member list.
  // Every rank computes the same bytes when the call is right: the count check can compare them.
  prepared p(coll_target{t.ctx, c->members, c->group_rank, me}, call, c->plan, in, out, op, bytes,
             -1, true);
  // Where another count would run on the board (MPI without cross-memory copies past 16 KiB, a
  // CAIRN_COLL range), the butterfly first meets the others there (prepared::gate): ranks on
  // either side then report the disagreement.
  const bool gate = !key.board && opt.algorithm == generalized_reduce_algorithm::automatic &&
                    board_elsewhere(t, coll_id::generalized_reduce, f);
  if (key.board || gate) {  // the participants are the group's first |P| ranks
    p.board = board_collective::reduce_generalized;
    p.gate = gate;
    p.board_participants = static_cast<std::int32_t>(key.p.size());
    p.board_receivers = c->receivers;
    if (staged) p.path = board_path::staged;
  }
  return p;
}

}  // namespace detail
}  // namespace cairn
