#pragma once
/// \file
/// Internal: the untyped half of a channel (compiled in src/msg): buffer pool and memory cap,
/// sending filled buffers, posted receives, the per-rank message layer that polls every channel
/// while the rank waits for anything, and the counters termination detection reads. The typed half
/// (channel.hpp) calls it once per *buffer*, never per item.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/msg/channel_options.hpp"
#include "cairn/msg/route.hpp"
#include "cairn/runtime/group.hpp"
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

/// The ranks a channel can be made on: the world, or a group (the channel's ranks are then
/// group ranks: sources, destinations, distributions and routes all count in the group).
template <class R>
concept channel_ranks = std::same_as<R, cairn::world> || std::same_as<R, cairn::group>;

namespace detail {

/// The world of a channel's ranks.
inline cairn::world world_of(const cairn::world& w) { return w; }
/// The world of a channel's ranks.
inline cairn::world world_of(const cairn::group& g) { return g.world(); }
/// The group of a channel's ranks (none for the world).
inline std::optional<cairn::group> group_of(const cairn::world&) { return std::nullopt; }
/// The group of a channel's ranks.
inline std::optional<cairn::group> group_of(const cairn::group& g) { return g; }
/// The router of `route` on the channel's ranks (the core checks that this rank is a member).
template <class Route, channel_ranks Ranks>
auto make_router(const Route& route, const Ranks& on) {
  static_assert(!std::is_same_v<Ranks, cairn::group> || group_route_spec<Route>,
                "a channel on a group needs a route with make(const group&)");
  return route.make(on);
}

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
/// Bits 4–5: the sender's combining epoch, mod 4 (set by the core; see end_phase).
inline constexpr std::uint32_t wire_epoch_shift = 4;
/// Bits 8–31: the message's number among those from its sender to its receiver, mod 2^24
/// (set by the core): the receiver handles them in that order.
inline constexpr std::uint32_t wire_seq_shift = 8;
/// The sequence numbers' range.
inline constexpr std::uint32_t wire_seq_mask = (1u << 24) - 1;
/// Every message a channel core delivers (and every send buffer) starts on a boundary of this
/// many bytes, so items at a multiple of their alignment after the header can be read in place.
inline constexpr std::size_t message_align = 64;

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
  /// Empties the typed channel's combining cache.
  using reset_fn = void (*)(void* typed);

  /// Registers a channel of `buffer_bytes`-byte buffers with the rank's message layer. Every
  /// rank must create its channels in the same order (the creation index is the wire tag).
  /// With `oversize`, the channel may also send single messages larger than a buffer
  /// (ship_oversize); they travel on a second tag and are received by probing their size.
  channel_core(const world& w, std::size_t buffer_bytes, const channel_options& opts, void* typed,
               deliver_fn deliver, flush_fn flush, drain_fn drain, reset_fn reset,
               bool oversize = false);
  /// The same on the members of `g`, whose ranks are the channel's (peers are group ranks).
  /// Collective over the members, which create their channels on overlapping groups in one
  /// order: they agree on a tag no member uses (an allreduce over the group), so messages of
  /// channels on different groups never match each other's receives.
  channel_core(const group& g, std::size_t buffer_bytes, const channel_options& opts, void* typed,
               deliver_fn deliver, flush_fn flush, drain_fn drain, reset_fn reset,
               bool oversize = false);
  ~channel_core();
  channel_core(const channel_core&) = delete;
  channel_core& operator=(const channel_core&) = delete;

