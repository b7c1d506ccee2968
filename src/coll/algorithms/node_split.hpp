#pragma once
// A group split by node, for the hierarchical algorithms (src/coll/algorithms/*_hierarchical.cpp):
// which group ranks share this rank's node, and one leader per node. Planning only.

#include <cstddef>
#include <span>
#include <vector>

namespace cairn::coll {

/// The nodes of a group in the order of their first group rank, seen from group rank `me`.
/// `node_of[r]` is group rank r's node (any numbering; equal values share a node).
struct node_split {
  std::vector<int> local;    ///< group ranks on this rank's node, in group order
  std::vector<int> leaders;  ///< one group rank per node, nodes in order of their first rank
  int my_local = 0;          ///< this rank's index in `local`
  int my_leader = -1;        ///< this rank's index in `leaders`, -1 if it leads no node

  /// Leaders are each node's first group rank, but `root`'s node is led by `root` (-1: none).
  node_split(std::span<const int> node_of, int me, int root = -1) {
    const int mine = node_of[static_cast<std::size_t>(me)];
    const int root_node = root >= 0 ? node_of[static_cast<std::size_t>(root)] : -1;
    std::vector<int> seen;  // nodes in order of first appearance
    for (std::size_t r = 0; r < node_of.size(); ++r) {
      const int n = node_of[r];
      if (n == mine) {
        if (static_cast<int>(r) == me) my_local = static_cast<int>(local.size());
        local.push_back(static_cast<int>(r));
      }
      bool known = false;
      for (int s : seen) known = known || s == n;
      if (known) continue;
      seen.push_back(n);
      leaders.push_back(n == root_node ? root : static_cast<int>(r));
    }
    for (std::size_t i = 0; i < leaders.size(); ++i)
      if (leaders[i] == me) my_leader = static_cast<int>(i);
  }
  /// The index in `leaders` of group rank `r`, a leader.
  [[nodiscard]] int leader_index(int r) const {
    int i = 0;
    while (leaders[static_cast<std::size_t>(i)] != r) ++i;
    return i;
  }
  /// The index in `local` of this node's leader.
  [[nodiscard]] int local_leader() const {
    for (std::size_t i = 0; i < local.size(); ++i)
      for (int l : leaders)
        if (l == local[i]) return static_cast<int>(i);
    return 0;
  }
};

/// Bytes rounded up to a multiple of 64 (scratch regions for element-wise reductions).
inline std::size_t aligned64(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace cairn::coll
