#pragma once
// The member list of a group and its identity (the key of its collective sequence numbers).

#include <cstdint>
#include <vector>

namespace cairn::detail {

struct group_members {
  std::vector<int> world_ranks;  // group rank -> world rank
  std::uint64_t id = 0;          // hash of world_ranks: equal member lists, equal identity

  explicit group_members(std::vector<int> ranks);
  /// Group rank of world rank w, or -1.
  int rank_of(int w) const noexcept;
};

}  // namespace cairn::detail
