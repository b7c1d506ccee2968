#pragma once
/// \file
/// cairn's error type and the helpers that build its messages.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace cairn {

/// Raised for every misuse cairn detects: bad ranks, tags or counts, a receive buffer too small
/// for the matched message, use of a world after its run ended. The message names the call,
/// the rank that made it and the offending values. Raised before anything is sent.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
