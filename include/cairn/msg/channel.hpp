#pragma once
/// \file
/// `cairn::msg::channel`: aggregated active messages (Active Pebbles; TRAM). Millions of small
/// typed items are sent to global targets; each is copied into the buffer of the next peer on
/// its route (the hot path: one copy, no allocation, no virtual call, no lock, no hash unless
/// combining asks for one), buffers travel when full, on flush() or after flush_interval_s, and
/// the receiver calls the handler per item or routes it on. Messages from one rank to another
/// are handled in the order they were sent, so items of one source to one owner on one route
/// arrive in the order they were sent (unless combining merged them). `world::quiesce()` detects
/// when all items — including those sent by handlers — have been delivered.
///
/// A key outside the distribution's domain (e.g. n on a block distribution of n keys, or a
/// negative key) is reported by send() as cairn::error on the sending rank before anything is
/// sent; the check is one compare per item and replaces the check of the owner rank. A phase
/// of the channel ends when world::quiesce(), wait() or a done() phase completes: combining
/// caches start empty in the next phase (see combine.hpp).
///
/// A channel may also be made on a group (`make_channel<T>(g, ...)`, collective over its
/// members): its ranks are then group ranks, its messages never meet those of channels on
/// other groups, and `g.quiesce()` ends a phase of the channels on that group alone.
///
///     auto dist = cairn::block_distribution(n_global, w.size());
///     auto ch = cairn::make_channel<std::uint64_t>(w, dist,
///         [&](std::uint64_t k) { ++table[dist.local_index(k)]; }, cairn::route::grid{});
///     for (auto k : keys) ch.send(k);
///     w.quiesce();

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/msg/channel_options.hpp"
#include "cairn/msg/combine.hpp"
#include "cairn/msg/detail/channel_core.hpp"
#include "cairn/msg/distribution.hpp"
#include "cairn/msg/route.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::msg {

/// What a handler may take as its second argument: where the item came from, and the world to
/// send on (capture other channels by reference to send on them).
class channel_context {
 public:
  /// The rank that sent the item with send() (its origin, also after forwarding hops), among
  /// the channel's ranks (a group rank for a channel on a group).
  [[nodiscard]] int source() const noexcept { return source_; }
  /// This rank among the channel's ranks.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// This rank's world.
  [[nodiscard]] cairn::world& world() const noexcept { return *w_; }
  /// The group of a channel made on a group (null for a channel on the world).
  [[nodiscard]] const cairn::group* group() const noexcept { return g_; }
  /// Internal: made by the channel per delivered item.
  channel_context(cairn::world* w, const cairn::group* g, int rank, int source) noexcept
      : w_(w), g_(g), rank_(rank), source_(source) {}

 private:
  cairn::world* w_;
  const cairn::group* g_;
  int rank_;
  int source_;
};

namespace detail {
/// Where a channel runs, as its handlers see it: the world, the group (or none) and this
/// rank's number among the channel's ranks.
struct handler_place {
  cairn::world* w;
  const cairn::group* g;
  int rank;
};
/// Calls a channel's handler with the item (or the items of a batch handler, all from
/// `origin`), and with its context if it takes one.
template <class Handler, class X>
void call_handler(Handler& h, const X& x, const handler_place& at, int origin) {
  if constexpr (std::is_invocable_v<Handler&, const X&, channel_context&>) {
    channel_context c(at.w, at.g, at.rank, origin);
    h(x, c);
  } else {
    (void)at;
    (void)origin;
    h(x);
  }
}
}  // namespace detail

/// True if `Handler` takes one item of a channel of T: `h(const T&)` or
/// `h(const T&, channel_context&)`.
template <class Handler, class T>
concept item_handler = std::is_invocable_v<Handler&, const T&> ||
    std::is_invocable_v<Handler&, const T&, channel_context&>;
