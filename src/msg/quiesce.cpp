// world::quiesce: global termination detection for aggregated messages (AP 3.6; the counting
// scheme of Sinha–Kalé–Ramkumar as in TRAM B.2.5 and YGM). Counting *messages* (not items)
// makes it correct with routing and combining: a forwarded item travels in a new message that
// is counted when sent, and an item dropped by combining never was a message of its own.

#include <array>
#include <cstdint>

#include "cairn/coll/op.hpp"
#include "cairn/runtime/group.hpp"
#include "cairn/runtime/world.hpp"
#include "msg/msg_layer.hpp"
#include "runtime/rank_context.hpp"

namespace cairn {

void world::quiesce() {
  auto& ctx = context("quiesce");
  detail::rank_entry guard(ctx);
  auto& layer = msg::detail::msg_layer::of(ctx);
  if (layer.depth > 0) detail::fail("quiesce", rank_, "called from inside a channel handler");
  std::array<std::uint64_t, 2> previous{~std::uint64_t{0}, 0};
  for (;;) {
    // Become locally passive: deliver what has arrived and send every partly filled buffer,
    // until a pass finds nothing to do. Handlers may send more; that is what the loop is for.
    do {
      layer.flush_all();
    } while (layer.poll());
    layer.flush_all();
    const std::array<std::uint64_t, 2> mine{layer.sent_msgs, layer.recv_msgs};
    std::array<std::uint64_t, 2> total{};
    // While the wave is in flight, wait() keeps polling the layer: items keep being delivered
    // (and counted in the next wave).
    iallreduce(mine, total, plus{}).wait();
    // Two consecutive waves with equal sums, sent == received: no message was in flight and no
    // rank changed its counters between its two contributions.
    if (total[0] == total[1] && total == previous) {
      // A phase of every channel ended: their combining caches start empty in the next.
      for (auto* c : layer.channels) c->end_phase();
      return;
    }
    previous = total;
  }
}

void group::quiesce() {
  auto& ctx = context("group::quiesce");
  detail::rank_entry guard(ctx);
  if (rank_ < 0)
    detail::fail("group::quiesce", ctx.rank(), "this rank is not a member of the group (", size(),
                 " ranks)");
  auto& layer = msg::detail::msg_layer::of(ctx);
  if (layer.depth > 0)
    detail::fail("group::quiesce", ctx.rank(), "called from inside a channel handler");
  // The channels on this group's members, whichever group handle made them.
  const auto mine = [&](const msg::detail::channel_core* c) {
    return c->on_group() && c->on_group()->id() == id();
  };
  std::array<std::uint64_t, 2> previous{~std::uint64_t{0}, 0};
  for (;;) {
    // As world::quiesce, counting the messages of this group's channels only.
    do {
      layer.flush_all();
    } while (layer.poll());
    layer.flush_all();
    std::array<std::uint64_t, 2> counts{};
    for (const auto* c : layer.channels)
      if (mine(c)) {
        counts[0] += c->messages_sent();
        counts[1] += c->stats().messages_received;
      }
    std::array<std::uint64_t, 2> total{};
    iallreduce(counts, total, plus{}).wait();
    if (total[0] == total[1] && total == previous) {
      for (auto* c : layer.channels)
        if (mine(c)) c->end_phase();
      return;
    }
    previous = total;
  }
}

}  // namespace cairn
