#include "cairn/runtime/world.hpp"

#include <cstddef>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>

#include "runtime/rank_context.hpp"
#include "runtime/sized_receive.hpp"
#include "runtime/wait_each.hpp"

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

// The status of a receive or probe from proc_null (as MPI's).
constexpr status null_status{proc_null, any_tag, 0};

// Validates a destination and tag; false for proc_null (nothing to send). The extra test for
// proc_null sits on the error path only.
bool check_dest(const detail::rank_context& c, const char* call, int dest, int tag) {
  bool real = true;
  if (dest < 0 || dest >= c.size()) [[unlikely]] {
    if (dest != proc_null)
      fail(call, c.rank(), "destination rank ", dest, " is outside the world of ", c.size(),
           " ranks (use cairn::proc_null for no peer)");
    real = false;
  }
  const int ub = c.tag_ub();
  if (tag < 0 || tag > ub) fail(call, c.rank(), "tag ", tag, " is outside [0, ", ub, "]");
  return real;
}

// Validates a source (a rank, any_source or proc_null) and tag; false for proc_null.
bool check_source(const detail::rank_context& c, const char* call, int source, int tag) {
  bool real = true;
  if (source != any_source && (source < 0 || source >= c.size())) [[unlikely]] {
    if (source != proc_null)
      fail(call, c.rank(), "source rank ", source, " is outside the world of ", c.size(),
           " ranks (use cairn::any_source for a wildcard, cairn::proc_null for no peer)");
    real = false;
  }
  const int ub = c.tag_ub();
  if (tag != any_tag && (tag < 0 || tag > ub))
    fail(call, c.rank(), "tag ", tag, " is outside [0, ", ub, "] (use cairn::any_tag)");
  return real;
}

// Posts a send (checked); the rank is entered.
request post_isend(detail::rank_context& c, const char* call, const void* data, std::size_t bytes,
                   int dest, int tag) {
  if (!check_dest(c, call, dest, tag)) [[unlikely]]
    return request::completed(status{proc_null, tag, 0});
  if (request_state* s = c.tp().isend(c, call, data, bytes, dest, tag, 0, 0, msg_context::user))
    return request(&c, s);
  return request::completed(status{dest, tag, bytes});
}

// Posts a receive (checked); the rank is entered.
request post_irecv(detail::rank_context& c, const char* call, void* data, std::size_t bytes,
                   int source, int tag) {
  if (!check_source(c, call, source, tag)) [[unlikely]]
    return request::completed(null_status);
  request_state* s =
      c.acquire(request_state::kind::recv, call, source, tag, msg_context::user, data, bytes);
  c.tp().irecv(c, s);
  return request(&c, s);
}

// Waits for the send `s` (may be null), then the receive `r` (may be null), both posted:
// the receive's error, if any, is raised after the send completed. On any other exception
// (abort, an ended peer) both are withdrawn: the send by its wait, the receive here.
status wait_send_then_recv(detail::rank_context& c, request_state* s, request_state* r) {
  if (s) {
    try {
      c.wait(s);
    } catch (...) {
      if (r) c.cancel(r);
      throw;
    }
  }
  return r ? c.wait(r) : null_status;
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
  return post_isend(c, call, data, bytes, dest, tag);
}

void world::send_bytes(const char* call, const void* data, std::size_t bytes, int dest, int tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  if (!check_dest(c, call, dest, tag)) [[unlikely]]
    return;
  if (request_state* s = c.tp().send(c, call, data, bytes, dest, tag, 0, 0, msg_context::user))
    c.wait(s);
}

request world::irecv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  return post_irecv(c, call, data, bytes, source, tag);
}

status world::recv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  if (!check_source(c, call, source, tag)) [[unlikely]]
    return null_status;
  request_state* s =
      c.acquire(request_state::kind::recv, call, source, tag, msg_context::user, data, bytes);
  c.tp().irecv(c, s);
  return c.wait(s);
}

request world::irecv_sized(const char* call, int source, int tag, const detail::sized_sink& sink) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  // From proc_null: complete at once; the sink is not called (a value stays default).
  if (!check_source(c, call, source, tag)) [[unlikely]]
    return request::completed(null_status);
  return detail::start_sized_receive(c, call, source, tag, sink);
}

