#pragma once
/// \file
/// Internal: the channel of variable-size records, on which serial_channel (items of any
/// serializable type), async (calls of registered functions) and the containers build. The
/// same buffers, routes and termination as the typed channel; what differs is the record
/// layout: items of any size packed one after the other.
///
/// A message is the wire_header, then records: a 4-byte payload size, the 4-byte destination
/// (messages not on their last hop), the 4-byte origin (routed channels), the payload. A record
/// larger than a buffer travels alone in a message of its own size (channel_core's oversize
/// messages), so no size is refused or split.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/msg/channel_options.hpp"
#include "cairn/msg/detail/channel_core.hpp"
#include "cairn/msg/route.hpp"
#include "cairn/runtime/detail/flag_scope.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::msg::detail {

/// A record's payload given as bytes.
struct bytes_payload {
  std::span<const std::byte> bytes;  ///< the payload
  /// Its size.
  [[nodiscard]] std::size_t size() const noexcept { return bytes.size(); }
  /// Copies it to `at`.
  void write(std::byte* at) const noexcept {
    if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
  }
};

/// A record's payload of a known size written in place by `Writer` (`w(std::byte* at)`):
/// fixed-size calls go straight into the buffer, with no copy through a scratch vector.
template <class Writer>
struct written_payload {
  std::size_t n;  ///< its size
  Writer w;       ///< writes the n bytes
  /// Its size.
  [[nodiscard]] std::size_t size() const noexcept { return n; }
  /// Writes it to `at`.
  void write(std::byte* at) const { w(at); }
};

/// Records of bytes routed by `Route` to ranks of a world or group, each handed on arrival to
/// `Sink`: `sink(std::span<const std::byte> payload, int origin)`. The sink must be done with
/// the payload before it returns (the bytes belong to a receive buffer). A sink may also have
/// `before_flush()` (called when the buffers are flushed) and `after_deliver()` (called after
/// the records of each arrived message, and of each batch of queued local ones, were handed
/// over: a sink that gathers records applies them there). On a forwarding route, a sink with
/// `bool on_transit(std::span<const std::byte> payload)` sees each record that passes through
/// this rank: true means it took the record (combined it into one it holds, to be sent on
/// later, or dropped it as covered by one sent before; counted in
/// channel_stats::combined_hops), false that the record travels on. A sink with `end_phase()`
/// is told when a phase of the channel ends (see channel_core::end_phase).
template <class Route, class Sink>
class record_channel {
  using router_type = decltype(std::declval<const Route&>().make(std::declval<const world&>()));
  static_assert(router<router_type>, "Route::make(world) must return a cairn::msg::router");
  static constexpr bool routed = !router_type::is_direct;
  static constexpr std::size_t header_bytes = sizeof(wire_header);
  // Bytes in front of a payload: its size, the destination (transit), the origin (routed).
  static constexpr std::size_t record_bytes(bool transit) {
    return 4 + (transit ? 4 : 0) + (routed ? 4 : 0);
  }

 public:
  /// A record channel on the ranks of `on` (the world or a group) with buffers of
  /// `opts.buffer_bytes` (0: 16 KiB).
  template <channel_ranks Ranks>
  record_channel(const Ranks& on, Route route, Sink sink, const channel_options& opts)
      : me_(on.rank()),
        size_(on.size()),
        sink_(std::move(sink)),
        router_(make_router(route, on)),
        cap_(buffer_size(world_of(on).rank(), opts)),
        final_(static_cast<std::size_t>(size_)),
        transit_(routed ? static_cast<std::size_t>(size_) : 0),
        core_(on, cap_, opts, this, &deliver_thunk, &flush_thunk, &drain_thunk, &reset_thunk, true),
        queue_local_(opts.queue_local) {}
  /// Reports records still buffered (see channel::~channel).
  ~record_channel() {
    std::uint64_t unsent = local_records_ + held_elsewhere_;
    for (const auto& b : final_) unsent += b.n;
    for (const auto& b : transit_) unsent += b.n;
    core_.retire(unsent);
  }
  record_channel(const record_channel&) = delete;
  record_channel& operator=(const record_channel&) = delete;