/// True if `Handler` takes the items of a channel of T a batch at a time and not one by one:
/// `h(std::span<const T>)` or `h(std::span<const T>, channel_context&)`.
template <class Handler, class T>
concept batch_handler = !item_handler<Handler, T> &&
                        (std::is_invocable_v<Handler&, std::span<const T>> ||
                         std::is_invocable_v<Handler&, std::span<const T>, channel_context&>);

/// A termination phase of a channel (TRAM's init/insert/done cycle), from its done(): after
/// done(), this rank inserts nothing more; test() advances detection without blocking and is
/// true once every rank called done() and every item of the channel (handler sends included)
/// has been delivered. Reusable: start inserting again after it completed. Other collectives
/// on the world must not be started while a phase is being tested (they would interleave with
/// the phase's allreduce waves differently on different ranks).
/// With channel_options::contributors = k, the phase ends once done() was called k times on
/// every rank; each call's phase object tests the same phase.
class channel_phase {
 public:
  /// Advances detection; true once the phase has terminated.
  bool test() { return core_->phase_test(phase_); }
  /// Blocks until the phase has terminated (delivering items meanwhile).
  void wait() { core_->phase_wait(phase_); }
  /// Internal: made by a channel's done().
  explicit channel_phase(detail::channel_core& c) : core_(&c), phase_(c.phase_begin()) {}

 private:
  detail::channel_core* core_;
  std::uint64_t phase_;
};

/// A channel of items of type T owned by `Dist`, handled by `Handler`, routed by `Route` and
/// combined by `Combine`. Created collectively: every rank creates its channels in the same
/// order. Not copyable or movable (make it in place with make_channel). Use from the rank's
/// thread only.
///
/// The handler takes one item (`void(const T&)`, `void(const T&, channel_context&)`) or a batch
/// (`void(std::span<const T>)`, `void(std::span<const T>, channel_context&)`). A batch handler
/// is called once per arrived message with the items it carries for this rank, in the order
/// they were sent, and all from one source (a routed message whose items have several origins
/// is handed over in runs of one origin). A loop over a batch may look ahead (prefetch the
/// next items' targets), which hides the cache misses a per-item handler takes one by one.
/// Items a rank sends to itself are collected into batches of their own, handed to the handler
/// when a buffer's worth is queued or when the rank polls (as with queue_local). No batch holds
/// more than buffer_items() items; the span is valid only during the call.
template <class T, class Dist, class Handler, class Route = route::direct,
          class Combine = combine::none>
class channel {
  static_assert(cairn::detail::transferable<T>, "channel items must be trivially copyable");
  using router_type = decltype(std::declval<const Route&>().make(std::declval<const world&>()));
  static_assert(router<router_type>, "Route::make(world) must return a cairn::msg::router");

  static constexpr bool routed = !router_type::is_direct;
  static constexpr bool batched = batch_handler<Handler, T>;
  static_assert(item_handler<Handler, T> || batched,
                "the handler must be callable as h(const T&), h(const T&, channel_context&), "
                "h(std::span<const T>) or h(std::span<const T>, channel_context&)");
  static_assert(!batched || alignof(T) <= detail::message_align,
                "a batch handler reads items in place: their alignment is at most 64 bytes");
  static constexpr bool wants_context =
      batched ? std::is_invocable_v<Handler&, std::span<const T>, channel_context&>
              : std::is_invocable_v<Handler&, const T&, channel_context&>;
  // Routed messages carry each item's origin only for handlers that ask for it.
  static constexpr bool carry_origin = routed && wants_context;
  // Items start at a multiple of their alignment after the header.
  static constexpr std::size_t header_bytes = std::max(sizeof(detail::wire_header), alignof(T));

 public:
  /// Item type.
  using value_type = T;