  /// A free send buffer of buffer_bytes() bytes (64-byte aligned). May make progress first:
  /// backpressure at the memory cap.
  std::byte* acquire();
  /// Sends `bytes` of `data` (from acquire()) to `peer`; the core owns the buffer from now on.
  void ship(int peer, std::byte* data, std::size_t bytes);
  /// Returns an unused buffer from acquire() to the pool.
  void recycle(std::byte* data) { free_.push_back(data); }
  /// A send buffer of `bytes` (more than buffer_bytes(); 64-byte aligned) for one message of
  /// its own: a record too large for a buffer. Only for a core made with `oversize`.
  std::byte* acquire_oversize(std::size_t bytes);
  /// Sends `bytes` of `data` (from acquire_oversize()) to `peer`, freed once sent. Counted as
  /// one message, like ship().
  void ship_oversize(int peer, std::byte* data, std::size_t bytes);
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
  /// The group the channel was made on (null: the world).
  [[nodiscard]] const cairn::group* on_group() const noexcept {
    return group_ ? &*group_ : nullptr;
  }
  /// Messages this rank sent on the channel (termination counts them).
  [[nodiscard]] std::uint64_t messages_sent() const noexcept { return messages_sent_; }
  /// The channel's flush interval.
  [[nodiscard]] double flush_interval_s() const noexcept { return opts_.flush_interval_s; }
  /// True while a handler of any channel runs on this rank.
  [[nodiscard]] bool in_handler() const noexcept { return *depth_ > 0; }
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
  /// One contributor of this rank declares it is done inserting (TRAM's done()); returns the
  /// number of the phase it ends (for phase_test).
  std::uint64_t phase_begin();
  /// Advances a per-channel, non-blocking termination phase: once every contributor of this
  /// rank called phase_begin(), the same waves as world::quiesce over this channel's messages
  /// only; true once phase number `phase` has terminated.
  bool phase_test(std::uint64_t phase);
  /// Blocks until phase_test(phase) is true.
  void phase_wait(std::uint64_t phase);
  /// A termination (world::quiesce, wait_levels, a done() phase) completed on this rank: the
  /// combining cache is emptied unless a message of the next phase already did (see advance).
  ///
  /// Why epochs: ranks leave a termination at different times. A rank that left may send
  /// items of the next phase to one still inside (waiting for the last wave), which forwards
  /// them (routes) through its combining cache — still full of the old phase's entries, which
  /// would drop them. So every message carries its sender's epoch (the number of phases that
  /// ended for its cache); one from the next epoch empties the receiver's cache before its
  /// items are forwarded. That is safe: such a message exists only once the old phase
  /// terminated everywhere, so no old item is left to combine with.
  void end_phase();

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
    bool oversize = false;  // freed when sent, not returned to the pool
  };
  // Both constructors: checks the options, takes tags, posts the receives.
  channel_core(const world& w, std::optional<cairn::group> g, std::size_t buffer_bytes,
               const channel_options& opts, void* typed, deliver_fn deliver, flush_fn flush,
               drain_fn drain, reset_fn reset, bool oversize);
  // The first of `count` consecutive tags that no member of the group uses (collective).
  int agree_group_tags(int count);
  // The world rank of channel rank `peer`, and the channel rank of world rank `source`.
  [[nodiscard]] int to_world(int peer) const noexcept {
    return to_world_.empty() ? peer : to_world_[static_cast<std::size_t>(peer)];
  }
  [[nodiscard]] int from_world(int source) const;
  // The termination collectives run on the channel's ranks: the group's or the world's.
  template <class F>
  decltype(auto) on_ranks(F&& f) {
    return group_ ? f(*group_) : f(w_);
  }
  void post(posted& p);
  std::byte* allocate(bool for_send);
  // Puts a received message in its sender's order (see handle), holding early ones aside.
  void receive(const std::byte* buf, std::size_t bytes, int source);
  // Counts a message, empties the cache on an epoch change, delivers it.
  void handle(const std::byte* buf, std::size_t bytes, int source);
  // Marks an outgoing message with its level, epoch and sequence number; counts it.
  void mark(std::byte* data, int peer);
  // Probes for oversize messages, posts their receives, delivers those that arrived.
  bool advance_oversize();

  cairn::detail::rank_context* ctx_;
  msg_layer* layer_;
  int* depth_;  // the layer's handler depth (raised per handler call: kept inline)
  int tag_;
  int size_;  // ranks of the channel (the world's or the group's)
  std::size_t buffer_bytes_;
  channel_options opts_;
  void* typed_;
  deliver_fn deliver_;
  flush_fn flush_;
  drain_fn drain_;
  reset_fn reset_;
  std::uint64_t phases_ = 0;       // terminations completed on this rank
  std::uint64_t done_phases_ = 0;  // done() phases completed on this rank
  int done_calls_ = 0;             // contributors that called done() in the current phase
  std::uint64_t epoch_ = 0;        // phases the combining cache has been emptied for (>= phases_)
  std::vector<posted> posted_;
  std::vector<std::uint32_t> order_;     // posted_ indices, oldest posting first
  std::vector<std::uint32_t> reposted_;  // scratch of advance()
  std::vector<std::uint32_t> send_seq_;  // per peer: sequence number of the next message
  std::vector<std::uint32_t> recv_seq_;  // per peer: sequence number handled next
  struct early_message {
    // Storage of the message's bytes, message_align-aligned like a receive buffer.
    struct alignas(message_align) line {
      std::byte b[message_align];
    };
    int source;
    std::uint32_t seq;
    std::size_t bytes;
    std::vector<line> lines;
    [[nodiscard]] const std::byte* data() const noexcept {
      return reinterpret_cast<const std::byte*>(lines.data());
    }
  };
  std::vector<early_message> early_;  // messages that overtook an earlier one of their sender
  std::vector<in_flight> in_flight_;
  int oversize_tag_ = -1;               // the tag of oversize messages (-1: none)
  std::vector<in_flight> oversize_in_;  // oversize receives posted
  std::vector<std::byte*> free_;
  std::size_t send_bytes_ = 0;     // bytes of send buffers allocated (the cap applies here)
  std::vector<std::byte*> owned_;  // every buffer ever allocated (freed at destruction)
  channel_stats stats_;
  bool retired_ = false;
  cairn::world w_;                               // for the collectives of termination
  std::optional<cairn::group> group_;            // the group of a channel on a group
  std::vector<int> to_world_;                    // group rank -> world rank (groups)
  std::vector<std::pair<int, int>> from_world_;  // (world rank, group rank), sorted
  std::uint64_t messages_sent_ = 0;
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