  /// Sends `payload` to rank `dest` (checked by the caller).
  void send(int dest, std::span<const std::byte> payload) {
    ++core_.stats().sent;
    route_record<false>(dest, bytes_payload{payload}, me_);
  }
  /// Sends the `n` bytes `write(std::byte* at)` writes to rank `dest` (checked by the caller).
  template <class Writer>
  void send_written(int dest, std::size_t n, const Writer& write) {
    ++core_.stats().sent;
    route_record<false>(dest, written_payload<const Writer&>{n, write}, me_);
  }
  /// Sends every partly filled buffer now (after the sink's `before_flush()`, if it has one:
  /// a container's combining cache empties into the buffers there).
  void flush() {
    if constexpr (requires(Sink & s) { s.before_flush(); }) sink_.before_flush();
    for (int p = 0; p < size_; ++p) {
      if (final_[static_cast<std::size_t>(p)].n) ship<false>(p);
      if constexpr (routed)
        if (transit_[static_cast<std::size_t>(p)].n) ship<true>(p);
    }
  }
  /// The untyped core (termination, counters, errors).
  [[nodiscard]] channel_core& core() noexcept { return core_; }
  /// The untyped core.
  [[nodiscard]] const channel_core& core() const noexcept { return core_; }
  /// The router.
  [[nodiscard]] const router_type& router() const noexcept { return router_; }
  /// Runs a delivery on this rank's thread with the handler depth raised (a local item
  /// delivered without a message: sends from the handler must not deliver nested).
  template <class F>
  void deliver_here(F&& f) {
    ++core_.stats().local;
    ++core_.stats().delivered;
    typename channel_core::handler_scope guard(core_);
    f();
  }
  /// Items its user still holds and never sent (e.g. a combining cache), reported with the
  /// buffered ones when the channel is destroyed.
  void note_unsent(std::uint64_t n) noexcept { held_elsewhere_ = n; }
  /// True if items for this rank are queued (delivered at the next poll, or by
  /// deliver_held) instead of handled at once: always with queue_local, else while a hold lasts
  /// and until the items it queued are delivered (so this rank's items keep their order).
  [[nodiscard]] bool queues_local() const noexcept {
    return queue_local_ || holds_ != 0 || draining_now_ || local_records_ != 0;
  }
  /// Starts a hold: items for this rank are queued until it ends. A handler that works on a
  /// reference into its target's state (a map's value in a visitor) holds, so that the calls
  /// it makes on this rank cannot change that state under it.
  void hold_local() noexcept { ++holds_; }
  /// Ends a hold (the items it queued wait for deliver_held() or the next poll).
  void end_hold() noexcept { --holds_; }
  /// Delivers the items queued for this rank, unless a hold lasts or a delivery of queued
  /// items is under way (which goes on to them).
  void deliver_held() {
    if (holds_ == 0) drain_local();
  }
  /// True while a hold lasts.
  [[nodiscard]] bool holds_local() const noexcept { return holds_ != 0; }

 private:
  struct out_buffer {
    std::byte* data = nullptr;
    std::size_t used = 0;  // bytes of records after the header
    std::uint32_t n = 0;   // records
  };

  static std::size_t buffer_size(int rank, const channel_options& o) {
    if (o.buffer_bytes != 0 && (o.buffer_bytes < 64 || o.buffer_bytes > (std::size_t{1} << 30)))
      cairn::detail::fail("channel", rank, "buffer_bytes ", o.buffer_bytes,
                          " is outside [64, 2^30]");
    return o.buffer_bytes ? o.buffer_bytes : 16384;
  }

  template <bool Forwarded, class Payload>
  void route_record(int dest, const Payload& payload, int origin) {
    if (payload.size() > std::numeric_limits<std::uint32_t>::max()) [[unlikely]]
      core_.fail("channel::send", "an item of " + std::to_string(payload.size()) +
                                      " bytes is above the limit of 2^32 - 1 bytes (channel '" +
                                      core_.name() + "')");
    if (dest == me_) {
      ++core_.stats().local;
      if (queues_local()) {
        const auto n = static_cast<std::uint32_t>(payload.size());
        const auto o = static_cast<std::uint32_t>(origin);
        const std::size_t at = local_.size();
        local_.resize(at + 8 + payload.size());
        std::memcpy(local_.data() + at, &n, 4);
        std::memcpy(local_.data() + at + 4, &o, 4);
        payload.write(local_.data() + at + 8);
        ++local_records_;
        return;
      }
      if constexpr (std::is_same_v<Payload, bytes_payload>) {
        handle(payload.bytes, origin);
      } else {
        std::vector<std::byte> bytes(payload.size());
        payload.write(bytes.data());
        handle(bytes, origin);
      }
      return;
    }
    const int next = router_.next_hop(dest);
    if constexpr (routed) {
      if (next != dest) {
        append<true>(next, payload, dest, origin);
        return;
      }
    }
    append<false>(next, payload, dest, origin);
  }

