// The entry points of the typed collective calls: check the arguments, choose the algorithm
// (per call, else the selection table: CAIRN_COLL, then the default table,
// src/coll/engine/selection_table.cpp), plan the schedule or prepare the board; start it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>

#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/planners.hpp"
#include "coll/board/shared_memory_flat.hpp"
#include "coll/board/shared_memory_group.hpp"
#include "coll/engine/coll_rank.hpp"
#include "coll/engine/executor.hpp"
#include "coll/engine/plan_cache.hpp"
#include "coll/engine/selection.hpp"
#include "coll/engine/start_checks.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {
// Elements in `blocks` blocks of `n` (group size x block), checked against the byte size limit.
std::size_t blocks_count(const coll_target& t, const char* call, std::size_t n, std::size_t blocks,
                         std::size_t elem) {
  if (n != 0 && blocks > std::numeric_limits<std::size_t>::max() / n)
    fail(call, t.world_rank, "count ", n, " x ", blocks, " ranks overflows");
  checked_bytes(call, t.world_rank, n * blocks, elem);
  return n * blocks;
}

// Fails unless `have` elements hold `need`: "<what> holds X elements, needs Y (p ranks x n)".
void check_holds(const coll_target& t, const char* call, const char* what, std::size_t have,
                 std::size_t need, std::size_t n) {
  if (have < need)
    fail(call, t.world_rank, what, " holds ", have, " elements, needs ", need, " (", group_size(t),
         " ranks x ", n, ")");
}

// The in-place forms of the block collectives: one buffer of `count` elements holding a block
// per rank (`what` names it in errors); returns the block's element count.
std::size_t per_rank_block(const coll_target& t, const char* call, const char* what,
                           std::size_t count, std::size_t elem) {
  checked_bytes(call, t.world_rank, count, elem);
  const auto p = static_cast<std::size_t>(group_size(t));
  if (count % p != 0)
    fail(call, t.world_rank, what, " holds ", count, " elements, not a multiple of the ", p,
         " ranks");
  return count / p;
}

// Block `r` of `block` bytes in `buf`.
std::byte* block_at(void* buf, int r, std::size_t block) {
  return static_cast<std::byte*>(buf) + static_cast<std::size_t>(r) * block;
}

// Plans are pure functions of (planner, group size, rank, root, sizes, in place): they are cached
// per rank (in its context), so a repeated collective plans and allocates nothing.
enum class planner : std::uint8_t {
  barrier_dissemination,
  bcast_binomial,
  reduce_binomial,
  allreduce_recursive_doubling,
  allreduce_ring,
  gather_binomial,
  scatter_binomial,
  allgather_ring,
  allgather_bruck,
  alltoall_pairwise,
  reduce_scatter_block_ring,
  reduce_scatter_block_recursive_halving,
  scan_recursive_doubling,
  exscan_recursive_doubling,
  bcast_scatter_allgather,
  reduce_scatter_gather,
  allreduce_rabenseifner,
  allgather_recursive_doubling,
  alltoall_bruck,
  allreduce_hierarchical,
  allreduce_hierarchical_slices,
  allgather_hierarchical,
  bcast_hierarchical,
  reduce_hierarchical,
};
struct plan_key {
  planner which;
  bool commutative;
  int p, me, root;
  std::size_t bytes, elem;
  bool in_place = false;  // set only where the in-place plan differs (see the prepare functions)
  // The hierarchical planners': the group's placement (group_members::node_layout). Their
  // algorithm among the node leaders follows from the key (across_nodes, on a miss).
  std::uint64_t layout = 0;
  bool operator==(const plan_key&) const = default;
};
struct plan_key_hash {
  std::size_t operator()(const plan_key& k) const noexcept {
    std::size_t h =
        static_cast<std::size_t>(k.which) * 0x9E3779B97F4A7C15ull + k.commutative * 2u + k.in_place;
    for (std::size_t v :
         {static_cast<std::size_t>(k.p), static_cast<std::size_t>(k.me),
          static_cast<std::size_t>(k.root), k.bytes, k.elem, static_cast<std::size_t>(k.layout)})
      h = (h ^ v) * 0x100000001B3ull + (h >> 29);
    return h;
  }
};
using plan_ptr = std::shared_ptr<const coll::schedule>;
// A direct-mapped front (mask, no division) answers the repeated call without the map.
struct front_entry {
  plan_key key;
  plan_ptr plan;
};
constexpr std::size_t front_size = 64;
// A plan preceded by the count check (with_count_check), by the plan it precedes (held, so
// that no other plan takes its address) and the signature checked.
struct checked_entry {
  plan_ptr main;
  std::size_t bytes = 0;
  int root = -1;
  plan_ptr plan;
};
// Per rank (rank_context::layer), one for every collective (the key names the planner):
// declared inside cached<Make>, it was a type, and a layer slot, per instantiation.
struct plans {
  explicit plans(rank_context&) {}
  bounded_cache<plan_key, plan_ptr, plan_key_hash, 4096> cache;
  std::array<front_entry, front_size> front{};
  std::array<checked_entry, front_size> checked{};  // direct-mapped as `front`
};
template <class Make>
const plan_ptr& cached(const coll_target& t, const plan_key& k, Make&& make) {
  plans& all = t.ctx->layer<plans>();
  const std::size_t h = plan_key_hash{}(k);
  front_entry& f = all.front[(h ^ (h >> 17)) & (front_size - 1)];
  if (f.plan && f.key == k) return f.plan;
  f = {k, all.cache.get(k, [&] { return std::make_shared<const coll::schedule>(make()); })};
  return f.plan;
}

