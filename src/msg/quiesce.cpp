// world::quiesce and group::quiesce: termination detection for aggregated messages (AP 3.6;
// the counting scheme of Sinha–Kalé–Ramkumar as in TRAM B.2.5 and YGM). Counting *messages*
// (not items) makes it correct with routing and combining: a forwarded item travels in a new
// message that is counted when sent, and an item dropped by combining never was a message of
// its own.

#include <algorithm>
#include <array>
#include <cstdint>

#include <sched.h>

#include "cairn/coll/op.hpp"
#include "cairn/runtime/group.hpp"
#include "cairn/runtime/world.hpp"
#include "msg/msg_layer.hpp"
#include "node/cpu_relax.hpp"
#include "runtime/rank_context.hpp"

namespace cairn {

namespace {

using counts = std::array<std::uint64_t, 2>;  // messages sent, messages received

// A handler, and a container's for_all (detail::with_calls_held), raise the handler depth.
constexpr const char* inside_handler =
    "called from inside a channel handler or a container's for_all";

// A wave that found messages in flight is followed by a pause of this fraction of the time spent
// in the termination so far, at most pause_max_s (see quiesce_waves).
constexpr double pause_fraction = 0.125;
constexpr double pause_max_s = 1e-3;

// Keeps the rank delivering items until `until`, and locally passive as before a wave: items its
// handlers buffered are sent once nothing more arrives. It never parks (a park lasts until a
// message arrives or a slice ends, far past a pause of microseconds).
void pause_until(detail::rank_context& ctx, msg::detail::msg_layer& layer, double until) {
  // Hand the core over as often as a wait's spinning does (more often with more ranks than
  // cores: a rank still at work may need it).
  const unsigned yield_every = std::min(256u, ctx.tp().spin_polls());
  bool buffered = true;  // handlers may have buffered items during the wave
  for (unsigned polls = 1, to_yield = yield_every;; ++polls) {
    ctx.check_abort();
    if (layer.poll()) {
      buffered = true;
      continue;
    }
    if (buffered) layer.flush_all();
    buffered = false;
    // A clock read costs about as much as an idle poll: look every few.
    if ((polls & 7) == 0 && detail::now_s() >= until) return;
    if (--to_yield == 0) {
      to_yield = yield_every;
      ctx.progress();  // the other layers too, now and then
      sched_yield();
    } else {
      detail::cpu_relax();
    }
  }
}

// Waves until two in a row agree and sent == received. `count` gives this rank's counters of
// the channels waited for, `sum` adds them over the ranks (an allreduce), and `ended` is called
// on every channel whose phase ended.
//
// Why the pause: a wave that finds messages in flight finds the ranks busy, and while waves run
// back to back every rank's polls also advance them (measured, `cairn-bench pointerchase
// --laps=20000` on 2 ranks of the threads engine, cores far apart: 0.43-0.55 us per hop with
// back-to-back waves, 0.34-0.35 with the pause).
// Pausing an eighth of the time spent so far makes termination noticed at most that much later
// (and at most pause_max_s), while a long phase takes only logarithmically many waves.
template <class Count, class Sum, class Ended>
void quiesce_waves(detail::rank_context& ctx, msg::detail::msg_layer& layer, Count count, Sum sum,
                   Ended ended) {
  counts previous{~std::uint64_t{0}, 0};
  const double began = detail::now_s();
  for (;;) {
    // Become locally passive: deliver what has arrived and send every partly filled buffer,
    // until a pass finds nothing to do. Handlers may send more; that is what the loop is for.
    do {
      layer.flush_all();
    } while (layer.poll());
    layer.flush_all();
    // While the wave is in flight, its wait keeps polling the layer: items keep being
    // delivered (and counted in the next wave).
    const counts total = sum(count());
    // Two consecutive waves with equal sums, sent == received: no message was in flight and no
    // rank changed its counters between its two contributions.
    if (total[0] == total[1] && total == previous) {
      // A phase of these channels ended: their combining caches start empty in the next.
      for (auto* c : layer.channels) ended(c);
      return;
    }
    previous = total;
    if (total[0] != total[1]) {
      const double t = detail::now_s();
      pause_until(ctx, layer, t + std::min((t - began) * pause_fraction, pause_max_s));
    }
  }
}

}  // namespace

void world::quiesce() {
  auto& ctx = context("quiesce");
  detail::rank_entry guard(ctx);
  auto& layer = msg::detail::msg_layer::of(ctx);
  if (layer.depth > 0) detail::fail("quiesce", rank_, inside_handler);
  quiesce_waves(
      ctx, layer,
      [&] {
        return counts{layer.sent_msgs, layer.recv_msgs};
      },
      [&](const counts& mine) {
        counts total{};
        iallreduce(mine, total, plus{}).wait();
        return total;
      },
      [](msg::detail::channel_core* c) { c->end_phase(); });
}

void group::quiesce() {
  auto& ctx = context("group::quiesce");
  detail::rank_entry guard(ctx);
  if (rank_ < 0)
    detail::fail("group::quiesce", ctx.rank(), "this rank is not a member of the group (", size(),
                 " ranks)");
  auto& layer = msg::detail::msg_layer::of(ctx);
  if (layer.depth > 0) detail::fail("group::quiesce", ctx.rank(), inside_handler);
  // The channels on this group's members, whichever group handle made them.
  const auto mine = [&](const msg::detail::channel_core* c) {
    return c->on_group() && c->on_group()->id() == id();
  };
  quiesce_waves(
      ctx, layer,
      [&] {
        counts c{};
        for (const auto* ch : layer.channels)
          if (mine(ch)) {
            c[0] += ch->messages_sent();
            c[1] += ch->stats().messages_received;
          }
        return c;
      },
      [&](const counts& in) {
        counts total{};
        iallreduce(in, total, plus{}).wait();
        return total;
      },
      [&](msg::detail::channel_core* c) {
        if (mine(c)) c->end_phase();
      });
}

}  // namespace cairn
