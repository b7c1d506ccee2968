#pragma once
/// \file
/// Persistent point-to-point (as MPI_Send_init / MPI_Recv_init): `world::send_init` and
/// `world::recv_init` check the peer, tag and count once and bind the buffer; each `start()`
/// posts the same send or receive again.
///
/// This is the runtime's own handle, not the collectives' `persistent_request`: that one wraps
/// a planned collective (`coll/`), which the runtime must not know (ARCHITECTURE.md, layers).

#include <cstddef>
#include <memory>
#include <span>
#include <utility>

#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"

namespace cairn {

namespace detail {
class rank_context;
}  // namespace detail

/// A send or receive bound to its buffer, peer and tag, started any number of times
/// (move-only): start → wait (or test until true) → start → ...
///
/// The buffer given at init must stay valid while the handle is used (init takes lvalues,
/// spans and views only); a send's data may change between starts, never while started.
/// Starts match the peer's messages as the same isend/irecv would (any mix of persistent and
/// ordinary calls on either side). Destroying it while started waits for the running start
/// (withdraws it during exception unwinding, as a request does). Like a request it belongs to
/// the rank (thread) that made it and must not be used after the run ended.
class persistent_p2p {
 public:
  /// An empty handle (start() throws cairn::error).
  persistent_p2p() = default;
  /// Takes `other`'s binding and running start; `other` becomes empty.
  persistent_p2p(persistent_p2p&&) noexcept = default;
  /// Waits for this handle's running start (as its destructor would), then takes `other`'s.
  persistent_p2p& operator=(persistent_p2p&& other) noexcept {
    current_ = std::move(other.current_);  // first: the old start still has its rank
    ctx_ = std::move(other.ctx_);
    call_ = other.call_;
    buf_ = other.buf_;
    bytes_ = other.bytes_;
    peer_ = other.peer_;
    tag_ = other.tag_;
    send_ = other.send_;
    return *this;
  }
  persistent_p2p(const persistent_p2p&) = delete;
  persistent_p2p& operator=(const persistent_p2p&) = delete;
  ~persistent_p2p() = default;

  /// Posts the send or receive. Throws cairn::error if the previous start has not completed,
  /// or on an empty handle. With proc_null as the peer it completes at once.
  void start();
  /// Advances communication; true once the current start completed (also when not started).
  /// Throws cairn::error if it failed (a message larger than a receive's buffer).
  bool test();
  /// Blocks until the current start completed and returns its status (the last start's status
  /// when already complete; an empty status when never started).
  status wait();
  /// True between start() and the test()/wait() that sees completion.
  [[nodiscard]] bool active() const noexcept { return !current_.complete(); }
  /// True for a send_init handle, false for a recv_init handle (or an empty one).
  [[nodiscard]] bool is_send() const noexcept { return send_; }
  /// Status of the last completed start.
  [[nodiscard]] const status& last_status() const noexcept { return current_.last_status(); }

  /// Internal: a bound operation (made by world::send_init_bytes / recv_init_bytes, which
  /// validated the arguments).
  persistent_p2p(std::shared_ptr<detail::rank_context> ctx, bool send, const char* call, void* buf,
                 std::size_t bytes, int peer, int tag) noexcept
      : ctx_(std::move(ctx)),
        call_(call),
        buf_(buf),
        bytes_(bytes),
        peer_(peer),
        tag_(tag),
        send_(send) {}

 private:
  std::shared_ptr<detail::rank_context> ctx_;
  const char* call_ = "";
  void* buf_ = nullptr;  // a send's buffer const-cast; only read
  std::size_t bytes_ = 0;
  int peer_ = 0;
  int tag_ = 0;
  bool send_ = false;
  request current_;  // after ctx_: destroyed (waited for) first
};

/// Starts every handle (each must not be active).
void start_all(std::span<persistent_p2p> ops);

/// Waits for every handle's current start (all are completed even if one fails; the first
/// failure is then rethrown), as wait_all does for requests.
void wait_all(std::span<persistent_p2p> ops);

}  // namespace cairn