// Scans: input and output of the same count, disjoint (or one buffer); returns their size in bytes.
std::size_t check_scan_buffers(const coll_target& t, const char* call, const block_buffers& b) {
  const std::size_t bytes = checked_bytes(call, t.world_rank, b.in_count, b.elem);
  if (b.in_place) return bytes;
  if (b.out_count != b.in_count)
    fail(call, t.world_rank, "output holds ", b.out_count, " elements, input ", b.in_count);
  check_disjoint(t, call, b.in, bytes, b.out, bytes);
  return bytes;
}

prepared blocks(const coll_target& t, const char* call, std::shared_ptr<const coll::schedule> plan,
                const void* in, void* out, std::size_t block, int root = -1) {
  return {t, call, std::move(plan), in, out, op_binding{}, block, root, true};
}

// Every checked_every-th collective a group runs by messages, the first included, first
// reduces its ranks' signatures (the count check; every one with CAIRN_COLL_CHECK=1): a
// disagreement there fails on every rank before any data moves, and no rank runs more than
// this many blocking collectives ahead of the others on a group (a bcast's root, a reduce's
// other ranks never wait for anyone otherwise).
constexpr std::uint32_t checked_every = 128;

bool runs_checked(const prepared& p, std::uint32_t seq) {
  return seq % checked_every == 0 || (p.checked && count_check_enabled());
}

// The plan of `p` after the count check (1 start in checked_every, or every start in the
// debugging mode CAIRN_COLL_CHECK=1), cached per rank. The v-collectives, whose counts
// legitimately differ, check only the root and the algorithm.
const plan_ptr& with_count_check(const prepared& p) {
  const std::size_t bytes = p.checked ? p.check_bytes : 0;
  const std::size_t h = std::hash<const void*>{}(p.plan.get()) ^ (bytes * 0x9E3779B97F4A7C15ull) ^
                        static_cast<std::size_t>(p.check_root + 1);
  checked_entry& e = p.target.ctx->layer<plans>().checked[(h ^ (h >> 17)) & (front_size - 1)];
  if (e.main == p.plan && e.bytes == bytes && e.root == p.check_root) return e.plan;
  const coll::schedule& main = *p.plan;
  coll::schedule s =
      coll::plan_count_check_dissemination(main.group_size, main.group_rank, bytes, p.check_root);
  s.name = main.name + "+count_check";
  coll::append(s, main,
               {{coll::slot::input, 0}, {coll::slot::output, 0}, {coll::slot::temp, s.temp_bytes}});
  e = {p.plan, bytes, p.check_root, std::make_shared<const coll::schedule>(std::move(s))};
  return e.plan;
}