  /// A channel on the ranks of `on`: the world, or a group (then collective over its members
  /// only, and every rank number the channel takes or gives is a group rank). Throws
  /// cairn::error for bad options (before anything is sent).
  template <channel_ranks Ranks>
  channel(const Ranks& on, Dist dist, Handler handler, Route route = {}, Combine combine = {},
          channel_options opts = {})
      : w_(detail::world_of(on)),
        group_(detail::group_of(on)),
        me_(on.rank()),
        size_(checked_size(on, dist)),
        dist_(std::move(dist)),
        handler_(std::move(handler)),
        router_(detail::make_router(route, on)),
        combine_(std::move(combine)),
        cap_(items_per_buffer(w_.rank(), opts)),
        final_(static_cast<std::size_t>(size_)),
        transit_(routed ? static_cast<std::size_t>(size_) : 0),
        core_(on, buffer_bytes(cap_), opts, this, &deliver_thunk, &flush_thunk, &drain_thunk,
              &reset_thunk),
        queue_local_(opts.queue_local) {
    combine_.template init<T>();
  }
  /// A channel destroyed with items still buffered is a program error (call w.quiesce() or
  /// flush() first): it ends the run with a message naming the count; nothing is dropped silently.
  ~channel() {
    std::uint64_t unsent = local_queue_.size() + local_batch_.size();
    for (const auto& b : final_) unsent += b.n;
    for (const auto& b : transit_) unsent += b.n;
    core_.retire(unsent);
  }
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Sends `x` to the owner of `x` under the distribution. Throws cairn::error (nothing sent)
  /// if the key of `x` is outside the distribution's domain, or its owner outside the world.
  void send(const T& x) { send_keyed(x, x); }
  /// Sends `x` to the owner of the global target `target` (a key the distribution maps).
  /// Throws cairn::error (nothing sent) if `target` is outside the distribution's domain.
  template <class Key>
  requires(!std::is_same_v<std::remove_cvref_t<Key>, T>) void send(const Key& target, const T& x) {
    send_keyed(target, x);
  }
  /// Sends every item of `items` to its owner.
  void send_many(std::span<const T> items) {
    for (const T& x : items) send(x);
  }
  /// Sends `x` to rank `dest` (an explicit owner; the distribution is not consulted).
  void send_to(int dest, const T& x) {
    if (static_cast<unsigned>(dest) >= static_cast<unsigned>(size_)) [[unlikely]]
      bad_dest("channel::send_to", dest);
    ++core_.stats().sent;
    route_item<false>(dest, x, me_);
  }

  /// Sends `x` to every rank of the channel, this one included (TRAM's broadcast of an
  /// item): each rank's handler sees it exactly once (each copy aggregated on its route).
  void broadcast(const T& x) {
    for (int r = 0; r < size_; ++r) send_to(r, x);
  }

  /// Sends every partly filled buffer now.
  void flush() {
    for (int p = 0; p < size_; ++p) {
      if (final_[static_cast<std::size_t>(p)].n) ship<false>(p);
      if constexpr (routed)
        if (transit_[static_cast<std::size_t>(p)].n) ship<true>(p);
    }
  }
  /// Depth-limited termination (AP 3.6.1), collective: returns once every item sent so far and
  /// every item sent by handlers in chains of at most `depth` further sends has been delivered.
  /// Costs (depth + 1) × (hops of the route) rounds of a reduce_scatter_block — cheaper than
  /// quiesce when the depth is known. Items of a deeper chain are not lost: they arrive later
  /// (a level whose count they break raises cairn::error) or stay buffered (reported when the
  /// channel is destroyed). Use quiesce() when the depth is not known.
  void wait(int depth) {
    if (depth < 0) core_.fail("channel wait", "depth " + std::to_string(depth) + " is negative");
    core_.wait_levels((depth + 1) * router_.max_hops());
  }

  /// A termination phase of this channel (see channel_phase).
  using phase = channel_phase;
  /// Declares that this rank (or one of its contributors) has inserted its last item of the
  /// current phase.
  [[nodiscard]] phase done() { return phase(core_); }