  template <bool Transit, class Payload>
  void append(int peer, const Payload& payload, int dest, int origin) {
    const std::size_t need = record_bytes(Transit) + payload.size();
    if (header_bytes + need > cap_) [[unlikely]] {
      ship_alone<Transit>(peer, payload, dest, origin);
      return;
    }
    out_buffer& b = buffers<Transit>()[static_cast<std::size_t>(peer)];
    // Acquiring and shipping may deliver arrived items (at depth 0), whose handlers and
    // forwarding append to this same buffer: look at it again after each.
    for (;;) {
      if (!b.data) {
        std::byte* d = core_.acquire();
        if (b.data) {
          core_.recycle(d);
          continue;
        }
        b.data = d;
      }
      if (header_bytes + b.used + need <= cap_) break;
      ship<Transit>(peer);
    }
    write_record<Transit>(b.data + header_bytes + b.used, payload, dest, origin);
    b.used += need;
    ++b.n;
  }

  template <bool Transit, class Payload>
  static void write_record(std::byte* at, const Payload& payload, int dest, int origin) {
    const auto n = static_cast<std::uint32_t>(payload.size());
    std::memcpy(at, &n, 4);
    at += 4;
    if constexpr (Transit) {
      const auto d = static_cast<std::uint32_t>(dest);
      std::memcpy(at, &d, 4);
      at += 4;
    }
    if constexpr (routed) {
      const auto o = static_cast<std::uint32_t>(origin);
      std::memcpy(at, &o, 4);
      at += 4;
    }
    (void)dest;
    (void)origin;
    payload.write(at);
  }

  template <bool Transit>
  std::vector<out_buffer>& buffers() {
    if constexpr (Transit)
      return transit_;
    else
      return final_;
  }

  template <bool Transit>
  static std::uint32_t flags() {
    return (Transit ? wire_transit : 0u) | (routed ? wire_origins : 0u);
  }

  template <bool Transit>
  void ship(int peer) {
    out_buffer& b = buffers<Transit>()[static_cast<std::size_t>(peer)];
    const wire_header h{b.n, flags<Transit>()};
    std::memcpy(b.data, &h, sizeof h);
    std::byte* data = b.data;
    const std::size_t bytes = header_bytes + b.used;
    auto& st = core_.stats();
    ++st.buffers_sent;
    st.items_in_buffers += b.n;
    b = out_buffer{};
    core_.ship(peer, data, bytes);
  }

  // A record larger than a buffer: a message of its own.
  template <bool Transit, class Payload>
  void ship_alone(int peer, const Payload& payload, int dest, int origin) {
    const std::size_t bytes = header_bytes + record_bytes(Transit) + payload.size();
    std::byte* data = core_.acquire_oversize(bytes);
    const wire_header h{1, flags<Transit>()};
    std::memcpy(data, &h, sizeof h);
    write_record<Transit>(data + header_bytes, payload, dest, origin);
    auto& st = core_.stats();
    ++st.buffers_sent;
    ++st.items_in_buffers;
    core_.ship_oversize(peer, data, bytes);
  }

  void handle(std::span<const std::byte> payload, int origin) {
    ++core_.stats().delivered;
    typename channel_core::handler_scope guard(core_);
    sink_(payload, origin);
  }