// What the call's messages carry of its size and root (call_signature).
call_shape shape_of(const prepared& p) { return {p.checked ? p.check_bytes : 0, p.check_root}; }

// A collective forced onto the board (shared_memory), or refused with the reason.
prepared on_board(const coll_target& t, const char* call, board_collective k, const void* in,
                  void* out, const op_binding& op, std::size_t bytes, int root,
                  board_path path = board_path::automatic) {
  if (const char* why = board_refusal(t, k, bytes, path))
    fail(call, t.world_rank, "the ", board_algorithm_name(path), " algorithm ", why);
  prepared p(t, call, nullptr, in, out, op, bytes, root, true);
  p.board = k;
  p.path = path;
  return p;
}

// The board path of a board algorithm (nullopt: the algorithm runs by messages).
template <class Alg>
std::optional<board_path> path_of(Alg a) {
  if (a == Alg::shared_memory) return board_path::automatic;
  if (a == Alg::shared_memory_direct) return board_path::direct;
  if (a == Alg::shared_memory_staged) return board_path::staged;
  return std::nullopt;
}

// What the selection table's conditions see of a call on `t` of `bytes` (the size the table
// measures) in elements of `elem` bytes.
call_facts facts(const coll_target& t, std::size_t bytes, std::size_t elem,
                 bool commutative = true) {
  return {bytes,           elem,  group_size(t),
          commutative,     false, t.ctx->engine() == cairn::engine::mpi,
          t.members->nodes};
}

// The hierarchical algorithms: the node of every group rank (planning only, on a cache miss).
std::vector<int> nodes_of(const coll_target& t) {
  std::vector<int> n;
  n.reserve(t.members->world_ranks.size());
  for (int w : t.members->world_ranks)
    n.push_back(t.ctx->topo().node_of[static_cast<std::size_t>(w)]);
  return n;
}

// A hierarchical algorithm's refusal of a non-commutative operation on nodes whose ranks are
// not consecutive in the group (operands could not stay in group order).
void check_node_order(const coll_target& t, const char* call, bool commutative) {
  if (!commutative && !t.members->nodes_consecutive)
    fail(call, t.world_rank,
         "the hierarchical algorithm needs a commutative operation where a node's ranks are not "
         "consecutive in the group (",
         t.members->nodes, " nodes)");
}

// The algorithm among the node leaders of a hierarchical `Alg`: the table's choice for a group
// of one rank per node, where it runs by messages (else `fallback`).
template <class Alg>
Alg across_nodes(const coll_target& t, call_facts f, Alg fallback) {
  f.ranks = t.members->nodes;
  f.nodes = t.members->nodes;
  const Alg a = select_algorithm(t, f, Alg::automatic);
  bool hierarchical = a == Alg::hierarchical;
  if constexpr (requires { Alg::hierarchical_slices; })
    hierarchical = hierarchical || a == Alg::hierarchical_slices;
  return a == Alg::automatic || hierarchical || path_of(a) ? fallback : a;
}

// A collective that runs by messages, behind a board gate (prepared::gate) where the table
// chose messages (`automatic`) and another count would run on the board: its ranks first meet
// the others' signatures there, where a rank whose count put it on the board waits for them.
prepared by_messages(prepared&& r, bool automatic, coll_id id, const call_facts& f) {
  if (automatic && board_elsewhere(r.target, id, f)) {
    r.board = board_provider(id);
    r.gate = true;
  }
  return std::move(r);
}

// A board collective runs on the world's slots (in issue order on the world) or on the keyed
// ones of groups (and the generalized reduce's roles).
bool on_world_slots(const prepared& p) {
  return p.board != board_collective::reduce_generalized && board_on_world(p.target);
}