  /// Empties this rank's combining cache now (a no-op without combining). Phase ends do it on
  /// every rank by themselves (world::quiesce(), wait(), a done() phase); call it on every rank
  /// between two uses of the channel that end no phase in between, or to let repeated items
  /// travel again. Local and always safe: an emptied cache only combines less.
  void reset_combining() { reset_cache(); }

  /// Counters of this channel on this rank.
  [[nodiscard]] const channel_stats& stats() const noexcept { return core_.stats(); }
  /// Items per buffer.
  [[nodiscard]] std::size_t buffer_items() const noexcept { return cap_; }
  /// The router (e.g. to print the route: router().describe()).
  [[nodiscard]] const router_type& router() const noexcept { return router_; }
  /// The distribution.
  [[nodiscard]] const Dist& distribution() const noexcept { return dist_; }

 private:
  static std::size_t items_per_buffer(int rank, const channel_options& o) {
    if (o.buffer_items > (std::size_t{1} << 24))
      cairn::detail::fail("channel", rank, "buffer_items ", o.buffer_items,
                          " is above the limit of 16777216");
    return o.buffer_items ? o.buffer_items : std::max<std::size_t>(1, 16384 / sizeof(T));
  }
  // Bytes of a buffer: header, items, destinations (routed), origins (routed + context).
  static std::size_t buffer_bytes(std::size_t cap) {
    return header_bytes + cap * sizeof(T) + (routed ? cap * 4 : 0) + (carry_origin ? cap * 4 : 0);
  }

  // The channel's size, once a distribution that knows its ranks was found to fit in it: its
  // owners of keys in its domain then need no check against the channel's ranks.
  template <class Ranks>
  static int checked_size(const Ranks& on, const Dist& d) {
    if constexpr (requires { d.ranks(); })
      if (static_cast<int>(d.ranks()) > on.size())
        cairn::detail::fail("channel", detail::world_of(on).rank(), "the distribution spans ",
                            d.ranks(), " ranks, more than the ", space_name<Ranks>(), "'s ",
                            on.size());
    return on.size();
  }
  template <class Ranks>
  static constexpr const char* space_name() {
    return std::is_same_v<Ranks, cairn::group> ? "group" : "world";
  }

  // send(x) and send(target, x): a distribution that knows its domain checks the key (one
  // compare; its owner is then a rank of the world), any other the owner rank.
  template <class X>
  void send_keyed(const X& target, const T& x) {
    if constexpr (bounded_distribution_for<Dist, X>) {
      if (!dist_.contains(target)) [[unlikely]]
        bad_key(target);
      ++core_.stats().sent;
      route_item<false>(static_cast<int>(dist_.owner(target)), x, me_);
    } else {
      const int dest = owner_under(dist_, target);
      if (static_cast<unsigned>(dest) >= static_cast<unsigned>(size_)) [[unlikely]]
        bad_dest("channel::send", dest);
      ++core_.stats().sent;
      route_item<false>(dest, x, me_);
    }
  }

  template <class X>
  [[noreturn, gnu::cold, gnu::noinline]] void bad_key(const X& target) const {
    cairn::detail::fail("channel::send", w_.rank(), "key ", dist_.key_of(target),
                        " is outside the distribution's domain [0, ", dist_.size(), ") (channel '",
                        core_.name(), "')");
  }

  [[noreturn, gnu::cold, gnu::noinline]] void bad_dest(const char* call, int dest) const {
    cairn::detail::fail(call, w_.rank(), "target rank ", dest, " is outside the ",
                        group_ ? "group" : "world", " of ", size_, " ranks (channel '",
                        core_.name(), "')");
  }

  // Empties the combining cache: reset() if the combiner has one, else init<T>() again.
  void reset_cache() {
    if constexpr (Combine::enabled) {
      if constexpr (requires { combine_.reset(); })
        combine_.reset();
      else
        combine_.template init<T>();
    }
  }

