#pragma once
/// \file
/// The untyped half of a channel (compiled in src/msg): buffer pool and memory cap, sending
/// filled buffers, posted receives, the per-rank message layer that polls every channel while
/// the rank waits for anything, and the counters termination detection reads. The typed half
/// (channel.hpp) calls it once per *buffer*, never per item.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cairn/runtime/request.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn {
class world;
namespace detail {
class rank_context;
struct request_state;
}  // namespace detail
}  // namespace cairn

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
  /// queues them and delivers them at the next poll, which bounds recursion depth.
  bool queue_local = false;
  /// Receives kept posted per channel.
  int posted_receives = 4;
  /// Name in statistics and errors.
  const char* name = "channel";
};

/// Counters of one channel on one rank (printed at destruction with CAIRN_STATS=1).
struct channel_stats {
  std::uint64_t sent = 0;                ///< items given to send() on this rank
  std::uint64_t local = 0;               ///< of those, owned by this rank (handler called here)
  std::uint64_t delivered = 0;           ///< handler calls on this rank
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

namespace detail {

/// Wire header of every channel message; the items follow at `header_bytes` (see channel.hpp).
struct wire_header {
  std::uint32_t items = 0;  ///< items in the message
  std::uint32_t flags = 0;  ///< wire_* bits
};
/// Per-item destination ranks follow the items (the message is not on its last hop).
inline constexpr std::uint32_t wire_transit = 1;
/// Per-item origin ranks follow (routed channels whose handler asks for the source).
inline constexpr std::uint32_t wire_origins = 2;
/// Bits 2–3: the depth level the message was sent in, mod 4 (set by the core; see wait_levels).
inline constexpr std::uint32_t wire_level_shift = 2;

class msg_layer;

/// The untyped part of one channel on one rank.
class channel_core {
 public:
  /// Delivers one received message (called with the layer's handler depth raised).
  using deliver_fn = void (*)(void* typed, const std::byte* msg, std::size_t bytes, int from);
  /// Sends every partly filled buffer of the typed channel.
  using flush_fn = void (*)(void* typed);
  /// Delivers items queued for this rank; true if there were any.
  using drain_fn = bool (*)(void* typed);

  /// Registers a channel of `buffer_bytes`-byte buffers with the rank's message layer. Every
  /// rank must create its channels in the same order (the creation index is the wire tag).
  channel_core(const world& w, std::size_t buffer_bytes, const channel_options& opts, void* typed,
               deliver_fn deliver, flush_fn flush, drain_fn drain);
  ~channel_core();
  channel_core(const channel_core&) = delete;
  channel_core& operator=(const channel_core&) = delete;

  /// A free send buffer of buffer_bytes() bytes (64-byte aligned). May make progress first:
  /// backpressure at the memory cap.
  std::byte* acquire();
  /// Sends `bytes` of `data` (from acquire()) to `peer`; the core owns the buffer from now on.
  void ship(int peer, std::byte* data, std::size_t bytes);
  /// Polls the whole message layer unless a handler is running (no nested delivery).
  void poll();
  /// Counters of this channel on this rank.
  channel_stats& stats() noexcept { return stats_; }
  /// Counters of this channel on this rank.
  const channel_stats& stats() const noexcept { return stats_; }
  /// Bytes per buffer.
  [[nodiscard]] std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  /// The channel's name (channel_options::name).
  [[nodiscard]] const char* name() const noexcept { return opts_.name; }
  /// The channel's flush interval.
  [[nodiscard]] double flush_interval_s() const noexcept { return opts_.flush_interval_s; }
  /// Raises the layer's handler depth for the lifetime of the guard.
  class handler_scope {
   public:
    explicit handler_scope(channel_core& c) noexcept : depth_(c.depth_) { ++*depth_; }
    ~handler_scope() { --*depth_; }
    handler_scope(const handler_scope&) = delete;
    handler_scope& operator=(const handler_scope&) = delete;

   private:
    int* depth_;
  };
  /// Reports an error of this channel (call, rank and values in the message) as cairn::error.
  [[noreturn]] void fail(const char* call, const std::string& what) const;
  /// Called by the typed channel's destructor with the items still in its buffers.
  void retire(std::uint64_t unsent_items) noexcept;

  /// Depth-limited termination (AP 3.6.1), collective over all ranks: `levels` rounds of
  /// flush + reduce_scatter_block of per-peer message counts + receive exactly that many. Each
  /// message carries its level mod 4: while a rank waits for level L, messages of levels L+1
  /// and L+2 (sent by handlers of faster ranks) may already arrive, and must not count for L.
  void wait_levels(int levels);
  /// Advances a per-channel, non-blocking termination phase (TRAM's done()): the same waves
  /// as world::quiesce over this channel's messages only; true once it has terminated (the
  /// next call starts a new phase).
  bool phase_test();
  /// Blocks until phase_test() is true.
  void phase_wait();

  // Used by the message layer.
  /// Completes sends and delivers arrived messages; true if anything happened.
  bool advance(bool deliver);
  /// Sends partly filled buffers (periodic flush, quiesce).
  void flush() { flush_(typed_); }
  /// Delivers locally queued items.
  bool drain() { return drain_(typed_); }
  /// Pending sends and posted receives (for the watchdog).
  [[nodiscard]] std::string describe() const;

 private:
  struct posted {
    cairn::detail::request_state* req = nullptr;
    std::byte* buf = nullptr;
  };
  struct in_flight {
    cairn::detail::request_state* req;
    std::byte* buf;
  };
  void post(posted& p);
  std::byte* allocate(bool for_send);

  cairn::detail::rank_context* ctx_;
  msg_layer* layer_;
  int* depth_;  // the layer's handler depth (raised per handler call: kept inline)
  int tag_;
  std::size_t buffer_bytes_;
  channel_options opts_;
  void* typed_;
  deliver_fn deliver_;
  flush_fn flush_;
  drain_fn drain_;
  std::vector<posted> posted_;
  std::vector<in_flight> in_flight_;
  std::vector<std::byte*> free_;
  std::size_t send_bytes_ = 0;     // bytes of send buffers allocated (the cap applies here)
  std::vector<std::byte*> owned_;  // every buffer ever allocated (freed at destruction)
  channel_stats stats_;
  bool retired_ = false;
  cairn::world w_;                                     // for the collectives of termination
  std::array<std::vector<std::uint64_t>, 4> sent_to_;  // messages per peer, by level mod 4
  std::array<std::uint64_t, 4> received_{};            // messages received, by level mod 4
  std::uint32_t level_ = 0;                            // level whose counts are still open
  // The non-blocking phase: wave in flight, its operands, the previous wave's sums.
  cairn::request wave_;
  bool wave_running_ = false;
  std::array<std::uint64_t, 2> wave_in_{}, wave_out_{};
  std::array<std::uint64_t, 2> wave_prev_{~std::uint64_t{0}, 0};
};

}  // namespace detail
}  // namespace cairn::msg
