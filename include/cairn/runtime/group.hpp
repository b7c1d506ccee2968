#pragma once
/// \file
/// Groups: any set of ranks of a world, created locally with no communication.

#include <cstdint>
#include <memory>
#include <vector>

#include "cairn/coll/collectives.hpp"

namespace cairn {

class world;
namespace detail {
class rank_context;
struct group_members;
}  // namespace detail

/// The ranks first, first + stride, ... below last (a half-open range).
struct ranks {
  int first = 0;   ///< first rank
  int last = 0;    ///< one past the last rank
  int stride = 1;  ///< distance between ranks (positive)
};

/// A set of ranks of a world, ordered: group rank i is members()[i]. Created locally by each
/// rank (world::group) without communication; ranks that are not members may hold it too.
/// Collectives on a group are matched by issue order among groups with the same members, so
/// any number may be in flight on the same, different or overlapping groups.
class group : public coll::collectives<group> {
 public:
  /// An empty handle.
  group() = default;
  /// This rank's rank in the group, or -1 if it is not a member.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of members.
  [[nodiscard]] int size() const noexcept;
  /// World rank of group rank `r`.
  [[nodiscard]] int world_rank(int r) const;
  /// The members' world ranks in group order.
  [[nodiscard]] const std::vector<int>& members() const;
  /// Identity shared by all groups with the same members (a hash of the member list).
  [[nodiscard]] std::uint64_t id() const noexcept;
  /// The world the group's ranks belong to (throws for an empty handle).
  [[nodiscard]] cairn::world world() const;
  /// Termination detection for the channels made on this group (and on any group with the
  /// same members), collective over its members: returns once every item sent on them —
  /// including those sent by their handlers — has been delivered. Channels on other groups
  /// and on the world are polled meanwhile but not waited for (world::quiesce waits for all).
  void quiesce();

  /// Internal: where a collective on this group runs (throws if this rank is not a member).
  [[nodiscard]] detail::coll_target coll_target(const char* call) const;
  /// Internal: the rank's runtime state (throws for an empty handle or after the run ended).
  [[nodiscard]] detail::rank_context& context(const char* call) const;
  /// Internal.
  group(std::shared_ptr<detail::rank_context> ctx, std::shared_ptr<const detail::group_members> m);

 private:
  std::shared_ptr<detail::rank_context> ctx_;
  std::shared_ptr<const detail::group_members> members_;
  int rank_ = -1;
};

}  // namespace cairn
