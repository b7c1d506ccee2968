#pragma once
/// \file
/// Internal: computing and caching redistribution plans.

#include <cstddef>
#include <memory>
#include <vector>

#include "cairn/array/detail/layout_desc.hpp"

namespace cairn {
class redistribution_plan;
struct dim_plan;

namespace detail {

/// Computes this rank's plan (no communication). Both layouts must have the same global shape;
/// each peer's data is cut into up to `chunks` slabs (>= 1). `call` names the caller in errors.
std::shared_ptr<const redistribution_plan> compute_plan(
    const char* call, int world_rank, std::size_t elem_size, const layout_desc& src,
    const std::vector<int>& src_members, const layout_desc& dst,
    const std::vector<int>& dst_members, int chunks = 1);

/// As compute_plan, through a per-thread cache keyed by everything the plan depends on.
std::shared_ptr<const redistribution_plan> cached_plan(
    const char* call, int world_rank, std::size_t elem_size, const layout_desc& src,
    const std::vector<int>& src_members, const layout_desc& dst,
    const std::vector<int>& dst_members, int chunks = 1);

/// Throws cairn::error (naming `call`, `rank` and the value) unless chunks >= 1.
void check_chunks(const char* call, int rank, int chunks);

/// The runs of one dimension for every coordinate pair (the merge sweep; exposed for tests).
dim_plan sweep_dimension(const dim_map& s, const dim_map& d);

}  // namespace detail

}  // namespace cairn
