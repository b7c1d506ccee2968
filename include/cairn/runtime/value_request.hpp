#pragma once
/// \file
/// `cairn::value_request<T>`: the handle of a non-blocking call that yields a value (a
/// receive of a value, a collective that returns one).

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"

namespace cairn {

namespace detail {
/// Where a non-blocking value call leaves its result: at a stable address (the request that
/// fills it may be moved), with the status of the message it came from.
template <class T>
struct value_slot {
  T value{};
  status st{};
  int rank = -1;                 ///< the receiving rank (for errors)
  const char* call = "";         ///< the call that made it (for errors)
  std::vector<std::byte> bytes;  ///< a serialized value, until it is loaded
  /// Runs once the request completed (size checks); may throw cairn::error.
  void (*check)(value_slot& slot, const status& request_status) = nullptr;
};
}  // namespace detail

/// Handle of a non-blocking call that yields a value of type T (move-only). Like a request it
/// is waited for when destroyed pending; wait() returns the value.
template <class T>
class value_request {
 public:
  /// A null handle (nothing to wait for; wait() must not be called).
  value_request() = default;
  /// Internal: `req` fills `*slot`.
  value_request(request req, std::unique_ptr<detail::value_slot<T>> slot) noexcept
      : slot_(std::move(slot)), req_(std::move(req)) {}

  /// Advances communication; true once the value is there (then wait() returns it at once).
  bool test() {
    if (!req_.test()) return false;
    settle();
    return true;
  }
  /// True once complete, seen without advancing anything (see request::ready).
  [[nodiscard]] bool ready() const noexcept { return req_.ready(); }
  /// Blocks until complete and returns the value (moved out: call once).
  T wait() {
    req_.wait();
    settle();
    return std::move(slot_->value);
  }
  /// Status of the message the value came from (receives; after test() returned true or
  /// wait()).
  [[nodiscard]] const status& last_status() const noexcept { return slot_->st; }
  /// The request underneath, for wait_all/wait_any/test_all over several calls; once it
  /// completed there, wait() returns the value at once.
  request& handle() noexcept { return req_; }

 private:
  void settle() {
    if (slot_->check) std::exchange(slot_->check, nullptr)(*slot_, req_.last_status());
  }
  std::unique_ptr<detail::value_slot<T>> slot_;  // declared first: outlives req_
  request req_;
};

}  // namespace cairn
