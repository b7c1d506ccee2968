// The entry points of the typed collective calls: check the arguments, choose the algorithm,
// plan the schedule and start it.
#include <memory>

#include "coll/executor.hpp"
#include "coll/planners.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {
int group_size(const coll_target& t) { return static_cast<int>(t.members->world_ranks.size()); }

void check_root(const coll_target& t, const char* call, int root) {
  if (root < 0 || root >= group_size(t))
    fail(call, t.world_rank, "root ", root, " is outside the group of ", group_size(t), " ranks");
}

constexpr std::size_t ring_threshold_bytes = 256 * 1024;
}  // namespace

request start_barrier(const coll_target& t, const char* call) {
  auto plan = std::make_shared<const coll::schedule>(
      coll::plan_barrier_dissemination(group_size(t), t.group_rank));
  return start_schedule(t, call, std::move(plan), nullptr, nullptr, op_binding{});
}

request start_bcast(const coll_target& t, const char* call, void* buf, std::size_t bytes, int root) {
  check_root(t, call, root);
  auto plan = std::make_shared<const coll::schedule>(
      coll::plan_bcast_binomial(group_size(t), t.group_rank, root, bytes));
  return start_schedule(t, call, std::move(plan), buf, buf, op_binding{});
}

request start_reduce(const coll_target& t, const char* call, const void* in, void* out,
                     std::size_t count, int root, const op_binding& op) {
  check_root(t, call, root);
  auto plan = std::make_shared<const coll::schedule>(coll::plan_reduce_binomial(
      group_size(t), t.group_rank, root, count * op.elem, op.commutative));
  return start_schedule(t, call, std::move(plan), in, out, op);
}

request start_allreduce(const coll_target& t, const char* call, const void* in, void* out,
                        std::size_t count, const op_binding& op, allreduce_algorithm alg) {
  const int p = group_size(t);
  const std::size_t bytes = count * op.elem;
  if (alg == allreduce_algorithm::ring && !op.commutative)
    fail(call, t.world_rank, "the ring algorithm needs a commutative operation");
  if (alg == allreduce_algorithm::automatic)
    alg = op.commutative && p > 2 && bytes >= ring_threshold_bytes && count >= static_cast<std::size_t>(p)
              ? allreduce_algorithm::ring
              : allreduce_algorithm::recursive_doubling;
  auto plan = std::make_shared<const coll::schedule>(
      alg == allreduce_algorithm::ring
          ? coll::plan_allreduce_ring(p, t.group_rank, bytes, op.elem)
          : coll::plan_allreduce_recursive_doubling(p, t.group_rank, bytes, op.elem, op.commutative));
  return start_schedule(t, call, std::move(plan), in, out, op);
}

}  // namespace cairn::detail
