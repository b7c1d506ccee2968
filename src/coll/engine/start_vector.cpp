// The entry points of the v-collectives (per-rank counts and displacements): check the layouts
// against the group and the buffers, convert them to bytes and plan. Plans are cached per thread
// by everything they depend on, the counts and displacements included, so a repeated
// v-collective with the same counts plans and allocates nothing.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/error.hpp"
#include "coll/algorithms/planners.hpp"
#include "coll/engine/executor.hpp"
#include "coll/engine/start_checks.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {
// Checks a layout: `what` ("receive counts", ...) has one entry per rank, every block lies inside
// the `holds` elements of `buffer` ("output", ...). Allocates nothing (it runs on every call).
void check_layout(const coll_target& t, const char* call, const char* what, vector_layout l,
                  const char* buffer, std::size_t holds, std::size_t elem) {
  const std::size_t p = static_cast<std::size_t>(group_size(t));
  if (l.counts.size() != p)
    fail(call, t.world_rank, what, " have ", l.counts.size(), " entries for a group of ", p,
         " ranks");
  if (!l.displs.empty() && l.displs.size() != p)
    fail(call, t.world_rank, "displacements have ", l.displs.size(), " entries for a group of ", p,
         " ranks");
  std::size_t packed = 0;
  for (std::size_t r = 0; r < p; ++r) {
    const std::size_t n = l.counts[r], at = l.displs.empty() ? packed : l.displs[r];
    if (at > holds || n > holds - at)
      fail(call, t.world_rank, "the block of rank ", r, " (", n, " elements at displacement ", at,
           ") lies outside the ", buffer, ", which holds ", holds, " elements");
    checked_bytes(call, t.world_rank, n, elem);
    packed = at + n;  // (used only when packed)
  }
}

// A checked layout in bytes (planning only: on a cache miss).
struct byte_layout {
  std::vector<std::size_t> bytes, offsets;
};
byte_layout to_bytes(vector_layout l, std::size_t elem) {
  byte_layout b{std::vector<std::size_t>(l.counts.size()),
                std::vector<std::size_t>(l.counts.size())};
  std::size_t packed = 0;
  for (std::size_t r = 0; r < l.counts.size(); ++r) {
    const std::size_t at = l.displs.empty() ? packed : l.displs[r];
    b.bytes[r] = l.counts[r] * elem;
    b.offsets[r] = at * elem;
    packed = at + l.counts[r];
  }
  return b;
}

// What a v-collective's plan depends on: the planner, group size, rank, root (-1: none), element
// size, this rank's own count where the layouts do not give it, and up to two layouts (empty
// where unused, e.g. on a non-root).
enum class planner : std::uint8_t {
  gatherv_linear,
  scatterv_linear,
  allgatherv_ring,
  alltoallv_pairwise,
  reduce_scatter_pairwise
};
struct plan_key {
  planner which;
  int p, me, root;
  std::size_t elem, count;
  vector_layout a, b;
};
std::size_t hash_of(const plan_key& k) {
  std::size_t h = static_cast<std::size_t>(k.which) * 0x9E3779B97F4A7C15ull;
  auto mix = [&h](std::size_t v) { h = (h ^ v) * 0x100000001B3ull + (h >> 29); };
  for (std::size_t v : {static_cast<std::size_t>(k.p), static_cast<std::size_t>(k.me),
                        static_cast<std::size_t>(k.root), k.elem, k.count})
    mix(v);
  for (std::span<const std::size_t> s : {k.a.counts, k.a.displs, k.b.counts, k.b.displs}) {
    mix(s.size());
    for (std::size_t v : s) mix(v);
  }
  return h;
}
// A cached plan with a copy of its key.
struct cache_entry {
  planner which;
  int p, me, root;
  std::size_t elem, count;
  std::vector<std::size_t> a_counts, a_displs, b_counts, b_displs;
  std::shared_ptr<const coll::schedule> plan;
  bool matches(const plan_key& k) const {
    return which == k.which && p == k.p && me == k.me && root == k.root && elem == k.elem &&
           count == k.count && std::ranges::equal(a_counts, k.a.counts) &&
           std::ranges::equal(a_displs, k.a.displs) && std::ranges::equal(b_counts, k.b.counts) &&
           std::ranges::equal(b_displs, k.b.displs);
  }
};
template <class Make>
const std::shared_ptr<const coll::schedule>& cached(const coll_target& t, const plan_key& k,
                                                    Make&& make) {
  // Per rank (in its context); found by hash, compared in full; bounded (counts that vary
  // forever, and a plan's size grows with the group).
  struct plans {
    explicit plans(rank_context&) {}
    std::unordered_multimap<std::size_t, cache_entry> cache;
  };
  auto& cache = t.ctx->layer<plans>().cache;
  const std::size_t h = hash_of(k);
  const auto [first, last] = cache.equal_range(h);
  for (auto it = first; it != last; ++it)
    if (it->second.matches(k)) return it->second.plan;
  if (cache.size() >= 256) cache.clear();
  auto vec = [](std::span<const std::size_t> s) {
    return std::vector<std::size_t>(s.begin(), s.end());
  };
  cache_entry e{k.which,
                k.p,
                k.me,
                k.root,
                k.elem,
                k.count,
                vec(k.a.counts),
                vec(k.a.displs),
                vec(k.b.counts),
                vec(k.b.displs),
                std::make_shared<const coll::schedule>(make())};
  return cache.emplace(h, std::move(e))->second.plan;
}