request start_board(const prepared& p) {
  return on_world_slots(p) ? start_on_board(p) : start_on_group_board(p);
}
}  // namespace

request start_prepared(prepared&& p) {
  if (p.board != board_collective::none) return start_board(p);
  rank_entry guard(*p.target.ctx);
  const numbered number = coll_state(*p.target.ctx).next_seq(p.target.members->id);
  if (runs_checked(p, number.seq)) p.plan = with_count_check(p);
  const call_shape shape = shape_of(p);
  return start_schedule(std::move(p.target), p.call, std::move(p.plan), p.in, p.out,
                        std::move(p.op), number, shape);
}

request start_prepared(const prepared& p) {
  if (p.board != board_collective::none) return start_board(p);
  rank_entry guard(*p.target.ctx);
  const numbered number = coll_state(*p.target.ctx).next_seq(p.target.members->id);
  return start_schedule(p.target, p.call,
                        runs_checked(p, number.seq) ? with_count_check(p) : p.plan, p.in, p.out,
                        p.op, number, shape_of(p));
}

std::uint32_t reserve_collective(const coll_target& t) {
  rank_entry guard(*t.ctx);
  return coll_state(*t.ctx).next_seq(t.members->id).seq;
}

void release_collective(const coll_target& t, std::uint32_t seq) {
  rank_entry guard(*t.ctx);
  coll_state(*t.ctx).numbers(t.members->id, seq).release();
}

request start_reserved(prepared&& p, std::uint32_t seq) {
  if (!p.plan)
    fail(p.call, p.target.world_rank, "internal: a reserved collective must run by messages");
  p.board = board_collective::none;
  p.gate = false;
  rank_entry guard(*p.target.ctx);
  if (runs_checked(p, seq)) p.plan = with_count_check(p);
  const numbered number = coll_state(*p.target.ctx).numbers(p.target.members->id, seq);
  const call_shape shape = shape_of(p);
  return start_schedule(std::move(p.target), p.call, std::move(p.plan), p.in, p.out,
                        std::move(p.op), number, shape);
}

void run_blocking(prepared&& p) {
  if (p.board == board_collective::none || p.gate)
    start_prepared(std::move(p)).wait();
  else if (on_world_slots(p))
    run_on_board(p);
  else
    run_on_group_board(p);
}

prepared prepare_barrier(const coll_target& t, const char* call) {
  if (select_algorithm(t, facts(t, 0, 1), barrier_algorithm::automatic) ==
      barrier_algorithm::shared_memory)
    return on_board(t, call, board_collective::barrier, nullptr, nullptr, {}, 0, -1);
  const int p = group_size(t), me = t.group_rank;
  auto plan = cached(t, {planner::barrier_dissemination, true, p, me, 0, 0, 0},
                     [&] { return coll::plan_barrier_dissemination(p, me); });
  return {t, call, std::move(plan), nullptr, nullptr, op_binding{}, 0, -1, true};
}

prepared prepare_bcast(const coll_target& t, const char* call, void* buf, std::size_t bytes,
                       int root, bcast_algorithm alg) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const bool automatic = alg == bcast_algorithm::automatic;
  const call_facts f = facts(t, bytes, 1);
  alg = select_algorithm(t, f, alg);
  if (const auto path = path_of(alg))
    return on_board(t, call, board_collective::bcast, buf, buf, {}, bytes, root, *path);
  if (alg == bcast_algorithm::hierarchical) {
    auto plan = cached(
        t,
        {planner::bcast_hierarchical, true, p, me, root, bytes, 0, false, t.members->node_layout},
        [&] {
          return coll::plan_bcast_hierarchical(nodes_of(t), me, root, bytes,
                                               across_nodes(t, f, bcast_algorithm::binomial));
        });
    return by_messages({t, call, std::move(plan), buf, buf, op_binding{}, bytes, root, true},
                       automatic, coll_id::bcast, f);
  }
  auto plan = alg == bcast_algorithm::scatter_allgather
                  ? cached(t, {planner::bcast_scatter_allgather, true, p, me, root, bytes, 0},
                           [&] { return coll::plan_bcast_scatter_allgather(p, me, root, bytes); })
                  : cached(t, {planner::bcast_binomial, true, p, me, root, bytes, 0},
                           [&] { return coll::plan_bcast_binomial(p, me, root, bytes); });
  return by_messages({t, call, std::move(plan), buf, buf, op_binding{}, bytes, root, true},
                     automatic, coll_id::bcast, f);
}

