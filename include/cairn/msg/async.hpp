#pragma once
/// \file
/// `cairn::msg::async_channel`: YGM-style remote calls. `a.async(rank, f, args...)` calls the
/// stateless function object `f` (a lambda without captures) with copies of `args` on `rank`;
/// the calls are aggregated like channel items (buffers per peer, routes, termination by
/// world::quiesce). The call travels as the index of `f`'s type in a registry every process
/// of the run holds (made at static initialization, see detail/call_registry.hpp), never as a
/// pointer, so it works between processes. Arguments are trivially copyable values (their
/// bytes) or serializable ones (strings, vectors, maps, user types with cereal's `serialize`);
/// a string literal travels as a std::string. Made on a group (`make_async(g)`), the ranks are
/// group ranks and group::quiesce ends its calls.
///
///     auto a = cairn::make_async(w);
///     a.async((w.rank() + 1) % w.size(), [](auto& ctx, int hops, const std::string& who) {
///       if (hops > 0) ctx.async((ctx.rank() + 1) % ctx.world().size(), ...);
///     }, 3, std::string("hello"));
///     w.quiesce();
///
/// The function is called as `f(ctx, args...)` if it takes the context (source(), rank(),
/// world(), and async() to call further), else as `f(args...)`.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "cairn/coll/op.hpp"
#include "cairn/msg/channel.hpp"
#include "cairn/msg/detail/call_registry.hpp"
#include "cairn/msg/detail/packing.hpp"
#include "cairn/msg/detail/record_channel.hpp"

namespace cairn::msg {

namespace detail {

/// The type an argument travels as: a character pointer as std::string, anything else decayed.
template <class A>
using wire_type = std::conditional_t<std::is_same_v<std::decay_t<A>, const char*> ||
                                         std::is_same_v<std::decay_t<A>, char*>,
                                     std::string, std::decay_t<A>>;

/// Calls `F` on `target` with `args` (as rvalues), or without the target if F does not take it.
template <class F, class Target, class... A>
void invoke_call(Target& target, A&... args) {
  F f{};
  if constexpr (std::is_invocable_v<F&, Target&, A&&...>) {
    f(target, std::move(args)...);
  } else {
    static_assert(std::is_invocable_v<F&, A&&...>,
                  "an async function must be callable as f(context, args...) or f(args...) with "
                  "the arguments given to async()");
    f(std::move(args)...);
  }
}

/// The registry entry of function type F called on a Target with arguments Args (wire types).
template <class Target, class F, class... Args>
struct call_entry {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "an async function must be stateless (a lambda without captures, or a function "
                "object without members): it is called by its type on the target, not by "
                "pointer");
  static_assert((!std::is_pointer_v<Args> && ...),
                "async arguments are values: a pointer means nothing on another rank");
  static_assert((packable<Args> && ...),
                "async arguments must be trivially copyable or serializable");

  /// Unpacks the arguments and calls F.
  static void thunk(void* target, std::span<const std::byte> in, int rank) {
    std::tuple<Args...> args;
    std::apply([&](auto&... a) { unpack_all(in, "async", rank, a...); }, args);
    std::apply([&](auto&... a) { invoke_call<F>(*static_cast<Target*>(target), a...); }, args);
  }
  /// Registers the entry at static initialization (instantiated by index()).
  static inline const int registered = call_registry::get().add(typeid(call_entry).name(), &thunk);
  /// The entry's index, the same in every process.
  static std::uint32_t index() {
    (void)registered;
    static const std::uint32_t i = call_registry::get().index_of(typeid(call_entry).name());
    return i;
  }
};

/// Calls of registered functions on a Target object of each rank, over a record channel:
/// the engine of async_channel and of the containers. A record is the function's index
/// (4 bytes) followed by its packed arguments.
template <class Route, class Target>
class call_channel {
  struct sink {
    call_channel* self;
    void operator()(std::span<const std::byte> payload, int origin) const {
      self->dispatch(payload, origin);
    }
    // The hooks exist only where the target has them, so the record channel skips the rest.
    // A target with a combining cache empties it into the buffers before they are sent.
    void before_flush() const requires requires(Target& t) { t.before_flush(); }
    { self->target_.before_flush(); }
    // A target that gathers arriving calls (a container's batch at the owner) applies them.
    void after_deliver() const requires requires(Target& t) { t.after_deliver(); }
    { self->target_.after_deliver(); }
    // A target that combines calls passing through this rank (a container's cache on every
    // hop) takes the call, or lets it travel on: `on_transit(index, args)`.
    // A target that keeps state for one phase of its calls (a set's filter) starts afresh.
    void end_phase() const requires requires(Target& t) { t.end_phase(); }
    { self->target_.end_phase(); }
    bool on_transit(std::span<const std::byte> payload) const requires
        requires(Target& t, std::span<const std::byte> a) {
      t.on_transit(0u, a);
    }
    {
      std::uint32_t index = ~0u;
      if (payload.size() < 4) return false;  // malformed: its owner reports it
      std::memcpy(&index, payload.data(), 4);
      return self->target_.on_transit(index, payload.subspan(4));
    }
  };

