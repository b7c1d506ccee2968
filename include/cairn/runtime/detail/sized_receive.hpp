#pragma once
/// \file
/// Internal: where a receive whose size the message tells (world::irecv_sized) puts it.

#include "cairn/runtime/status.hpp"

namespace cairn::detail {

/// The destination of a receive sized by its message: `buffer` makes room for the matched
/// message (`st.bytes` bytes from `st.source`, tag `st.tag`) and returns where to write it, or
/// throws cairn::error (the receive then fails and the message is left unreceived);
/// `complete` unpacks it once it arrived (may throw likewise).
struct sized_sink {
  void* target = nullptr;                                      ///< passed to both functions
  void* (*buffer)(void* target, const status& st) = nullptr;   ///< room for the message
  void (*complete)(void* target, const status& st) = nullptr;  ///< the message arrived
};

}  // namespace cairn::detail