prepared plain(const coll_target& t, const char* call, std::shared_ptr<const coll::schedule> plan,
               const block_buffers& b, op_binding op = {}) {
  return {t, call, std::move(plan), b.in, b.out, std::move(op)};
}

// This rank's own block is counted twice (sent and received locally): both counts must agree.
void check_own(const coll_target& t, const char* call, const char* mine, std::size_t have,
               const char* counts, std::size_t want) {
  if (have != want)
    fail(call, t.world_rank, mine, " ", have, " elements, but ", counts, "[", t.group_rank, "] is ",
         want);
}
}  // namespace

prepared prepare_gatherv(const coll_target& t, const char* call, const block_buffers& b,
                         vector_layout recv, int root) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const std::size_t send = checked_bytes(call, t.world_rank, b.in_count, b.elem);
  if (me == root) {
    check_layout(t, call, "receive counts", recv, "output", b.out_count, b.elem);
    check_own(t, call, "the root sends", b.in_count, "counts",
              recv.counts[static_cast<std::size_t>(me)]);
    check_disjoint(t, call, b.in, send, b.out, b.out_count * b.elem);
  } else {
    recv = {};  // (not used: not part of the plan)
  }
  return plain(t, call,
               cached(t, {planner::gatherv_linear, p, me, root, b.elem, b.in_count, recv, {}},
                      [&] {
                        const byte_layout l = to_bytes(recv, b.elem);
                        return coll::plan_gatherv_linear(p, me, root, send, l.bytes, l.offsets);
                      }),
               b);
}

prepared prepare_scatterv(const coll_target& t, const char* call, const block_buffers& b,
                          vector_layout send, int root) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const std::size_t recv = checked_bytes(call, t.world_rank, b.out_count, b.elem);
  if (me == root) {
    check_layout(t, call, "send counts", send, "input", b.in_count, b.elem);
    check_own(t, call, "the root receives", b.out_count, "counts",
              send.counts[static_cast<std::size_t>(me)]);
    check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, recv);
  } else {
    send = {};
  }
  return plain(t, call,
               cached(t, {planner::scatterv_linear, p, me, root, b.elem, b.out_count, send, {}},
                      [&] {
                        const byte_layout l = to_bytes(send, b.elem);
                        return coll::plan_scatterv_linear(p, me, root, l.bytes, l.offsets, recv);
                      }),
               b);
}

prepared prepare_allgatherv(const coll_target& t, const char* call, const block_buffers& b,
                            vector_layout recv) {
  const int p = group_size(t), me = t.group_rank;
  check_layout(t, call, "receive counts", recv, "output", b.out_count, b.elem);
  check_own(t, call, "input holds", b.in_count, "counts",
            recv.counts[static_cast<std::size_t>(me)]);
  check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, b.out_count * b.elem);
  return plain(t, call,
               cached(t, {planner::allgatherv_ring, p, me, -1, b.elem, 0, recv, {}},
                      [&] {
                        const byte_layout l = to_bytes(recv, b.elem);
                        return coll::plan_allgatherv_ring(p, me, l.bytes, l.offsets);
                      }),
               b);
}

prepared prepare_alltoallv(const coll_target& t, const char* call, const block_buffers& b,
                           vector_layout send, vector_layout recv) {
  const int p = group_size(t), me = t.group_rank;
  check_layout(t, call, "send counts", send, "input", b.in_count, b.elem);
  check_layout(t, call, "receive counts", recv, "output", b.out_count, b.elem);
  const auto own = static_cast<std::size_t>(me);
  check_own(t, call, "send counts[rank] is", send.counts[own], "receive counts", recv.counts[own]);
  check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, b.out_count * b.elem);
  return plain(t, call,
               cached(t, {planner::alltoallv_pairwise, p, me, -1, b.elem, 0, send, recv},
                      [&] {
                        const byte_layout s = to_bytes(send, b.elem), r = to_bytes(recv, b.elem);
                        return coll::plan_alltoallv_pairwise(p, me, s.bytes, s.offsets, r.bytes,
                                                             r.offsets);
                      }),
               b);
}

prepared prepare_reduce_scatter(const coll_target& t, const char* call, const block_buffers& b,
                                std::span<const std::size_t> counts, const op_binding& op) {
  const int p = group_size(t), me = t.group_rank;
  check_layout(t, call, "counts", {counts, {}}, "input", b.in_count, b.elem);
  const std::size_t mine = counts[static_cast<std::size_t>(me)];
  if (b.out_count < mine)
    fail(call, t.world_rank, "output holds ", b.out_count, " elements, needs counts[", me,
         "] = ", mine);
  check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, mine * b.elem);
  return plain(
      t, call,
      cached(
          t, {planner::reduce_scatter_pairwise, p, me, -1, b.elem, 0, {counts, {}}, {}},
          [&] {
            return coll::plan_reduce_scatter_pairwise(p, me, to_bytes({counts, {}}, b.elem).bytes);
          }),
      b, op);
}

}  // namespace cairn::detail
