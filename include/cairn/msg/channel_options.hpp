#pragma once
/// \file
/// A channel's run-time options and its counters.

#include <cstddef>
#include <cstdint>

namespace cairn::msg {

/// Run-time options of a channel.
struct channel_options {
  /// Items per buffer (one buffer per peer); 0 picks the default of 16 KiB of items, where the
  /// per-message cost (≈1–2 µs on both engines) falls below 1 ns per 8-byte item.
  std::size_t buffer_items = 0;
  /// A buffer that waited this long while the rank made no other progress is sent anyway, so a
  /// computation whose next item depends on the delivery of the last never stalls.
  double flush_interval_s = 0.0005;
  /// Bytes of send buffers this channel may hold on a rank (buffers being filled plus buffers
  /// in flight). At the cap, `send` delivers incoming items and completes sends until a buffer
  /// is free instead of allocating (backpressure). Inside a handler the cap is exceeded rather
  /// than risking deadlock; stats().over_cap counts those allocations.
  std::size_t memory_cap_bytes = std::size_t{64} << 20;
  /// Items a rank sends to itself: false calls the handler at once (AP 3.2: no copy); true
  /// queues them and delivers them at the next poll, which bounds recursion depth. A batch
  /// handler's channel always queues them (in batches of at most buffer_items).
  bool queue_local = false;
  /// Receives kept posted per channel.
  int posted_receives = 4;
  /// Name in statistics and errors.
  const char* name = "channel";
  /// Bytes per buffer of a channel of variable-size items (serialized items, async calls,
  /// containers); 0 picks 16 KiB. An item larger than a buffer travels in a message of its own.
  std::size_t buffer_bytes = 0;
  /// Contributors per rank of a done() phase (TRAM's numContributors): the phase ends only
  /// after done() was called this many times on every rank, so several producers of one rank
  /// (tasks, coroutines, loops) each declare their own end.
  int contributors = 1;
};

/// Counters of one channel on one rank (printed at destruction with CAIRN_STATS=1).
struct channel_stats {
  std::uint64_t sent = 0;                ///< items given to send() on this rank
  std::uint64_t local = 0;               ///< of those, owned by this rank (handler called here)
  std::uint64_t delivered = 0;           ///< items handed to the handler on this rank
  std::uint64_t forwarded = 0;           ///< items that arrived here and were routed on
  std::uint64_t combined_source = 0;     ///< items dropped or merged by combining at their source
  std::uint64_t combined_hops = 0;       ///< ... at an intermediate hop
  std::uint64_t buffers_sent = 0;        ///< messages sent
  std::uint64_t items_in_buffers = 0;    ///< items carried by those messages
  std::uint64_t messages_received = 0;   ///< messages received
  std::uint64_t over_cap = 0;            ///< buffers allocated beyond the memory cap (in handlers)
  std::uint64_t backpressure_waits = 0;  ///< times send() waited for a free buffer
  std::uint64_t peak_send_bytes = 0;     ///< most bytes of send buffers held at once
  /// Mean items per message sent.
  [[nodiscard]] double mean_fill() const noexcept {
    return buffers_sent ? static_cast<double>(items_in_buffers) / static_cast<double>(buffers_sent)
                        : 0.0;
  }
};

}  // namespace cairn::msg
