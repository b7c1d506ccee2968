#pragma once
// The ranks a channel spans, as its routes see them: a world, or a group whose ranks are
// numbered 0..size-1 in group order. Routes are planned on this, never on world ranks, so the
// same route works on both.

#include <vector>

#include "cairn/runtime/group.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::msg::detail {

struct rank_space {
  int me = 0;                // this rank's number in the space
  int size = 0;              // ranks in the space
  std::vector<int> node_of;  // per rank of the space: its node, numbered by first appearance
  int nodes = 0;             // distinct nodes
  const char* what = "";     // "world" or "group" (for messages)
};

/// The world's ranks.
rank_space space_of(const cairn::world& w);
/// The group's members (this rank must be one).
rank_space space_of(const cairn::group& g);

}  // namespace cairn::msg::detail