  // One item at this rank on its way to `dest` (sent here, or arrived for forwarding).
  template <bool Forwarded>
  void route_item(int dest, const T& x, int origin) {
    if (dest == me_) {
      ++core_.stats().local;
      if constexpr (batched) {
        // Handed over when a buffer's worth is queued, unless a handler runs: its batch may be
        // the very vector being drained.
        local_batch_.push_back(x);
        if (local_batch_.size() >= cap_ && !core_.in_handler()) drain_local();
        return;
      }
      if (queue_local_) {
        local_queue_.push_back({x, origin});
        return;
      }
      handle(x, origin);
      return;
    }
    const int next = router_.next_hop(dest);
    if constexpr (!routed) {
      append<false, Forwarded>(final_[static_cast<std::size_t>(next)], next, x, dest, origin);
    } else {
      if (next == dest)
        append<false, Forwarded>(final_[static_cast<std::size_t>(next)], next, x, dest, origin);
      else
        append<true, Forwarded>(transit_[static_cast<std::size_t>(next)], next, x, dest, origin);
    }
  }

  template <bool Transit, bool Forwarded>
  void append(detail::out_buffer& b, int peer, const T& x, int dest, int origin) {
    if (!b.data) [[unlikely]] {
      // Under backpressure acquire() delivers arrived items, whose forwarding may have
      // started this very buffer meanwhile: keep that one.
      std::byte* d = core_.acquire();
      if (b.data)
        core_.recycle(d);
      else
        b.data = d;
    }
    std::byte* items = b.data + header_bytes;
    if constexpr (Combine::enabled) {
      if (combine_.absorb(x, b, items)) {
        if constexpr (Forwarded)
          ++core_.stats().combined_hops;
        else
          ++core_.stats().combined_source;
        return;
      }
    }
    const std::size_t i = b.n;
    std::memcpy(items + i * sizeof(T), &x, sizeof(T));
    std::byte* meta = items + cap_ * sizeof(T);
    if constexpr (Transit) {
      const auto d = static_cast<std::uint32_t>(dest);
      std::memcpy(meta + i * 4, &d, 4);
      meta += cap_ * 4;
    }
    if constexpr (carry_origin) {
      const auto o = static_cast<std::uint32_t>(origin);
      std::memcpy(meta + i * 4, &o, 4);
    }
    (void)dest;
    (void)origin;
    if (++b.n == cap_) ship<Transit>(peer);
  }

  // Sends the buffer for `peer`: header, then the metadata arrays moved up behind the items.
  template <bool Transit>
  void ship(int peer) {
    detail::out_buffer& b =
        Transit ? transit_[static_cast<std::size_t>(peer)] : final_[static_cast<std::size_t>(peer)];
    const std::size_t n = b.n;
    std::byte* items = b.data + header_bytes;
    std::size_t bytes = header_bytes + n * sizeof(T);
    std::uint32_t flags = 0;
    const std::byte* meta = items + cap_ * sizeof(T);
    if constexpr (Transit) {
      flags |= detail::wire_transit;
      std::memmove(b.data + bytes, meta, n * 4);
      bytes += n * 4;
      meta += cap_ * 4;
    }
    if constexpr (carry_origin) {
      flags |= detail::wire_origins;
      std::memmove(b.data + bytes, meta, n * 4);
      bytes += n * 4;
    }
    const detail::wire_header h{static_cast<std::uint32_t>(n), flags};
    std::memcpy(b.data, &h, sizeof h);
    std::byte* data = b.data;
    b.data = nullptr;
    b.n = 0;
    ++b.gen;
    auto& st = core_.stats();
    ++st.buffers_sent;
    st.items_in_buffers += n;
    core_.ship(peer, data, bytes);
  }

