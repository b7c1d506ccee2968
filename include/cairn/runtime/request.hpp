#pragma once
/// \file
/// Handles of outstanding operations: test, wait, wait_all, wait_any.

#include <cstddef>
#include <span>

#include "cairn/runtime/status.hpp"

namespace cairn {

namespace detail {
struct request_state;
class rank_context;
}  // namespace detail

/// Handle of one outstanding non-blocking operation (move-only).
///
/// Every `test`/`wait` also advances all other outstanding operations of the rank. A request
/// that is destroyed while still pending is waited for (RAII, so no buffer is ever written after
/// its owner is gone); during exception unwinding it is withdrawn instead, so a failing rank
/// never blocks on a peer. So is an operation whose wait throws (the run aborts, a peer it needs
/// has ended), blocking calls included. A withdrawn receive is never written to; a withdrawn long
/// send on the threads engine leaves a copy for its receiver, but on the MPI engine it is handed to
/// MPI_Request_free (MPI cannot take a send back), so its buffer must outlive the exception.
class request {
 public:
  /// A null request: already complete, with an empty status.
  request() noexcept = default;
  /// Takes over `other`'s operation; `other` becomes a null request.
  request(request&& other) noexcept;
  /// Finishes this request's own operation as the destructor would, then takes `other`'s.
  request& operator=(request&& other) noexcept;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  ~request();

  /// Advances communication; true once the operation is complete. Throws cairn::error if the
  /// operation failed (for example a receive buffer too small for the matched message).
  bool test();

  /// True once the operation has completed, seen without advancing anything: with
  /// `launch_options::progress` set to `peers` or `thread`, other threads complete operations
  /// while this rank computes, and this is how to look. Call test() or wait() to finish it
  /// (status, errors).
  [[nodiscard]] bool ready() const noexcept;

  /// Blocks until complete (making progress meanwhile) and returns the status.
  status wait();

  /// True once a previous test()/wait() has seen completion.
  [[nodiscard]] bool complete() const noexcept { return state_ == nullptr; }

  /// Status of a completed operation (valid after test() returned true or wait()).
  [[nodiscard]] const status& last_status() const noexcept { return status_; }

  /// Internal: wraps an engine operation.
  request(detail::rank_context* ctx, detail::request_state* state) noexcept
      : ctx_(ctx), state_(state) {}
  /// Internal: an operation that completed at once.
  static request completed(const status& st) noexcept {
    request r;
    r.status_ = st;
    return r;
  }

 private:
  friend std::size_t wait_any(std::span<request> requests, status* st);
  void release() noexcept;

  detail::rank_context* ctx_ = nullptr;
  detail::request_state* state_ = nullptr;
  status status_{};
};

/// Waits for every request (all are completed even if one fails; the first failure is then
/// rethrown).
void wait_all(std::span<request> requests);

/// Waits until at least one pending request completes and returns its index; returns
/// `requests.size()` if none is pending. `st`, if given, receives its status.
std::size_t wait_any(std::span<request> requests, status* st = nullptr);

/// Tests every request once; true when all are complete.
bool test_all(std::span<request> requests);

}  // namespace cairn
