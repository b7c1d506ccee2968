#pragma once
/// \file
/// `cairn::msg::serial_channel`: a channel of items of any serializable type — strings,
/// vectors, maps, user types with a cereal `serialize` — of any size, from 0 bytes to more than
/// a buffer. Items are serialized into the buffer of their next hop and handed to the handler
/// on their owner; an item larger than a buffer travels in a message of its own. Routes,
/// flush, termination (world::quiesce, wait, done) and the counters are the typed channel's;
/// there is no combining (a container combines at its source before it sends).
///
/// make_channel picks it for a type that is not trivially copyable:
///
///     auto ch = cairn::make_channel<std::string>(w, cairn::hashed_distribution(w.size()),
///         [&](const std::string& word) { ++counts[word]; });
///     ch.send(owner_key, "a word");   // or ch.send_to(rank, "a word")
///     w.quiesce();

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/msg/channel.hpp"
#include "cairn/msg/detail/packing.hpp"
#include "cairn/msg/detail/record_channel.hpp"
#include "cairn/runtime/serialize.hpp"

namespace cairn::msg {

/// A channel of serializable items of type T owned by `Dist`, handled by `Handler`
/// (`void(const T&)` or `void(const T&, channel_context&)`), routed by `Route`. Created
/// collectively, like channel. Not copyable or movable (make it with make_channel).
template <class T, class Dist, class Handler, class Route = route::direct>
class serial_channel {
  static_assert(cairn::serializable<T>,
                "serial_channel items must be serializable (cairn::serializable); trivially "
                "copyable items use cairn::msg::channel");
  static constexpr bool wants_context = std::is_invocable_v<Handler&, const T&, channel_context&>;
  static_assert(wants_context || std::is_invocable_v<Handler&, const T&>,
                "the handler must be callable as h(const T&) or h(const T&, channel_context&)");

  // Deserializes a record into a T and calls the handler.
  struct sink {
    serial_channel* self;
    void operator()(std::span<const std::byte> payload, int origin) const {
      T x{};
      detail::unpack_all(payload, "channel", self->w_.rank(), x);
      self->call(x, origin);
    }
  };

 public:
  /// Item type.
  using value_type = T;

  /// A channel on the ranks of `on`: the world, or a group (collective over its members; its
  /// ranks are then group ranks, see channel). Throws cairn::error for bad options (before
  /// anything is sent).
  template <channel_ranks Ranks>
  serial_channel(const Ranks& on, Dist dist, Handler handler, Route route = {},
                 channel_options opts = {})
      : w_(detail::world_of(on)),
        group_(detail::group_of(on)),
        me_(on.rank()),
        size_(on.size()),
        dist_(std::move(dist)),
        handler_(std::move(handler)),
        records_(on, std::move(route), sink{this}, opts) {}
  serial_channel(const serial_channel&) = delete;
  serial_channel& operator=(const serial_channel&) = delete;

  /// Sends `x` to the owner of `x` under the distribution (a distribution of T's).
  void send(const T& x) { send_to_checked("channel::send", owner_under(dist_, x), x); }
  /// Sends `x` to the owner of the global target `target`.
  template <class Key>
  requires(!std::is_same_v<std::remove_cvref_t<Key>, T>) void send(const Key& target, const T& x) {
    if constexpr (bounded_distribution_for<Dist, Key>) {
      if (!dist_.contains(target)) [[unlikely]]
        records_.core().fail("channel::send", "key " + std::to_string(dist_.key_of(target)) +
                                                  " is outside the distribution's domain [0, " +
                                                  std::to_string(dist_.size()) + ") (channel '" +
                                                  records_.core().name() + "')");
    }
    send_to_checked("channel::send", owner_under(dist_, target), x);
  }
  /// Sends `x` to rank `dest` (the distribution is not consulted).
  void send_to(int dest, const T& x) { send_to_checked("channel::send_to", dest, x); }