 public:
  /// Calls on `target` (which outlives the channel), collectively on the ranks of `on` (the
  /// world or a group): checks that every rank holds the same registry (the same program)
  /// before anything is sent.
  template <channel_ranks Ranks>
  call_channel(const Ranks& on, Target& target, Route route, const channel_options& opts)
      : me_(on.rank()),
        size_(on.size()),
        target_(target),
        records_(on, std::move(route), sink{this}, opts) {
    check_same_program(Ranks(on));
  }

  /// Calls F on rank `dest` with `args` (dest checked by the caller).
  template <class F, class... A>
  void call(int dest, const A&... args) {
    using entry = call_entry<Target, F, wire_type<A>...>;
    const std::uint32_t index = entry::index();
    if (dest == me_ && !records_.queues_local()) {
      // Called here: no serialization, the function gets copies as a remote call would.
      ++records_.core().stats().sent;
      std::tuple<wire_type<A>...> copies(args...);
      records_.deliver_here([&] {
        set_source(me_);
        std::apply([&](auto&... a) { invoke_call<F>(target_, a...); }, copies);
      });
      return;
    }
    if constexpr (((sized_packable<A> && std::is_same_v<A, wire_type<A>>)&&...)) {
      // Sizes known up front (trivially copyable values, strings, flat vectors): the index
      // and the arguments go straight into the buffer.
      for (std::size_t n : {packed_size(args)...})
        if (n > 0xffffffffu) [[unlikely]]
          records_.core().fail("async", "an argument of " + std::to_string(n) +
                                            " bytes is above the limit of 2^32 - 1 bytes");
      const std::size_t bytes = (std::size_t{4} + ... + packed_size(args));
      records_.send_written(dest, bytes, [&](std::byte* at) {
        std::memcpy(at, &index, 4);
        at += 4;
        (pack_to(at, args), ...);
      });
    } else {
      detail::scratch_stack::lease l(scratch_);
      pack_record(l.bytes(), index, static_cast<const wire_type<A>&>(args)...);
      records_.send(dest, l.bytes());
    }
  }
  /// Calls F with `args` on every rank (this one included), packing the arguments once.
  template <class F, class... A>
  void call_all(const A&... args) {
    using entry = call_entry<Target, F, wire_type<A>...>;
    detail::scratch_stack::lease l(scratch_);
    pack_record(l.bytes(), entry::index(), static_cast<const wire_type<A>&>(args)...);
    for (int r = 0; r < size_; ++r) records_.send(r, l.bytes());
  }
  /// The record channel (flush, termination, counters).
  [[nodiscard]] record_channel<Route, sink>& records() noexcept { return records_; }
  /// The record channel.
  [[nodiscard]] const record_channel<Route, sink>& records() const noexcept { return records_; }

 private:
  template <class... W>
  static void pack_record(std::vector<std::byte>& out, std::uint32_t index, const W&... args) {
    out.resize(4);
    std::memcpy(out.data(), &index, 4);
    pack_all(out, args...);
  }

