#pragma once
/// \file
/// Persistent collectives (as MPI-4's MPI_*_init): `<name>_init(...)` checks the arguments,
/// chooses the algorithm and plans once, binding the buffers; each `start()` runs the same
/// schedule again with no checking, choosing or planning.

#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/schedule.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"

namespace cairn {

/// A planned collective bound to its buffers, started any number of times (move-only).
///
/// Every member must start its persistent collectives of a group in the same order, interleaved
/// with the group's other collectives in the same order (matching is by issue order, as for
/// non-blocking collectives). The buffers given at init must stay valid while it is used; the
/// input may change between starts. Destroying it while started waits for the running start.
/// Like a request, it belongs to the rank (thread) that made it and must not outlive the run.
class persistent_request {
 public:
  /// An empty handle (start() throws).
  persistent_request() = default;
  /// Internal: wraps a prepared collective (see the `<name>_init` calls of coll::collectives).
  explicit persistent_request(detail::prepared p) : prepared_(std::move(p)) {
    // A board collective has no plan to print (a gate's plan is its messages' schedule).
    if (prepared_.board != detail::board_collective::none && !prepared_.plan)
      detail::describe_board_plan(prepared_);
  }
  /// Moves the collective; `other` becomes an empty handle.
  persistent_request(persistent_request&& other) noexcept = default;
  /// Replaces this handle's collective by `other`'s.
  persistent_request& operator=(persistent_request&& other) noexcept = default;
  persistent_request(const persistent_request&) = delete;
  persistent_request& operator=(const persistent_request&) = delete;
  ~persistent_request() = default;

  /// Starts the collective. Throws cairn::error if the previous start has not completed.
  void start();
  /// Advances communication; true once the current start completed (also when not started).
  bool test();
  /// Blocks until the current start completed; returns its status (empty when not started).
  status wait();
  /// True between start() and the test()/wait() that sees completion.
  [[nodiscard]] bool active() const noexcept { return !current_.complete(); }
  /// The schedule every start runs (printable with <<). Throws on an empty handle.
  [[nodiscard]] const coll::schedule& plan() const;

 private:
  detail::prepared prepared_;
  request current_;
};

}  // namespace cairn