  void handle(const T& x, int origin) {
    if constexpr (batched)
      handle_batch(std::span<const T>(&x, 1), origin);
    else
      hand_over(x, 1, origin);
  }
  // A batch handler's call: `items` all from `origin`.
  void handle_batch(std::span<const T> items, int origin) {
    hand_over(items, items.size(), origin);
  }
  // Calls the handler with `x` (an item, or a batch handler's span of `items`).
  template <class X>
  void hand_over(const X& x, std::size_t items, int origin) {
    core_.stats().delivered += items;
    typename detail::channel_core::handler_scope guard(core_);
    detail::call_handler(handler_, x, detail::handler_place{&w_, group_ ? &*group_ : nullptr, me_},
                         origin);
  }

  // Delivers the items this rank queued for itself (queue_local, or a batch handler's); called
  // by the layer's poll.
  bool drain_local() {
    if constexpr (batched) {
      bool any = false;
      // Handlers may queue more local items meanwhile: they go to the emptied local_batch_.
      while (!local_batch_.empty()) {
        draining_.swap(local_batch_);
        struct clear_on_exit {
          std::vector<T>& v;
          ~clear_on_exit() { v.clear(); }
        } clear{draining_};
        const std::span<const T> all(draining_);
        for (std::size_t i = 0; i < all.size(); i += cap_)
          handle_batch(all.subspan(i, std::min(cap_, all.size() - i)), me_);
        any = true;
      }
      return any;
    }
    bool any = false;
    // Handlers may queue more local items while we drain: index, don't iterate.
    for (std::size_t i = 0; i < local_queue_.size(); ++i) {
      const queued q = local_queue_[i];
      handle(q.item, q.origin);
      any = true;
    }
    local_queue_.clear();
    return any;
  }

  void deliver(const std::byte* msg, std::size_t bytes, int from) {
    detail::wire_header h;
    std::memcpy(&h, msg, sizeof h);
    const std::size_t n = h.items;
    const bool transit = (h.flags & detail::wire_transit) != 0;
    const bool origins = (h.flags & detail::wire_origins) != 0;
    const std::size_t need =
        header_bytes + n * sizeof(T) + (transit ? n * 4 : 0) + (origins ? n * 4 : 0);
    if (need != bytes || (transit && !routed) || (origins && !carry_origin)) [[unlikely]]
      core_.fail("channel", "malformed message of " + std::to_string(bytes) + " bytes from rank " +
                                std::to_string(from) + " (" + std::to_string(n) + " items, flags " +
                                std::to_string(h.flags) +
                                "): do all ranks create their channels in the same order?");
    const std::byte* items = msg + header_bytes;
    const std::byte* dests = items + n * sizeof(T);
    const std::byte* orig = dests + (transit ? n * 4 : 0);
    if constexpr (batched) {
      deliver_batches(items, dests, orig, n, transit, from);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, items + i * sizeof(T), sizeof(T));
      int origin = from;
      if constexpr (carry_origin) {
        std::uint32_t o;
        std::memcpy(&o, orig + i * 4, 4);
        origin = static_cast<int>(o);
      }
      if constexpr (routed) {
        if (transit) {
          std::uint32_t d;
          std::memcpy(&d, dests + i * 4, 4);
          if (static_cast<int>(d) != me_) {
            ++core_.stats().forwarded;
            route_item<true>(static_cast<int>(d), x, origin);
            continue;
          }
        }
      }
      handle(x, origin);
    }
  }

  // A batch handler's share of a message: its runs of consecutive items for this rank (of one
  // origin, for a handler that asks for it), each in one call; the others are routed on.
  void deliver_batches(const std::byte* items, const std::byte* dests, const std::byte* orig,
                       std::size_t n, bool transit, int from) {
    // The core delivers messages message_align-aligned, and items start at a multiple of
    // their alignment after the header: they are read in place.
    const T* all = reinterpret_cast<const T*>(items);
    if constexpr (!routed) {
      (void)dests;
      (void)orig;
      (void)transit;
      handle_batch(std::span<const T>(all, n), from);
    } else {
      std::size_t first = 0;  // the current run: [first, i)
      int run_origin = from;
      for (std::size_t i = 0; i < n; ++i) {
        int origin = from;
        if constexpr (carry_origin) {
          std::uint32_t o;
          std::memcpy(&o, orig + i * 4, 4);
          origin = static_cast<int>(o);
        }
        std::uint32_t d = static_cast<std::uint32_t>(me_);
        if (transit) std::memcpy(&d, dests + i * 4, 4);
        const bool mine = static_cast<int>(d) == me_;
        if (i > first && (!mine || origin != run_origin)) {
          handle_batch(std::span<const T>(all + first, i - first), run_origin);
          first = i;
        }
        if (!mine) {
          ++core_.stats().forwarded;
          route_item<true>(static_cast<int>(d), all[i], origin);
          first = i + 1;
        }
        run_origin = origin;
      }
      if (n > first) handle_batch(std::span<const T>(all + first, n - first), run_origin);
    }
  }

  static void deliver_thunk(void* self, const std::byte* msg, std::size_t bytes, int from) {
    static_cast<channel*>(self)->deliver(msg, bytes, from);
  }
  static void flush_thunk(void* self) { static_cast<channel*>(self)->flush(); }
  static bool drain_thunk(void* self) { return static_cast<channel*>(self)->drain_local(); }
  static void reset_thunk(void* self) { static_cast<channel*>(self)->reset_cache(); }

  struct queued {
    T item;
    int origin;
  };

  cairn::world w_;
  std::optional<cairn::group> group_;  // the group of a channel on a group
  int me_;                             // this rank among the channel's ranks
  int size_;                           // the channel's ranks
  Dist dist_;
  Handler handler_;
  router_type router_;
  Combine combine_;
  std::size_t cap_;
  std::vector<detail::out_buffer> final_;    // per peer: items on their last hop
  std::vector<detail::out_buffer> transit_;  // per peer: items to be forwarded (routed only)
  detail::channel_core core_;
  bool queue_local_;
  std::vector<queued> local_queue_;
  std::vector<T> local_batch_;  // a batch handler's items from this rank, not yet handed over
  std::vector<T> draining_;     // the local batch being handed over
};

