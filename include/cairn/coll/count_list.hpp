#pragma once
/// \file
/// `coll::count_list`: the per-member counts and displacements of the v-collectives and
/// reduce_scatter.

#include <cstddef>
#include <span>

namespace cairn::coll {

/// Per-rank element counts (one per group rank) of the v-collectives.
using count_list = std::span<const std::size_t>;

}  // namespace cairn::coll
