#pragma once
// Argument checks shared by the start functions (start.cpp, start_vector.cpp): raised on the
// calling rank before anything is sent.

#include <cstddef>
#include <cstdint>

#include "cairn/coll/detail/prepare.hpp"
#include "cairn/runtime/error.hpp"
#include "runtime/group_members.hpp"

namespace cairn::detail {

/// Ranks in the target's group.
inline int group_size(const coll_target& t) {
  return static_cast<int>(t.members->world_ranks.size());
}

/// Fails unless `root` is a rank of the group.
inline void check_root(const coll_target& t, const char* call, int root) {
  if (root < 0 || root >= group_size(t))
    fail(call, t.world_rank, "root ", root, " is outside the group of ", group_size(t), " ranks");
}

/// The schedules read the input while writing the output: they must not share memory.
inline void check_disjoint(const coll_target& t, const char* call, const void* in,
                           std::size_t in_bytes, const void* out, std::size_t out_bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(in), b = reinterpret_cast<std::uintptr_t>(out);
  if (in_bytes && out_bytes && a < b + out_bytes && b < a + in_bytes)
    fail(call, t.world_rank, "input and output overlap");
}

}  // namespace cairn::detail
