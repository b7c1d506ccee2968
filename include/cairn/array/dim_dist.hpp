#pragma once
/// \file
/// The distribution formats of an array dimension (HPF): BLOCK, CYCLIC, BLOCK_CYCLIC(k) and
/// replicated.

#include <cstdint>

namespace cairn {

/// Distribution of one array dimension over its process-grid dimension.
struct dim_dist {
  /// The HPF distribution formats.
  enum class kind : std::uint8_t {
    block,         ///< contiguous blocks of ceil(n / g)
    cyclic,        ///< element i on grid coordinate i mod g
    block_cyclic,  ///< blocks of `size` dealt round-robin
    replicated,    ///< not distributed: every grid coordinate holds the whole dimension
  };
  kind k = kind::block;   ///< the format
  std::int64_t size = 0;  ///< block size (block_cyclic only)
  /// Equal formats (and block sizes).
  friend bool operator==(const dim_dist&, const dim_dist&) = default;
};

/// The distribution formats, for layout constructors: `{dist::block, dist::replicated}`.
namespace dist {
/// BLOCK: contiguous blocks of ceil(n / g).
inline constexpr dim_dist block{dim_dist::kind::block, 0};
/// CYCLIC: element i on grid coordinate i mod g.
inline constexpr dim_dist cyclic{dim_dist::kind::cyclic, 1};
/// `*`: the dimension is not distributed; with a grid extent g > 1 it is replicated g times.
inline constexpr dim_dist replicated{dim_dist::kind::replicated, 0};
/// BLOCK_CYCLIC(k): blocks of k dealt round-robin over the grid dimension.
constexpr dim_dist block_cyclic(std::int64_t k) { return {dim_dist::kind::block_cyclic, k}; }
}  // namespace dist

}  // namespace cairn
