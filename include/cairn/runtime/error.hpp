#pragma once
/// \file
/// cairn's error type.

#include <stdexcept>
#include <string>

namespace cairn {

/// Raised for every misuse cairn detects: bad ranks, tags or counts, a receive buffer too small
/// for the matched message, use of a world after its run ended. The message names the call,
/// the rank that made it and the offending values. Raised before anything is sent.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cairn

// cairn's own code raises it with detail::fail (kept reachable from here).
#include "cairn/runtime/detail/fail.hpp"