status world::sendrecv_bytes(const char* call, const void* send_data, std::size_t send_bytes,
                             int dest, int send_tag, void* recv_data, std::size_t recv_bytes,
                             int source, int recv_tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  const bool to_peer = check_dest(c, call, dest, send_tag);
  const bool from_peer = check_source(c, call, source, recv_tag);
  // The receive first: a peer's send (or this rank's own, to itself) finds it posted.
  request_state* r = nullptr;
  if (from_peer) {
    r = c.acquire(request_state::kind::recv, call, source, recv_tag, msg_context::user, recv_data,
                  recv_bytes);
    c.tp().irecv(c, r);
  }
  request_state* s = nullptr;
  if (to_peer) {
    try {
      s = c.tp().isend(c, call, send_data, send_bytes, dest, send_tag, 0, 0, msg_context::user);
    } catch (...) {
      if (r) c.cancel(r);
      throw;
    }
  }
  return wait_send_then_recv(c, s, r);
}

status world::sendrecv_replace_bytes(const char* call, void* buf, std::size_t bytes, int dest,
                                     int send_tag, int source, int recv_tag) {
  auto& c = context(call);
  detail::rank_entry guard(c);
  const bool to_peer = check_dest(c, call, dest, send_tag);
  const bool from_peer = check_source(c, call, source, recv_tag);
  if (!from_peer) {  // a plain send (or nothing)
    if (to_peer)
      if (request_state* s =
              c.tp().send(c, call, buf, bytes, dest, send_tag, 0, 0, msg_context::user))
        c.wait(s);
    return null_status;
  }
  // The outgoing data is staged (a peer may read it long after the receive wrote into buf);
  // short messages on the stack, others in one allocation per call.
  constexpr std::size_t stack_bytes = 512;
  alignas(std::max_align_t) unsigned char small[stack_bytes];
  std::unique_ptr<unsigned char[]> large;
  const void* out = nullptr;
  if (to_peer && bytes > 0) {
    unsigned char* stage = small;
    if (bytes > stack_bytes) {
      large.reset(new unsigned char[bytes]);
      stage = large.get();
    }
    std::memcpy(stage, buf, bytes);
    out = stage;
  }
  request_state* r =
      c.acquire(request_state::kind::recv, call, source, recv_tag, msg_context::user, buf, bytes);
  c.tp().irecv(c, r);
  request_state* s = nullptr;
  if (to_peer) {
    try {
      s = c.tp().isend(c, call, out, bytes, dest, send_tag, 0, 0, msg_context::user);
    } catch (...) {
      c.cancel(r);
      throw;
    }
  }
  // The send completes (its staging is no longer read) before the stage goes out of scope.
  return wait_send_then_recv(c, s, r);
}

persistent_p2p world::send_init_bytes(const char* call, const void* data, std::size_t bytes,
                                      int dest, int tag) {
  auto& c = context(call);
  check_dest(c, call, dest, tag);
  return persistent_p2p(ctx_, true, call, const_cast<void*>(data), bytes, dest, tag);
}

persistent_p2p world::recv_init_bytes(const char* call, void* data, std::size_t bytes, int source,
                                      int tag) {
  auto& c = context(call);
  check_source(c, call, source, tag);
  return persistent_p2p(ctx_, false, call, data, bytes, source, tag);
}

void persistent_p2p::start() {
  if (!ctx_) throw error("cairn::persistent_p2p::start: empty handle (use world::send_init)");
  auto& c = *ctx_;
  c.check_alive(call_);
  if (!current_.complete())
    fail(call_, c.rank(), "start() while the previous start (", send_ ? "to" : "from", " rank ",
         peer_, ", tag ", tag_, ") has not completed; wait() for it first");
  detail::rank_entry guard(c);
  current_ = send_ ? post_isend(c, call_, buf_, bytes_, peer_, tag_)
                   : post_irecv(c, call_, buf_, bytes_, peer_, tag_);
}

bool persistent_p2p::test() { return current_.test(); }

status persistent_p2p::wait() { return current_.wait(); }

void start_all(std::span<persistent_p2p> ops) {
  for (persistent_p2p& p : ops) p.start();
}

void wait_all(std::span<persistent_p2p> ops) { detail::wait_each(ops); }

std::optional<status> world::iprobe(int source, int tag) {
  auto& c = context("iprobe");
  detail::rank_entry guard(c);
  if (!check_source(c, "iprobe", source, tag)) return null_status;
  status st;
  if (c.tp().iprobe(source, tag, msg_context::user, &st)) return st;
  return std::nullopt;
}

status world::probe(int source, int tag) {
  auto& c = context("probe");
  detail::rank_entry guard(c);
  if (!check_source(c, "probe", source, tag)) return null_status;
  return c.probe(source, tag, msg_context::user);
}

void world::progress() {
  auto& c = context("progress");
  detail::rank_entry guard(c);
  c.check_abort();
  c.progress();
}

}  // namespace cairn
