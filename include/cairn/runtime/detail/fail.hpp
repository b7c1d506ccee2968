#pragma once
/// \file
/// Internal: how cairn raises cairn::error (detail::fail) and the exception that releases
/// ranks after another rank failed.

#include <sstream>
#include <utility>

#include "cairn/runtime/error.hpp"

namespace cairn {
namespace detail {

/// Builds "cairn::<call>: rank R: <parts...>" and throws it as cairn::error.
template <class... Parts>
[[noreturn]] void fail(const char* call, int rank, Parts&&... parts) {
  std::ostringstream os;
  os << "cairn::" << call << ": rank " << rank << ": ";
  (os << ... << std::forward<Parts>(parts));
  throw error(os.str());
}

/// Thrown inside ranks that are released because another rank failed; never seen by launch's
/// caller. Deliberately not a cairn::error, so `catch (cairn::error&)` in user code does not
/// swallow the end of the run.
struct run_aborted {
  const char* what() const noexcept { return "cairn: run aborted by another rank"; }
};

}  // namespace detail
}  // namespace cairn
