// The entry points of the v-collectives (per-rank counts and displacements): check the layouts
// against the group and the buffers, convert them to bytes and plan. The plans depend on every
// count, so they are not cached (a persistent collective plans once and starts many times).
#include <cstdint>
#include <limits>
#include <vector>

#include "cairn/runtime/error.hpp"
#include "cairn/runtime/transferable.hpp"
#include "coll/executor.hpp"
#include "coll/planners.hpp"
#include "coll/start_checks.hpp"
#include "runtime/group_members.hpp"

namespace cairn::detail {

namespace {
// A layout in bytes, checked: `what` ("receive counts", ...) has one entry per rank, every
// block lies inside the `holds` elements of `buffer` ("output", ...).
struct byte_layout {
  std::vector<std::size_t> bytes, offsets;
};
byte_layout to_bytes(const coll_target& t, const char* call, const char* what, vector_layout l,
                     const char* buffer, std::size_t holds, std::size_t elem) {
  const std::size_t p = static_cast<std::size_t>(group_size(t));
  if (l.counts.size() != p)
    fail(call, t.world_rank, what, " have ", l.counts.size(), " entries for a group of ", p, " ranks");
  if (!l.displs.empty() && l.displs.size() != p)
    fail(call, t.world_rank, "displacements have ", l.displs.size(), " entries for a group of ", p, " ranks");
  byte_layout b{std::vector<std::size_t>(p), std::vector<std::size_t>(p)};
  std::size_t packed = 0;
  for (std::size_t r = 0; r < p; ++r) {
    const std::size_t n = l.counts[r], at = l.displs.empty() ? packed : l.displs[r];
    if (at > holds || n > holds - at)
      fail(call, t.world_rank, "the block of rank ", r, " (", n, " elements at displacement ", at, ") lies outside the ",
           buffer, ", which holds ", holds, " elements");
    b.bytes[r] = checked_bytes(call, t.world_rank, n, elem);
    b.offsets[r] = at * elem;
    packed = at + n;  // (used only when packed)
  }
  return b;
}

prepared plain(const coll_target& t, const char* call, coll::schedule&& plan, const block_buffers& b,
               op_binding op = {}) {
  return {t, call, std::make_shared<const coll::schedule>(std::move(plan)), b.in, b.out, std::move(op)};
}

// This rank's own block is counted twice (sent and received locally): both counts must agree.
void check_own(const coll_target& t, const char* call, const char* mine, std::size_t have,
               const char* counts, std::size_t want) {
  if (have != want)
    fail(call, t.world_rank, mine, " ", have, " elements, but ", counts, "[", t.group_rank, "] is ", want);
}
}  // namespace

prepared prepare_gatherv(const coll_target& t, const char* call, const block_buffers& b,
                         vector_layout recv, int root) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const std::size_t send = checked_bytes(call, t.world_rank, b.in_count, b.elem);
  byte_layout l;
  if (me == root) {
    l = to_bytes(t, call, "receive counts", recv, "output", b.out_count, b.elem);
    check_own(t, call, "the root sends", b.in_count, "counts", recv.counts[static_cast<std::size_t>(me)]);
    check_disjoint(t, call, b.in, send, b.out, b.out_count * b.elem);
  }
  return plain(t, call, coll::plan_gatherv_linear(p, me, root, send, l.bytes, l.offsets), b);
}

prepared prepare_scatterv(const coll_target& t, const char* call, const block_buffers& b,
                          vector_layout send, int root) {
  check_root(t, call, root);
  const int p = group_size(t), me = t.group_rank;
  const std::size_t recv = checked_bytes(call, t.world_rank, b.out_count, b.elem);
  byte_layout l;
  if (me == root) {
    l = to_bytes(t, call, "send counts", send, "input", b.in_count, b.elem);
    check_own(t, call, "the root receives", b.out_count, "counts", send.counts[static_cast<std::size_t>(me)]);
    check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, recv);
  }
  return plain(t, call, coll::plan_scatterv_linear(p, me, root, l.bytes, l.offsets, recv), b);
}

prepared prepare_allgatherv(const coll_target& t, const char* call, const block_buffers& b,
                            vector_layout recv) {
  const int p = group_size(t), me = t.group_rank;
  const byte_layout l = to_bytes(t, call, "receive counts", recv, "output", b.out_count, b.elem);
  check_own(t, call, "input holds", b.in_count, "counts", recv.counts[static_cast<std::size_t>(me)]);
  check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, b.out_count * b.elem);
  return plain(t, call, coll::plan_allgatherv_ring(p, me, l.bytes, l.offsets), b);
}

prepared prepare_alltoallv(const coll_target& t, const char* call, const block_buffers& b,
                           vector_layout send, vector_layout recv) {
  const int p = group_size(t), me = t.group_rank;
  const byte_layout s = to_bytes(t, call, "send counts", send, "input", b.in_count, b.elem);
  const byte_layout r = to_bytes(t, call, "receive counts", recv, "output", b.out_count, b.elem);
  const auto own = static_cast<std::size_t>(me);
  check_own(t, call, "send counts[rank] is", send.counts[own], "receive counts", recv.counts[own]);
  check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, b.out_count * b.elem);
  return plain(t, call, coll::plan_alltoallv_pairwise(p, me, s.bytes, s.offsets, r.bytes, r.offsets), b);
}

prepared prepare_reduce_scatter(const coll_target& t, const char* call, const block_buffers& b,
                                std::span<const std::size_t> counts, const op_binding& op) {
  const int p = group_size(t), me = t.group_rank;
  const byte_layout l = to_bytes(t, call, "counts", {counts, {}}, "input", b.in_count, b.elem);
  const std::size_t mine = counts[static_cast<std::size_t>(me)];
  if (b.out_count < mine)
    fail(call, t.world_rank, "output holds ", b.out_count, " elements, needs counts[", me, "] = ", mine);
  check_disjoint(t, call, b.in, b.in_count * b.elem, b.out, mine * b.elem);
  return plain(t, call, coll::plan_reduce_scatter_pairwise(p, me, l.bytes), b, op);
}

}  // namespace cairn::detail
