#include "cairn/runtime/world.hpp"

#include <limits>

#include "runtime/rank_context.hpp"

namespace cairn {

std::string_view to_string(cairn::engine e) noexcept {
  return e == engine::threads ? "threads" : "mpi";
}

namespace detail {

std::size_t checked_bytes(const char* call, int rank, std::int64_t count, std::size_t elem) {
  if (count < 0) fail(call, rank, "negative count ", count);
  return checked_bytes(call, rank, static_cast<std::size_t>(count), elem);
}

std::size_t checked_bytes(const char* call, int rank, std::size_t count, std::size_t elem) {
  // Half the address space: no real buffer is larger, and it keeps signed views of sizes exact.
  constexpr std::size_t max_bytes = std::numeric_limits<std::size_t>::max() / 2;
  if (elem != 0 && count > max_bytes / elem)
    fail(call, rank, "count ", count, " of ", elem, "-byte elements overflows the byte size");
  return count * elem;
}

}  // namespace detail

namespace {
using detail::fail;
using detail::msg_context;
using detail::request_state;

void check_dest(const detail::rank_context& c, const char* call, int dest, int tag) {
  if (dest < 0 || dest >= c.size())
    fail(call, c.rank(), "destination rank ", dest, " is outside the world of ", c.size(),
         " ranks");
  const int ub = c.tag_ub();
  if (tag < 0 || tag > ub) fail(call, c.rank(), "tag ", tag, " is outside [0, ", ub, "]");
}

void check_source(const detail::rank_context& c, const char* call, int source, int tag) {
  if (source != any_source && (source < 0 || source >= c.size()))
    fail(call, c.rank(), "source rank ", source, " is outside the world of ", c.size(),
         " ranks (use cairn::any_source for a wildcard)");
  const int ub = c.tag_ub();
  if (tag != any_tag && (tag < 0 || tag > ub))
    fail(call, c.rank(), "tag ", tag, " is outside [0, ", ub, "] (use cairn::any_tag)");
}
}  // namespace

world::world(std::shared_ptr<detail::rank_context> ctx)
    : ctx_(std::move(ctx)), rank_(ctx_->rank()), size_(ctx_->size()) {}

detail::rank_context& world::context(const char* call) const {
  if (!ctx_) throw error(std::string("cairn::") + call + ": this world belongs to no run");
  ctx_->check_alive(call);
  return *ctx_;
}

const std::vector<std::string>& world::args() const { return context("args").run().args; }

cairn::engine world::engine() const { return context("engine").engine(); }

int world::node_of(int r) const {
  const auto& c = context("node_of");
  if (r < 0 || r >= size_)
    fail("node_of", rank_, "rank ", r, " is outside the world of ", size_, " ranks");
  return c.topo().node_of[static_cast<std::size_t>(r)];
}

int world::node_count() const { return context("node_count").topo().node_count; }

int world::local_rank() const {
  return context("local_rank").topo().local_rank[static_cast<std::size_t>(rank_)];
}

int world::ranks_on_node() const {
  const auto& t = context("ranks_on_node").topo();
  return t.node_size[static_cast<std::size_t>(t.node_of[static_cast<std::size_t>(rank_)])];
}

int world::tag_ub() const { return context("tag_ub").tag_ub(); }

request world::isend_bytes(const char* call, const void* data, std::size_t bytes, int dest,
                           int tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  check_dest(c, call, dest, tag);
  if (request_state* s = c.tp().isend(c, call, data, bytes, dest, tag, msg_context::user))
    return request(&c, s);
  return request::completed(status{dest, tag, bytes});
}

void world::send_bytes(const char* call, const void* data, std::size_t bytes, int dest, int tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  check_dest(c, call, dest, tag);
  if (request_state* s = c.tp().send(c, call, data, bytes, dest, tag, msg_context::user)) c.wait(s);
}

request world::irecv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  check_source(c, call, source, tag);
  request_state* s =
      c.acquire(request_state::kind::recv, call, source, tag, msg_context::user, data, bytes);
  c.tp().irecv(c, s);
  return request(&c, s);
}

status world::recv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  check_source(c, call, source, tag);
  request_state* s =
      c.acquire(request_state::kind::recv, call, source, tag, msg_context::user, data, bytes);
  c.tp().irecv(c, s);
  return c.wait(s);
}

std::optional<status> world::iprobe(int source, int tag) {
  auto& c = context("iprobe");
  detail::rank_entry guard(c);
  check_source(c, "iprobe", source, tag);
  status st;
  if (c.tp().iprobe(source, tag, msg_context::user, &st)) return st;
  return std::nullopt;
}

status world::probe(int source, int tag) {
  auto& c = context("probe");
  detail::rank_entry guard(c);
  check_source(c, "probe", source, tag);
  return c.probe(source, tag, msg_context::user);
}

void world::progress() {
  auto& c = context("progress");
  detail::rank_entry guard(c);
  c.check_abort();
  c.progress();
}

}  // namespace cairn
