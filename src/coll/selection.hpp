#pragma once
// The CAIRN_COLL rules, resolved for the start functions: collective and algorithm as numbers.

#include <cstddef>
#include <vector>

#include "cairn/coll/algorithms.hpp"

namespace cairn::detail {

/// Collectives in the order of coll::algorithm_catalog().
enum class coll_id : int {
  barrier,
  bcast,
  reduce,
  allreduce,
  gather,
  scatter,
  allgather,
  alltoall,
  reduce_scatter_block,
  scan,
  exscan,
  gatherv,
  scatterv,
  allgatherv,
  alltoallv,
  reduce_scatter,
};

/// A rule with its collective and algorithm resolved (algorithm = enum value, 1-based).
struct resolved_rule {
  coll_id which;
  int algorithm;
  std::size_t min_bytes, max_bytes;
};

/// The environment's rules, resolved (parsed once, on first use; throws on a bad entry).
const std::vector<resolved_rule>& environment_rules();

/// The algorithm (enum value) CAIRN_COLL picks for `which` at `bytes`, or 0 (automatic) when no
/// rule applies; rules whose algorithm `usable` rejects are skipped.
template <class Usable>
int environment_choice(coll_id which, std::size_t bytes, Usable usable) {
  for (const resolved_rule& r : environment_rules())
    if (r.which == which && bytes >= r.min_bytes && bytes <= r.max_bytes && usable(r.algorithm))
      return r.algorithm;
  return 0;
}

/// environment_choice for calls that can run every algorithm.
inline int environment_choice(coll_id which, std::size_t bytes) {
  return environment_choice(which, bytes, [](int) { return true; });
}

}  // namespace cairn::detail
