#pragma once
// Receives whose size the message tells (world::irecv_sized), queued per rank.

#include "cairn/runtime/detail/sized_receive.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::detail {

class rank_context;

/// Starts a receive from `source` with `tag` (checked by the caller) that `sink` sizes and
/// unpacks; it matches after the sized receives posted before it.
request start_sized_receive(rank_context& c, const char* call, int source, int tag,
                            const sized_sink& sink);

}  // namespace cairn::detail