  /// Sends `x` to every rank of the channel, this one included: each rank's handler sees it
  /// exactly once.
  void broadcast(const T& x) {
    for (int r = 0; r < size_; ++r) send_to_checked("channel::broadcast", r, x);
  }
  /// Sends every partly filled buffer now.
  void flush() { records_.flush(); }
  /// Depth-limited termination (see channel::wait).
  void wait(int depth) {
    if (depth < 0)
      records_.core().fail("channel wait", "depth " + std::to_string(depth) + " is negative");
    records_.core().wait_levels((depth + 1) * records_.router().max_hops());
  }
  /// A termination phase of this channel (see channel::done).
  [[nodiscard]] channel_phase done() { return channel_phase(records_.core()); }
  /// Counters of this channel on this rank.
  [[nodiscard]] const channel_stats& stats() const noexcept { return records_.core().stats(); }
  /// The distribution.
  [[nodiscard]] const Dist& distribution() const noexcept { return dist_; }
  /// The router.
  [[nodiscard]] const auto& router() const noexcept { return records_.router(); }

 private:
  void send_to_checked(const char* what, int dest, const T& x) {
    if (static_cast<unsigned>(dest) >= static_cast<unsigned>(size_)) [[unlikely]]
      cairn::detail::fail(what, w_.rank(), "target rank ", dest, " is outside the ",
                          group_ ? "group" : "world", " of ", size_, " ranks (channel '",
                          records_.core().name(), "')");
    if (dest == me_ && !records_.queues_local()) {
      // The owner is this rank: the handler gets the item itself, never serialized.
      ++records_.core().stats().sent;
      records_.deliver_here([&] { call(x, me_); });
      return;
    }
    if constexpr (detail::sized_packable<T>) {  // a string or flat vector: written in place
      if (x.size() > 0xffffffffu) [[unlikely]]
        cairn::detail::fail(what, w_.rank(), "an item of ", x.size(),
                            " elements is above the limit of 2^32 - 1");
      records_.send_written(dest, detail::packed_size(x),
                            [&](std::byte* at) { detail::pack_to(at, x); });
    } else {
      detail::scratch_stack::lease l(scratch_);
      detail::pack_all(l.bytes(), x);
      records_.send(dest, l.bytes());
    }
  }

  void call(const T& x, int origin) {
    detail::call_handler(handler_, x, detail::handler_place{&w_, group_ ? &*group_ : nullptr, me_},
                         origin);
  }

  cairn::world w_;
  std::optional<cairn::group> group_;  // the group of a channel on a group
  int me_;                             // this rank among the channel's ranks
  int size_;                           // the channel's ranks
  Dist dist_;
  Handler handler_;
  detail::scratch_stack scratch_;
  detail::record_channel<Route, sink> records_;
};

/// make_channel for items that are not trivially copyable: a serial_channel, on the world or
/// on a group.
template <class T, channel_ranks Ranks, class Dist, class Handler, class Route = route::direct>
requires(!cairn::detail::transferable<T> && route_spec<Route>)
    [[nodiscard]] serial_channel<T, Dist, Handler, Route> make_channel(const Ranks& on, Dist dist,
                                                                       Handler handler,
                                                                       Route route = {},
                                                                       channel_options opts = {}) {
  return {on, std::move(dist), std::move(handler), std::move(route), opts};
}
/// make_channel with options, for items that are not trivially copyable.
template <class T, channel_ranks Ranks, class Dist, class Handler>
requires(!cairn::detail::transferable<T>)
    [[nodiscard]] serial_channel<T, Dist, Handler> make_channel(const Ranks& on, Dist dist,
                                                                Handler handler,
                                                                channel_options opts) {
  return {on, std::move(dist), std::move(handler), route::direct{}, opts};
}

}  // namespace cairn::msg

namespace cairn {
using msg::make_channel;  // again: a using-declaration names only the overloads declared before it
using msg::serial_channel;
}  // namespace cairn
