#pragma once
/// \file
/// Routes: how an item travels from its source to its owner (AP 3.4, TRAM 3.3). A route is a
/// small value the user picks per channel; the channel turns it into a *router* for its rank,
/// whose `next_hop(dest)` is one table load, so routing costs the same at every hop and
/// decodes nothing but the next peer (TRAM 4.2 item 14).
///
/// Users add their own route by writing a type with `router make(const world&) const` whose
/// router models `cairn::msg::router` (see below), and `make(const group&)` for channels on
/// groups (ranks are then group ranks).

#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

namespace cairn {
class world;
class group;
}  // namespace cairn

namespace cairn::msg {

/// What a channel needs from the router of a route.
template <class R>
concept router = requires(const R& r, int dest) {
  { r.next_hop(dest) } -> std::convertible_to<int>;  // the peer an item for `dest` goes to next
  { r.max_hops() } -> std::convertible_to<int>;      // hops of the longest path
  { r.describe() } -> std::convertible_to<std::string>;
  { R::is_direct } -> std::convertible_to<bool>;  // true: next_hop(dest) == dest always
};

/// A router that looks the next hop up in a table made by a route (one entry per rank).
class table_router {
 public:
  static constexpr bool is_direct = false;  ///< items may be forwarded
  table_router() = default;
  /// `next[d]` is the peer an item for rank d goes to; `hops` the longest path; `text` describes.
  table_router(std::vector<int> next, int hops, std::string text)
      : next_(std::move(next)), hops_(hops), text_(std::move(text)) {}
  /// Peer the item for `dest` goes to next (dest itself on the last hop).
  [[nodiscard]] int next_hop(int dest) const noexcept {
    return next_[static_cast<std::size_t>(dest)];
  }
  /// Hops of the longest path.
  [[nodiscard]] int max_hops() const noexcept { return hops_; }
  /// e.g. "grid 2x3x4".
  [[nodiscard]] std::string describe() const { return text_; }
  /// The whole table (for tests and printing).
  [[nodiscard]] const std::vector<int>& table() const noexcept { return next_; }

 private:
  std::vector<int> next_;
  int hops_ = 1;
  std::string text_;
};

namespace route {

/// The router of route::direct: every item goes straight to its owner.
struct direct_router {
  static constexpr bool is_direct = true;  ///< no forwarding, no destination indices on the wire
  /// The owner itself.
  [[nodiscard]] static int next_hop(int dest) noexcept { return dest; }
  /// One hop.
  [[nodiscard]] static int max_hops() noexcept { return 1; }
  /// "direct".
  [[nodiscard]] static std::string describe() { return "direct"; }
};

/// Every item straight to its owner: one buffer per peer that is sent to (P − 1 at most).
struct direct {
  /// The router for rank w.rank().
  [[nodiscard]] direct_router make(const world&) const { return {}; }
  /// The router for this rank's rank in group g.
  [[nodiscard]] direct_router make(const group&) const { return {}; }
};

/// TRAM's N-dimensional virtual grid with dimension-ordered routing: ranks are points of a grid
/// of extents `dims` (row-major, last dimension fastest); an item moves along the first
/// dimension in which its position differs from the owner's, so each hop's peer differs in one
/// coordinate and a rank keeps at most Σ(s_d − 1) buffers. With empty `dims` the extents are
/// chosen balanced (the node as the last dimension when ranks share nodes evenly).
/// The product of `dims` must equal the number of ranks.
struct grid {
  std::vector<int> dims;  ///< extents, slowest first; empty: balanced default
  /// The router for rank w.rank() (throws cairn::error for a bad shape).
  [[nodiscard]] table_router make(const world& w) const;
  /// The router for this rank's rank in group g, a grid of g.size() points.
  [[nodiscard]] table_router make(const group& g) const;
  /// The balanced default extents for `ranks` ranks with `per_node` ranks on every node
  /// (0: unknown or uneven): as few, equal extents as possible, each at least 2.
  [[nodiscard]] static std::vector<int> balanced_dims(int ranks, int per_node);
};

/// The hypercube of AP 3.4: one bit of the rank corrected per hop (clear bits first, then set
/// them, so every intermediate rank exists for any number of ranks); ≤ ⌈log2 P⌉ hops and
/// peers.
struct hypercube {
  /// The router for rank w.rank().
  [[nodiscard]] table_router make(const world& w) const;
  /// The router for this rank's rank in group g.
  [[nodiscard]] table_router make(const group& g) const;
};

/// Node-aware two-level route (YGM's node-local/node-remote): an item for another node goes to
/// the rank of this node that serves the destination node, across to that node, then to its
/// owner; a rank talks to the ranks of its node and to about (nodes / ranks per node) remote
/// ranks. Items within a node go directly.
struct node_aware {
  /// The router for rank w.rank().
  [[nodiscard]] table_router make(const world& w) const;
  /// The router for this rank's rank in group g (the nodes its members sit on).
  [[nodiscard]] table_router make(const group& g) const;
};

}  // namespace route

/// What a channel accepts as a route: anything whose make(world) gives a router.
template <class R>
concept route_spec = requires(const R& r, const world& w) {
  { r.make(w) } -> router;
};
/// A route a channel on a group accepts: make(group) gives a router too.
template <class R>
concept group_route_spec = route_spec<R> && requires(const R& r, const group& g) {
  { r.make(g) } -> router;
};

/// Next-hop table of a dimension-ordered route on a grid of extents `dims` for rank `me`
/// (exposed for tests; route::grid uses it).
std::vector<int> grid_next_hops(int me, const std::vector<int>& dims);
/// Next-hop table of the bit-fixing hypercube route among `ranks` ranks for rank `me`.
std::vector<int> hypercube_next_hops(int me, int ranks);
/// Next-hop table of the node-local/node-remote route; `node_of[r]` is the node of rank r.
std::vector<int> node_aware_next_hops(int me, const std::vector<int>& node_of);

}  // namespace cairn::msg
