#include "cairn/runtime/group.hpp"

#include <algorithm>

#include "cairn/runtime/world.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"
#if CAIRN_HAVE_MPI
#include "cairn/runtime/mpi.hpp"
#include "transport/mpi_transport.hpp"
#endif

namespace cairn {

namespace detail {

group_members::group_members(std::vector<int> ranks, const topology& where, std::uint64_t stream)
    : world_ranks(std::move(ranks)) {
  id = hash_ranks(world_ranks, stream);
  std::vector<int> node(world_ranks.size());
  for (std::size_t r = 0; r < node.size(); ++r)
    node[r] = where.node_of[static_cast<std::size_t>(world_ranks[r])];
  node_layout = hash_ranks(node);
  // A node seen again after another one began: its members are not consecutive.
  std::vector<int> seen;
  for (std::size_t r = 0; r < node.size(); ++r) {
    if (r > 0 && node[r] == node[r - 1]) continue;
    if (std::find(seen.begin(), seen.end(), node[r]) != seen.end())
      nodes_consecutive = false;
    else
      seen.push_back(node[r]);
  }
  nodes = static_cast<int>(seen.size());
  for (int n : seen)
    nodes_equal = nodes_equal && std::count(node.begin(), node.end(), n) * nodes ==
                                     static_cast<std::ptrdiff_t>(node.size());
}

int group_members::rank_of(int w) const noexcept {
  for (std::size_t i = 0; i < world_ranks.size(); ++i)
    if (world_ranks[i] == w) return static_cast<int>(i);
  return -1;
}

}  // namespace detail

group::group(std::shared_ptr<detail::rank_context> ctx,
             std::shared_ptr<const detail::group_members> m)
    : ctx_(std::move(ctx)), members_(std::move(m)), rank_(members_->rank_of(ctx_->rank())) {}

int group::size() const noexcept {
  return members_ ? static_cast<int>(members_->world_ranks.size()) : 0;
}

int group::world_rank(int r) const {
  if (!members_ || r < 0 || r >= size())
    detail::fail("group::world_rank", ctx_ ? ctx_->rank() : -1, "group rank ", r,
                 " is outside the group of ", size(), " ranks");
  return members_->world_ranks[static_cast<std::size_t>(r)];
}

const std::vector<int>& group::members() const {
  static const std::vector<int> none;
  return members_ ? members_->world_ranks : none;
}

std::uint64_t group::id() const noexcept { return members_ ? members_->id : 0; }

cairn::world group::world() const {
  if (!ctx_) throw error("cairn::group::world: this group belongs to no run");
  return cairn::world(ctx_);
}

detail::rank_context& group::context(const char* call) const {
  if (!ctx_) throw error(std::string("cairn::") + call + ": this group belongs to no run");
  ctx_->check_alive(call);
  return *ctx_;
}

detail::coll_target group::coll_target(const char* call) const {
  if (!ctx_) throw error(std::string("cairn::") + call + ": this group belongs to no run");
  ctx_->check_alive(call);
  if (rank_ < 0)
    detail::fail(call, ctx_->rank(), "this rank is not a member of the group (", size(),
                 " ranks, first ", members_->world_ranks.empty() ? -1 : members_->world_ranks[0],
                 ")");
  return {ctx_.get(), members_, rank_, ctx_->rank()};
}

cairn::group world::group(ranks r) const {
  (void)context("group");
  if (r.stride <= 0) detail::fail("group", rank_, "stride ", r.stride, " is not positive");
  if (r.first < 0 || r.last > size_ || (r.first > r.last))
    detail::fail("group", rank_, "ranks [", r.first, ", ", r.last, ") are outside the world of ",
                 size_, " ranks");
  std::vector<int> m;
  for (int x = r.first; x < r.last; x += r.stride) m.push_back(x);
  if (m.empty()) detail::fail("group", rank_, "ranks [", r.first, ", ", r.last, ") select no rank");
  return cairn::group(ctx_,
                      std::make_shared<const detail::group_members>(std::move(m), ctx_->topo()));
}

cairn::group world::group(std::vector<int> members) const {
  (void)context("group");
  if (members.empty()) detail::fail("group", rank_, "empty member list");
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= size_)
      detail::fail("group", rank_, "rank ", sorted[i], " is outside the world of ", size_,
                   " ranks");
    if (i > 0 && sorted[i] == sorted[i - 1])
      detail::fail("group", rank_, "rank ", sorted[i], " is listed twice");
  }
  return cairn::group(
      ctx_, std::make_shared<const detail::group_members>(std::move(members), ctx_->topo()));
}

detail::coll_target world::coll_target(const char* call) const {
  auto& c = context(call);
  // The world's members live as long as the run, and so must every request on them: a
  // non-owning pointer spares the atomic reference counting of each collective's copies.
  return {&c,
          std::shared_ptr<const detail::group_members>(
              std::shared_ptr<const detail::group_members>{}, c.world_group().get()),
          rank_, rank_};
}

#if CAIRN_HAVE_MPI
namespace {
detail::mpi_transport& mpi_engine_of(detail::rank_context& c, const char* call) {
  if (c.engine() != engine::mpi)
    detail::fail(call, c.rank(),
                 "an MPI communicator needs the MPI engine; this run uses the threads engine "
                 "(run under an MPI launcher, or with --cairn-engine=mpi)");
  return static_cast<detail::mpi_transport&>(c.tp());
}
}  // namespace

MPI_Comm mpi_comm(const world& w) {
  return mpi_engine_of(w.context("mpi_comm"), "mpi_comm").user_comm();
}

MPI_Comm mpi_comm(const group& g) {
  detail::mpi_transport& t = mpi_engine_of(g.context("mpi_comm"), "mpi_comm");
  if (g.rank() < 0) return MPI_COMM_NULL;
  return t.user_group_comm("mpi_comm", g.members());
}
#endif

}  // namespace cairn
