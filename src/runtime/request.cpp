#include "cairn/runtime/request.hpp"

#include <exception>
#include <utility>

#include "runtime/rank_context.hpp"
#include "runtime/wait_each.hpp"

namespace cairn {

request::request(request&& other) noexcept
    : ctx_(std::exchange(other.ctx_, nullptr)),
      state_(std::exchange(other.state_, nullptr)),
      status_(other.status_) {}

request& request::operator=(request&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::exchange(other.ctx_, nullptr);
    state_ = std::exchange(other.state_, nullptr);
    status_ = other.status_;
  }
  return *this;
}

request::~request() { release(); }

void request::release() noexcept {
  if (!state_) return;
  detail::request_state* s = std::exchange(state_, nullptr);
  detail::rank_entry guard(*ctx_);
  // Unwinding (or the run is being torn down): withdraw without waiting for peers.
  if (std::uncaught_exceptions() > 0 || ctx_->run().aborting.load(std::memory_order_relaxed)) {
    ctx_->cancel(s);
    return;
  }
  try {
    ctx_->wait(s);
  } catch (...) {
    // A destructor cannot report; the failure was the user's to observe with wait().
  }
}

bool request::ready() const noexcept {
  return !state_ || state_->done.load(std::memory_order_acquire) != 0;
}

bool request::test() {
  if (!state_) return true;
  detail::rank_entry guard(*ctx_);
  ctx_->check_abort();
  if (!ctx_->test(state_)) return false;
  detail::request_state* s = std::exchange(state_, nullptr);
  status_ = ctx_->finish(s);
  return true;
}

status request::wait() {
  if (!state_) return status_;
  detail::request_state* s = std::exchange(state_, nullptr);
  detail::rank_entry guard(*ctx_);
  status_ = ctx_->wait(s);
  return status_;
}

void wait_all(std::span<request> requests) { detail::wait_each(requests); }

bool test_all(std::span<request> requests) {
  bool all = true;
  for (request& r : requests) all = r.test() && all;
  return all;
}

std::size_t wait_any(std::span<request> requests, status* st) {
  bool any_pending = false;
  for (request& r : requests) any_pending = any_pending || !r.complete();
  if (!any_pending) return requests.size();
  detail::rank_context* ctx = nullptr;
  for (request& r : requests)
    if (!r.complete()) ctx = r.ctx_;
  detail::rank_entry guard(*ctx);
  std::uint64_t spins = 0;
  for (;;) {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].complete()) continue;
      if (requests[i].test()) {
        if (st) *st = requests[i].last_status();
        return i;
      }
    }
    ctx->idle(nullptr, spins);
  }
}

}  // namespace cairn