prepared prepare_reduce(const coll_target& t, const char* call, const void* in, void* out,
                        std::size_t count, int root, const op_binding& op, reduce_algorithm alg) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const std::size_t bytes = count * op.elem;
  const bool automatic = alg == reduce_algorithm::automatic;
  const call_facts f = facts(t, bytes, op.elem, op.commutative);
  alg = select_algorithm(t, f, alg);
  if (const auto path = path_of(alg))
    return on_board(t, call, board_collective::reduce, in, out, op, bytes, root, *path);
  if (alg == reduce_algorithm::hierarchical) {
    check_node_order(t, call, op.commutative);
    auto plan = cached(t,
                       {planner::reduce_hierarchical, op.commutative, p, me, root, bytes, op.elem,
                        false, t.members->node_layout},
                       [&] {
                         return coll::plan_reduce_hierarchical(
                             nodes_of(t), me, root, bytes, op.elem, op.commutative,
                             across_nodes(t, f, reduce_algorithm::binomial));
                       });
    return by_messages({t, call, std::move(plan), in, out, op, bytes, root, true}, automatic,
                       coll_id::reduce, f);
  }
  auto plan =
      alg == reduce_algorithm::reduce_scatter_gather
          ? cached(t, {planner::reduce_scatter_gather, op.commutative, p, me, root, bytes, op.elem},
                   [&] {
                     return coll::plan_reduce_scatter_gather(p, me, root, bytes, op.elem,
                                                             op.commutative);
                   })
          : cached(t, {planner::reduce_binomial, op.commutative, p, me, root, bytes, 0},
                   [&] { return coll::plan_reduce_binomial(p, me, root, bytes, op.commutative); });
  return by_messages({t, call, std::move(plan), in, out, op, bytes, root, true}, automatic,
                     coll_id::reduce, f);
}

prepared prepare_allreduce(const coll_target& t, const char* call, const void* in, void* out,
                           std::size_t count, const op_binding& op, allreduce_algorithm alg) {
  const int p = group_size(t);
  const std::size_t bytes = count * op.elem;
  if (alg == allreduce_algorithm::ring && !op.commutative)
    fail(call, t.world_rank, "the ring algorithm needs a commutative operation");
  const bool automatic = alg == allreduce_algorithm::automatic;
  const call_facts f = facts(t, bytes, op.elem, op.commutative);
  alg = select_algorithm(t, f, alg);
  if (const auto path = path_of(alg))
    return on_board(t, call, board_collective::allreduce, in, out, op, bytes, -1, *path);
  const int me = t.group_rank;
  std::shared_ptr<const coll::schedule> plan;
  if (alg == allreduce_algorithm::hierarchical) {
    check_node_order(t, call, op.commutative);
    plan = cached(t,
                  {planner::allreduce_hierarchical, op.commutative, p, me, 0, bytes, op.elem, false,
                   t.members->node_layout},
                  [&] {
                    return coll::plan_allreduce_hierarchical(
                        nodes_of(t), me, bytes, op.elem, op.commutative,
                        across_nodes(t, f, allreduce_algorithm::recursive_doubling));
                  });
  } else if (alg == allreduce_algorithm::hierarchical_slices) {
    check_node_order(t, call, op.commutative);
    if (!t.members->nodes_equal)
      fail(call, t.world_rank,
           "the hierarchical_slices algorithm needs nodes that each hold as many of the group's ",
           p, " ranks (", t.members->nodes, " nodes)");
    plan = cached(t,
                  {planner::allreduce_hierarchical_slices, op.commutative, p, me, 0, bytes, op.elem,
                   false, t.members->node_layout},
                  [&] {
                    // Among the nodes each rank reduces one slice of the vector.
                    call_facts slice = f;
                    slice.bytes =
                        bytes / static_cast<std::size_t>(p / t.members->nodes) / op.elem * op.elem;
                    return coll::plan_allreduce_hierarchical_slices(
                        nodes_of(t), me, bytes, op.elem, op.commutative,
                        across_nodes(t, slice, allreduce_algorithm::recursive_doubling));
                  });
  } else if (alg == allreduce_algorithm::ring)
    plan = cached(t, {planner::allreduce_ring, true, p, me, 0, bytes, op.elem},
                  [&] { return coll::plan_allreduce_ring(p, me, bytes, op.elem); });
  else if (alg == allreduce_algorithm::rabenseifner)
    plan = cached(
        t, {planner::allreduce_rabenseifner, op.commutative, p, me, 0, bytes, op.elem},
        [&] { return coll::plan_allreduce_rabenseifner(p, me, bytes, op.elem, op.commutative); });
  else
    plan = cached(
        t, {planner::allreduce_recursive_doubling, op.commutative, p, me, 0, bytes, op.elem}, [&] {
          return coll::plan_allreduce_recursive_doubling(p, me, bytes, op.elem, op.commutative);
        });
  return by_messages({t, call, std::move(plan), in, out, op, bytes, -1, true}, automatic,
                     coll_id::allreduce, f);
}