  bool drain_local() {
    if (local_.empty() || draining_now_) return false;
    // Handlers may queue more while a batch is delivered: take the queue, then look again.
    // Items they send this rank meanwhile queue behind (the rank's order holds).
    const cairn::detail::flag_scope draining(draining_now_);
    bool any = false;
    while (!local_.empty()) {
      draining_.clear();
      draining_.swap(local_);
      local_records_ = 0;
      for (std::size_t at = 0; at < draining_.size();) {
        std::uint32_t n, o;
        std::memcpy(&n, draining_.data() + at, 4);
        std::memcpy(&o, draining_.data() + at + 4, 4);
        handle(std::span<const std::byte>(draining_.data() + at + 8, n), static_cast<int>(o));
        at += 8 + n;
      }
      after_deliver();
      any = true;
    }
    return any;
  }

  [[noreturn, gnu::cold, gnu::noinline]] void malformed(std::size_t bytes, int from,
                                                        const wire_header& h) const {
    core_.fail("channel", "malformed message of " + std::to_string(bytes) + " bytes from rank " +
                              std::to_string(from) + " (" + std::to_string(h.items) +
                              " records, flags " + std::to_string(h.flags) +
                              "): do all ranks create their channels in the same order?");
  }

  void deliver(const std::byte* msg, std::size_t bytes, int from) {
    wire_header h;
    if (bytes < header_bytes) malformed(bytes, from, h);
    std::memcpy(&h, msg, sizeof h);
    const bool transit = (h.flags & wire_transit) != 0;
    const bool origins = (h.flags & wire_origins) != 0;
    if ((transit && !routed) || origins != routed) malformed(bytes, from, h);
    const std::size_t front = record_bytes(transit);
    std::size_t at = header_bytes;
    for (std::uint32_t i = 0; i < h.items; ++i) {
      if (bytes - at < front) malformed(bytes, from, h);
      std::uint32_t n;
      std::memcpy(&n, msg + at, 4);
      std::size_t p = at + 4;
      int dest = me_;
      if (transit) {
        std::uint32_t d;
        std::memcpy(&d, msg + p, 4);
        dest = static_cast<int>(d);
        p += 4;
      }
      int origin = from;
      if constexpr (routed) {
        std::uint32_t o;
        std::memcpy(&o, msg + p, 4);
        origin = static_cast<int>(o);
        p += 4;
      }
      if (bytes - p < n || dest < 0 || dest >= size_) malformed(bytes, from, h);
      const std::span<const std::byte> payload(msg + p, n);
      at = p + n;
      if constexpr (routed) {
        if (dest != me_) {
          if constexpr (requires(Sink & s) { s.on_transit(payload); }) {
            if (sink_.on_transit(payload)) {
              ++core_.stats().combined_hops;
              continue;
            }
          }
          ++core_.stats().forwarded;
          route_record<true>(dest, bytes_payload{payload}, origin);
          continue;
        }
      }
      handle(payload, origin);
    }
    if (at != bytes) malformed(bytes, from, h);
    after_deliver();
  }

  void after_deliver() {
    if constexpr (requires(Sink & s) { s.after_deliver(); }) {
      typename channel_core::handler_scope guard(core_);
      sink_.after_deliver();
    }
  }

  static void deliver_thunk(void* self, const std::byte* msg, std::size_t bytes, int from) {
    static_cast<record_channel*>(self)->deliver(msg, bytes, from);
  }
  static void flush_thunk(void* self) { static_cast<record_channel*>(self)->flush(); }
  static bool drain_thunk(void* self) { return static_cast<record_channel*>(self)->drain_local(); }
  // A phase of the channel ended (or a message of the next one arrived first): a sink that
  // keeps state for one phase starts afresh.
  static void reset_thunk(void* self) {
    if constexpr (requires(Sink & s) { s.end_phase(); })
      static_cast<record_channel*>(self)->sink_.end_phase();
  }

  int me_;
  int size_;
  Sink sink_;
  router_type router_;
  std::size_t cap_;
  std::vector<out_buffer> final_;    // per peer: records on their last hop
  std::vector<out_buffer> transit_;  // per peer: records to be forwarded (routed only)
  channel_core core_;
  bool queue_local_;
  int holds_ = 0;                     // holds lasting (hold_local)
  bool draining_now_ = false;         // queued items are being delivered
  std::vector<std::byte> local_;      // queued records for this rank: size, origin, payload
  std::vector<std::byte> draining_;   // the batch being delivered
  std::uint64_t local_records_ = 0;   // records in local_
  std::uint64_t held_elsewhere_ = 0;  // see note_unsent
};

}  // namespace cairn::msg::detail
