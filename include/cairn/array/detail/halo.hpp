#pragma once
/// \file
/// Internal: checking ghosted layouts, planning and starting halo exchanges.

#include <cstddef>
#include <memory>
#include <vector>

#include "cairn/array/detail/layout_desc.hpp"

namespace cairn {
class group;
class request;
class halo_plan;
class persistent_transfer;
struct halo_options;

namespace detail {

/// Throws cairn::error (naming `call` and `rank`) on a negative ghost width or a nonzero one
/// in a dimension that is not BLOCK (or replicated).
void check_ghosts(const char* call, int rank, const layout_desc& l, const int* ghosts);

/// This rank's halo plan (cached per rank thread): the checks of check_ghosts, then every ghost
/// width against the interior extents it is filled from, then one phase per dimension (corners)
/// or one phase for all. `me` is the caller's rank in `members` (-1: outside the group).
std::shared_ptr<const halo_plan> cached_halo_plan(const char* call, int world_rank,
                                                  std::size_t elem_size, const layout_desc& l,
                                                  const std::vector<int>& members, int me,
                                                  const int* ghosts, const bool* periodic,
                                                  bool corners);

/// Starts one exchange of `plan` on the padded local storage `data` (group `g`'s rank).
request start_halo(const cairn::group& g, const char* call, std::shared_ptr<const halo_plan> plan,
                   void* data, const halo_options& o);

/// A persistent exchange of `plan` on `data` (empty for a rank outside the group).
persistent_transfer halo_init(const cairn::group& g, const char* call,
                              std::shared_ptr<const halo_plan> plan, void* data,
                              const halo_options& o);

}  // namespace detail

}  // namespace cairn
