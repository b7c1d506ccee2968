#pragma once
// The member list of a group and its identity (the key of its collective sequence numbers).

#include <cstdint>
#include <span>
#include <vector>

namespace cairn::detail {

/// splitmix64 over a rank list and its length, continuing from `seed`: equal lists (and seeds)
/// give equal values in every process.
inline std::uint64_t hash_ranks(std::span<const int> ranks, std::uint64_t seed = 0) noexcept {
  std::uint64_t h = (seed ^ 0x9E3779B97F4A7C15ull) ^ ranks.size();
  for (int r : ranks) {
    h += static_cast<std::uint64_t>(static_cast<std::uint32_t>(r)) + 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  return h;
}

struct topology;

struct group_members {
  std::vector<int> world_ranks;  // group rank -> world rank
  std::uint64_t id = 0;  // hash_ranks(world_ranks, stream): equal lists and streams, equal identity
  // Where the members sit (what the hierarchical collectives plan by): the nodes they span,
  // whether each node's members are consecutive group ranks, whether every node holds as many,
  // and hash_ranks of the node of every group rank (equal placements, equal values).
  int nodes = 1;
  bool nodes_consecutive = true;
  bool nodes_equal = true;
  std::uint64_t node_layout = 0;

  /// `stream` separates sequence spaces on one member list (generalized_reduce_options::stream).
  group_members(std::vector<int> ranks, const topology& where, std::uint64_t stream = 0);
  /// Group rank of world rank w, or -1.
  int rank_of(int w) const noexcept;
};

}  // namespace cairn::detail
