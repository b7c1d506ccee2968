#pragma once
/// \file
/// `cairn::operation`: a multi-step non-blocking operation under one cairn::request — a
/// receive whose size a probe tells, a collective of serialized values (sizes first, then the
/// bytes), anything a user composes of cairn's own requests.

#include <memory>
#include <string>

#include "cairn/runtime/request.hpp"

namespace cairn {

class world;
namespace detail {
class rank_context;
}

/// A non-blocking operation of several steps, run by its rank under one cairn::request
/// (start_operation). The rank calls advance() on every test, wait and progress until it
/// returns true, so the request completes in wait_all, wait_any and blocking waits like any
/// other, without the caller stepping it.
class operation {
 public:
  virtual ~operation() = default;
  /// Takes the next steps that can be taken without blocking (start requests, test them,
  /// unpack results); returns true once the operation is complete. Called on the rank's own
  /// thread only (never by a progress helper), and never re-entered: the cairn calls it makes
  /// advance the rank's other work but not this operation again. An exception ends the
  /// operation; the request's test or wait rethrows it.
  virtual bool advance() = 0;
  /// One line for the watchdog: what the operation waits for.
  [[nodiscard]] virtual std::string describe() const { return "operation"; }
};

/// Starts `op` on `w`'s rank and returns its request: advance() runs at once, after the
/// operations started before it took a step (so operations that could take the same message
/// take them in the order they were started), then on every test, wait and progress of the
/// rank until it returns true or throws (the request's test or wait then rethrows). The request
/// owns `op` until it is finished; one that is destroyed while pending is waited for, except during
/// unwinding, when `op` is destroyed at once (its own requests then withdraw themselves). `call`
/// names the operation in errors and in the watchdog.
request start_operation(world& w, const char* call, std::unique_ptr<operation> op);

namespace detail {
/// start_operation on a rank context (for cairn's layers, which hold one).
request start_operation(rank_context& ctx, const char* call, std::unique_ptr<operation> op);
}  // namespace detail

}  // namespace cairn