// The short paths ask the table as prepare_allreduce and prepare_barrier do: its memo
// (choice_memo) answers a repeated call without walking the rules.
bool run_short_allreduce(const coll_target& t, const char* call, const void* in, void* out,
                         std::size_t count, const op_binding& op) {
  const std::size_t bytes = count * op.elem;
  if (bytes == 0 || !board_on_world(t)) return false;
  // The table answers only with what the engine can run here (its rules' can_run).
  const auto path = path_of(select_algorithm(t, facts(t, bytes, op.elem, op.commutative),
                                             allreduce_algorithm::automatic));
  return path && *path != board_path::staged &&
         run_short_on_board(t, call, board_collective::allreduce, *path, in, out, bytes, op);
}

bool run_short_barrier(const coll_target& t, const char* call) {
  return board_on_world(t) &&
         select_algorithm(t, facts(t, 0, 1), barrier_algorithm::automatic) ==
             barrier_algorithm::shared_memory &&
         run_short_on_board(t, call, board_collective::barrier, board_path::automatic, nullptr,
                            nullptr, 0, {});
}

prepared prepare_gather(const coll_target& t, const char* call, const block_buffers& b, int root) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const std::size_t n =
      b.in_place ? per_rank_block(t, call, "in-place buffer", b.out_count, b.elem) : b.in_count;
  const std::size_t block = checked_bytes(call, t.world_rank, n, b.elem);
  if (me == root && !b.in_place) {
    const std::size_t need = blocks_count(t, call, n, static_cast<std::size_t>(p), b.elem);
    check_holds(t, call, "output", b.out_count, need, n);
    check_disjoint(t, call, b.in, block, b.out, need * b.elem);
  }
  // In place the input is this rank's block of the buffer: the root's copy of it into the
  // output becomes a no-op, and the output is written by receives only.
  return blocks(t, call,
                cached(t, {planner::gather_binomial, true, p, me, root, block, 0},
                       [&] { return coll::plan_gather_binomial(p, me, root, block); }),
                b.in_place ? block_at(b.out, me, block) : b.in, b.out, block, root);
}

