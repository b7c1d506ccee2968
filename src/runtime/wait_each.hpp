#pragma once
// Waits for every operation of a list even when one fails, then raises the first failure: what
// wait_all does for requests and for persistent point-to-point handles alike.

#include <exception>
#include <span>

#include "cairn/runtime/detail/fail.hpp"

namespace cairn::detail {

/// Calls wait() on each of `ops`; the end of the run (run_aborted) passes at once, other
/// failures are kept until all were waited for and the first is rethrown.
template <class Op>
void wait_each(std::span<Op> ops) {
  std::exception_ptr first;
  for (Op& op : ops) {
    try {
      op.wait();
    } catch (const run_aborted&) {
      throw;
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace cairn::detail