/// Makes a channel of items of type T in place, on the world or on a group:
/// `auto ch = make_channel<T>(w, dist, handler [, route [, combine]] [, options]);`
template <class T, channel_ranks Ranks, class Dist, class Handler, class Route = route::direct,
          class Combine = combine::none>
requires cairn::detail::transferable<T>
[[nodiscard]] channel<T, Dist, Handler, Route, Combine> make_channel(const Ranks& on, Dist dist,
                                                                     Handler handler,
                                                                     Route route = {},
                                                                     Combine combine = {},
                                                                     channel_options opts = {}) {
  return {on, std::move(dist), std::move(handler), std::move(route), std::move(combine), opts};
}
/// make_channel with options and the direct route.
template <class T, channel_ranks Ranks, class Dist, class Handler>
requires cairn::detail::transferable<T>
[[nodiscard]] channel<T, Dist, Handler> make_channel(const Ranks& on, Dist dist, Handler handler,
                                                     channel_options opts) {
  return {on, std::move(dist), std::move(handler), route::direct{}, combine::none{}, opts};
}
/// make_channel with a route and options (no combining).
template <class T, channel_ranks Ranks, class Dist, class Handler, class Route>
requires route_spec<Route> && cairn::detail::transferable<T>
[[nodiscard]] channel<T, Dist, Handler, Route> make_channel(const Ranks& on, Dist dist,
                                                            Handler handler, Route route,
                                                            channel_options opts) {
  return {on, std::move(dist), std::move(handler), std::move(route), combine::none{}, opts};
}

}  // namespace cairn::msg

namespace cairn {
using msg::channel_context;
using msg::channel_options;
using msg::channel_phase;
using msg::make_channel;
namespace route = msg::route;
namespace combine = msg::combine;
}  // namespace cairn