  void set_source(int source) {
    if constexpr (requires { target_.set_source(source); }) target_.set_source(source);
  }

  void dispatch(std::span<const std::byte> payload, int origin) {
    std::uint32_t index = ~0u;
    if (payload.size() >= 4) std::memcpy(&index, payload.data(), 4);
    const call_thunk t = call_registry::get().thunk(index);
    if (!t)
      records_.core().fail("async", "a call of " + std::to_string(payload.size()) +
                                        " bytes names no registered function (index " +
                                        std::to_string(index) + ")");
    set_source(origin);
    t(&target_, payload.subspan(4), me_);
  }

  template <channel_ranks Ranks>
  void check_same_program(Ranks on) {
    const std::uint64_t fp = call_registry::get().fingerprint();
    std::uint64_t mine[2] = {fp, ~fp}, all[2] = {0, 0};
    on.allreduce(std::span<const std::uint64_t>(mine, 2), std::span<std::uint64_t>(all, 2),
                 cairn::max{});
    if (all[0] != fp || all[1] != ~fp)
      records_.core().fail("async",
                           "ranks hold different registries of async functions (different "
                           "programs?): this rank's fingerprint is " +
                               std::to_string(fp));
  }

  int me_;
  int size_;
  Target& target_;
  scratch_stack scratch_;
  record_channel<Route, sink> records_;
};

}  // namespace detail

template <class Route, class State>
class async_channel;

/// What an async function may take as its first argument: where the call came from, this
/// rank's world, group and state, and further calls.
template <class Route = route::direct, class State = void>
class async_context {
 public:
  /// The rank that called async() (its origin, also after forwarding hops), among the
  /// channel's ranks (a group rank for a channel on a group).
  [[nodiscard]] int source() const noexcept { return source_; }
  /// This rank among the channel's ranks.
  [[nodiscard]] int rank() const noexcept { return at_.rank; }
  /// This rank's world.
  [[nodiscard]] cairn::world& world() const noexcept { return *at_.w; }
  /// The group of a channel made on a group (null for a channel on the world).
  [[nodiscard]] const cairn::group* group() const noexcept { return at_.g; }
  /// Number of the channel's ranks (the group's size on a group, else the world's).
  [[nodiscard]] int size() const noexcept { return at_.g ? at_.g->size() : at_.w->size(); }
  /// This rank's state object (given to make_async).
  template <class S = State>
  requires(!std::is_void_v<S>) [[nodiscard]] S& state() const noexcept { return *state_; }
  /// Calls `f` with `args` on rank `dest` through the same channel.
  template <class F, class... A>
  void async(int dest, F f, const A&... args) {
    ch_->async(dest, f, args...);
  }
  /// Internal: made by the channel.
  async_context(detail::handler_place at, async_channel<Route, State>* ch, void* state) noexcept
      : at_(at), ch_(ch), state_(static_cast<state_pointer>(state)) {}
  /// Internal: the origin of the call being made.
  void set_source(int s) noexcept { source_ = s; }

 private:
  using state_pointer = std::conditional_t<std::is_void_v<State>, void*, State*>;
  detail::handler_place at_;
  async_channel<Route, State>* ch_;
  state_pointer state_;
  int source_ = 0;
};

/// Aggregated remote calls of stateless functions on the ranks of a world or of a group (see
/// the file's comment), with an optional per-rank `State` object the functions reach through
/// their context (`ctx.state()`). Created collectively, in the same order as channels (on a
/// group: by its members only, see channel). Not copyable or movable.
template <class Route = route::direct, class State = void>
class async_channel {
 public:
  /// The context type functions may take as their first argument.
  using context = async_context<Route, State>;