prepared prepare_scatter(const coll_target& t, const char* call, const block_buffers& b, int root) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const std::size_t n =
      b.in_place ? per_rank_block(t, call, "in-place buffer", b.in_count, b.elem) : b.out_count;
  const std::size_t block = checked_bytes(call, t.world_rank, n, b.elem);
  if (me == root && !b.in_place) {
    const std::size_t need = blocks_count(t, call, n, static_cast<std::size_t>(p), b.elem);
    check_holds(t, call, "input", b.in_count, need, n);
    check_disjoint(t, call, b.in, need * b.elem, b.out, block);
  }
  // In place the output is this rank's block of the buffer: the root's copy into it becomes a
  // no-op, and the input is only read.
  return blocks(t, call,
                cached(t, {planner::scatter_binomial, true, p, me, root, block, 0},
                       [&] { return coll::plan_scatter_binomial(p, me, root, block); }),
                b.in, b.in_place ? block_at(b.out, me, block) : b.out, block, root);
}

prepared prepare_allgather(const coll_target& t, const char* call, const block_buffers& b,
                           allgather_algorithm alg) {
  const int p = group_size(t);
  const std::size_t n =
      b.in_place ? per_rank_block(t, call, "in-place buffer", b.out_count, b.elem) : b.in_count;
  const std::size_t block = checked_bytes(call, t.world_rank, n, b.elem);
  const std::size_t need = blocks_count(t, call, n, static_cast<std::size_t>(p), b.elem);
  if (!b.in_place) {
    check_holds(t, call, "output", b.out_count, need, n);
    check_disjoint(t, call, b.in, block, b.out, need * b.elem);
  }
  const bool automatic = alg == allgather_algorithm::automatic;
  const call_facts f = facts(t, need * b.elem, b.elem);
  alg = select_algorithm(t, f, alg);
  const int me = t.group_rank;
  const void* in = b.in_place ? block_at(b.out, me, block) : b.in;
  if (const auto path = path_of(alg))
    return on_board(t, call, board_collective::allgather, in, b.out, {}, block, -1, *path);
  std::shared_ptr<const coll::schedule> plan;
  if (alg == allgather_algorithm::hierarchical)
    plan = cached(
        t,
        {planner::allgather_hierarchical, true, p, me, 0, block, 0, false, t.members->node_layout},
        [&] { return coll::plan_allgather_hierarchical(nodes_of(t), me, block); });
  else if (alg == allgather_algorithm::ring)
    plan = cached(t, {planner::allgather_ring, true, p, me, 0, block, 0},
                  [&] { return coll::plan_allgather_ring(p, me, block); });
  else if (alg == allgather_algorithm::recursive_doubling)
    plan = cached(t, {planner::allgather_recursive_doubling, true, p, me, 0, block, 0},
                  [&] { return coll::plan_allgather_recursive_doubling(p, me, block); });
  else
    plan = cached(t, {planner::allgather_bruck, true, p, me, 0, block, 0},
                  [&] { return coll::plan_allgather_bruck(p, me, block); });
  // In place the input is this rank's block of the output. Every plan copies it first (a no-op
  // where it lands at its place, else into scratch) and never reads the input again.
  return by_messages(blocks(t, call, std::move(plan), in, b.out, block), automatic,
                     coll_id::allgather, f);
}

prepared prepare_alltoall(const coll_target& t, const char* call, const block_buffers& b,
                          alltoall_algorithm alg) {
  const int p = group_size(t);
  const std::size_t n =
      per_rank_block(t, call, b.in_place ? "in-place buffer" : "input", b.in_count, b.elem);
  const std::size_t bytes = b.in_count * b.elem;
  if (!b.in_place) {
    check_holds(t, call, "output", b.out_count, b.in_count, n);
    check_disjoint(t, call, b.in, bytes, b.out, bytes);
  }
  const int me = t.group_rank;
  const std::size_t block = n * b.elem;
  alg = select_algorithm(t, facts(t, block, b.elem), alg);
  // In place Bruck works as it is (it reads the input into scratch before any step), the
  // pairwise exchange sends from a copy of the buffer (it receives over blocks still to send).
  return blocks(t, call,
                alg == alltoall_algorithm::bruck
                    ? cached(t, {planner::alltoall_bruck, true, p, me, 0, block, 0},
                             [&] { return coll::plan_alltoall_bruck(p, me, block); })
                    : cached(t, {planner::alltoall_pairwise, true, p, me, 0, block, 0, b.in_place},
                             [&] {
                               auto s = coll::plan_alltoall_pairwise(p, me, block);
                               return b.in_place ? coll::plan_in_place_copy(s, bytes) : s;
                             }),
                b.in, b.out, block);
}

prepared prepare_reduce_scatter_block(const coll_target& t, const char* call,
                                      const block_buffers& b, const op_binding& op,
                                      reduce_scatter_block_algorithm alg) {
  const int p = group_size(t);
  const std::size_t n =
      b.in_place ? per_rank_block(t, call, "in-place buffer", b.in_count, b.elem) : b.out_count;
  const std::size_t block = checked_bytes(call, t.world_rank, n, b.elem);
  const std::size_t need = blocks_count(t, call, n, static_cast<std::size_t>(p), b.elem);
  if (!b.in_place) {
    check_holds(t, call, "input", b.in_count, need, n);
    check_disjoint(t, call, b.in, need * b.elem, b.out, block);
  }
  if (alg == reduce_scatter_block_algorithm::ring && !op.commutative)
    fail(call, t.world_rank, "the ring algorithm needs a commutative operation");
  const bool automatic = alg == reduce_scatter_block_algorithm::automatic;
  const call_facts f = facts(t, need * b.elem, b.elem, op.commutative);
  alg = select_algorithm(t, f, alg);
  if (const auto path = path_of(alg))
    return on_board(t, call, board_collective::reduce_scatter_block, b.in, b.out, op, block, -1,
                    *path);
  const int me = t.group_rank;
  // Neither plan depends on commutativity (recursive halving always keeps rank order; the ring
  // runs commutative operations only): the key does not tell them apart. In place (the output
  // is the input's first block) recursive halving reads all its input into scratch first; the
  // ring reads input blocks to the end and has an in-place form.
  auto plan =
      alg == reduce_scatter_block_algorithm::ring
          ? cached(t, {planner::reduce_scatter_block_ring, true, p, me, 0, block, 0, b.in_place},
                   [&] { return coll::plan_reduce_scatter_block_ring(p, me, block, b.in_place); })
          : cached(t, {planner::reduce_scatter_block_recursive_halving, true, p, me, 0, block, 0},
                   [&] { return coll::plan_reduce_scatter_block_recursive_halving(p, me, block); });
  return by_messages({t, call, std::move(plan), b.in, b.out, op, block, -1, true}, automatic,
                     coll_id::reduce_scatter_block, f);
}

prepared prepare_scan(const coll_target& t, const char* call, const block_buffers& b,
                      const op_binding& op) {
  const std::size_t bytes = check_scan_buffers(t, call, b);
  const int p = group_size(t), me = t.group_rank;
  // In place the first copy (input to output) is a no-op and the input is not read again.
  auto plan = cached(t, {planner::scan_recursive_doubling, true, p, me, 0, bytes, 0},
                     [&] { return coll::plan_scan_recursive_doubling(p, me, bytes); });
  return {t, call, std::move(plan), b.in, b.out, op, bytes, -1, true};
}

prepared prepare_exscan(const coll_target& t, const char* call, const block_buffers& b,
                        const op_binding& op) {
  const std::size_t bytes = check_scan_buffers(t, call, b);
  const int p = group_size(t), me = t.group_rank;
  // The exclusive scan receives into its output while it still sends its input: in place it
  // works on a copy.
  auto plan =
      cached(t, {planner::exscan_recursive_doubling, true, p, me, 0, bytes, 0, b.in_place}, [&] {
        auto s = coll::plan_exscan_recursive_doubling(p, me, bytes);
        return b.in_place ? coll::plan_in_place_copy(s, bytes) : s;
      });
  return {t, call, std::move(plan), b.in, b.out, op, bytes, -1, true};
}

}  // namespace cairn::detail