  /// An async channel on the ranks of `on` (the world or a group). Collective: checks that
  /// every rank runs the same program.
  template <channel_ranks Ranks>
  explicit async_channel(const Ranks& on, Route route = {},
                         channel_options opts = {}) requires std::is_void_v<State>
      : w_(detail::world_of(on)),
        group_(detail::group_of(on)),
        size_(on.size()),
        ctx_(place(on), this, nullptr),
        calls_(on, ctx_, std::move(route), opts) {}
  /// An async channel whose functions reach `state` (which outlives the channel).
  template <channel_ranks Ranks, class S = State>
  requires(!std::is_void_v<S>)
      async_channel(const Ranks& on, S& state, Route route = {}, channel_options opts = {})
      : w_(detail::world_of(on)),
        group_(detail::group_of(on)),
        size_(on.size()),
        ctx_(place(on), this, &state),
        calls_(on, ctx_, std::move(route), opts) {}
  async_channel(const async_channel&) = delete;
  async_channel& operator=(const async_channel&) = delete;

  /// Calls `f(ctx, args...)` or `f(args...)` on rank `dest` (of the channel's ranks) with
  /// copies of `args`.
  template <class F, class... A>
  void async(int dest, F, const A&... args) {
    if (static_cast<unsigned>(dest) >= static_cast<unsigned>(size_)) [[unlikely]]
      cairn::detail::fail("async", w_.rank(), "target rank ", dest, " is outside the ",
                          group_ ? "group" : "world", " of ", size_, " ranks");
    calls_.template call<F>(dest, args...);
  }
  /// Calls `f` with copies of `args` on every rank, this one included (TRAM's broadcast of an
  /// item): each rank runs it exactly once.
  template <class F, class... A>
  void async_bcast(F, const A&... args) {
    calls_.template call_all<F>(args...);
  }
  /// Sends every partly filled buffer now.
  void flush() { calls_.records().flush(); }
  /// Depth-limited termination (see channel::wait).
  void wait(int depth) {
    if (depth < 0) cairn::detail::fail("async wait", w_.rank(), "depth ", depth, " is negative");
    calls_.records().core().wait_levels((depth + 1) * calls_.records().router().max_hops());
  }
  /// A termination phase of this channel (see channel_phase).
  [[nodiscard]] channel_phase done() { return channel_phase(calls_.records().core()); }
  /// Counters on this rank (one item per call).
  [[nodiscard]] const channel_stats& stats() const noexcept {
    return calls_.records().core().stats();
  }
  /// Number of the channel's ranks.
  [[nodiscard]] int size() const noexcept { return size_; }

 private:
  template <channel_ranks Ranks>
  detail::handler_place place(const Ranks& on) {
    return {&w_, group_ ? &*group_ : nullptr, on.rank()};
  }

  cairn::world w_;
  std::optional<cairn::group> group_;
  int size_;
  context ctx_;
  detail::call_channel<Route, context> calls_;
};

/// Makes an async channel on the world or a group:
/// `auto a = make_async(w_or_g [, route] [, options]);`
template <channel_ranks Ranks, class Route = route::direct>
requires route_spec<Route>
[[nodiscard]] async_channel<Route> make_async(const Ranks& on, Route route = {},
                                              channel_options opts = {}) {
  return async_channel<Route>(on, std::move(route), opts);
}
/// make_async with options and the direct route.
template <channel_ranks Ranks>
[[nodiscard]] async_channel<> make_async(const Ranks& on, channel_options opts) {
  return async_channel<>(on, route::direct{}, opts);
}
/// Makes an async channel whose functions reach `state` through `ctx.state()`:
/// `auto a = make_async(w_or_g, table [, route] [, options]);`
template <channel_ranks Ranks, class State, class Route = route::direct>
requires(!route_spec<State> && !std::is_same_v<State, channel_options> && route_spec<Route>)
    [[nodiscard]] async_channel<Route, State> make_async(const Ranks& on, State& state,
                                                         Route route = {},
                                                         channel_options opts = {}) {
  return async_channel<Route, State>(on, state, std::move(route), opts);
}

}  // namespace cairn::msg

namespace cairn {
using msg::async_channel;
using msg::async_context;
using msg::make_async;
}  // namespace cairn
