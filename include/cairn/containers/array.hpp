#pragma once
/// \file
/// `cairn::containers::array`: a fixed-size array of n values, block-distributed over the
/// ranks (YGM's array): `async_set(i, v)`, `async_visit(i, f, args...)`, `async_reduce(i, v,
/// merge)` run at the owner of index i; complete after world::quiesce(). Those one rank issues
/// on an index run in the order it issued them. Reductions of one index are merged at the
/// source and, on a forwarding route, on every hop, as a map's are. An index outside [0, n) is
/// refused with cairn::error on the calling rank before anything is sent.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/msg/distribution.hpp"
#include "cairn/msg/prefetch.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::containers {

/// An array of `n` values of type T (trivially copyable or serializable), in blocks of
/// consecutive indices (cairn::block_distribution). Created collectively (in the same order
/// as channels on every rank).
template <class T, class Route = cairn::msg::route::direct>
class array {
 public:
  /// Value type.
  using value_type = T;

  /// `n` values equal to `init`, on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  array(const Ranks& on, std::uint64_t n, const T& init = T{}, container_options opts = {},
        Route route = {})
      : ranks_(on),
        dist_(n, on.size()),
        first_(first_index(dist_, on.rank())),
        local_(static_cast<std::size_t>(dist_.local_size(on.rank())), init),
        reduce_(opts.cache_slots ? std::bit_ceil(opts.cache_slots) : 0, {}, opts.combine_hops,
                "array::async_reduce"),
        calls_(on, *this, std::move(route), detail::call_options(opts, "array")) {}
  /// Reductions still cached at the source are reported as never sent (call world::quiesce()
  /// before the array goes out of scope).
  ~array() { calls_.records().note_unsent(reduce_.size()); }
  array(const array&) = delete;
  array& operator=(const array&) = delete;

  /// Sets value `i` to `v` at its owner.
  void async_set(std::uint64_t i, const T& v) {
    calls_.template call<set_op>(release(checked(i, "array::async_set")), i, v);
  }
  /// Runs `f(i, value, args...)` at the owner on value `i`. `f` is a stateless function
  /// object; it may take the array first (`f(array&, i, value, args...)`) to make further calls.
  template <class F, class... A>
  void async_visit(std::uint64_t i, F, const A&... args) {
    calls_.template call<visit_op<F, cairn::msg::detail::wire_type<A>...>>(
        release(checked(i, "array::async_visit")), i, args...);
  }
  /// Merges `v` into value `i` at its owner: `value = merge(value, v)`. `merge` is a
  /// stateless function object `T(const T&, const T&)`, associative and commutative: values
  /// for one index are merged first in a direct-mapped cache at the source
  /// (container_options::cache_slots), which empties into the buffers whenever they are
  /// flushed.
  template <class Merge>
  void async_reduce(std::uint64_t i, const T& v, Merge) {
    static_assert(std::is_invocable_r_v<T, Merge&, const T&, const T&>,
                  "merge must be callable as T merge(const T&, const T&)");
    checked(i, "array::async_reduce");
    reduce_.template reduce<Merge>(*this, index_hash{}(i), i, v);
  }

  /// Internal (called when the calls' buffers are flushed): empties the cache into them and
  /// applies the reductions gathered here.
  void before_flush() {
    reduce_.drain(*this);
    settle();
  }
  /// Internal (called after each arrived message of the calls): applies the reductions
  /// gathered here.
  void after_deliver() { settle(); }
  /// Internal (a call passing through this rank on a forwarding route): a reduction by the
  /// merge this rank's cache holds joins the cache; true if taken (see map::on_transit).
  bool on_transit(std::uint32_t index, std::span<const std::byte> args) {
    return reduce_.on_transit(*this, index, args);
  }

  /// Number of values.
  [[nodiscard]] std::uint64_t size() const noexcept { return dist_.size(); }
  /// The owner rank of index `i` (in [0, size())).
  [[nodiscard]] int owner(std::uint64_t i) const { return static_cast<int>(dist_.owner(i)); }
  /// The global index of this rank's first value.
  [[nodiscard]] std::uint64_t local_first() const noexcept { return first_; }
  /// This rank's values (indices local_first() onwards; complete after world::quiesce()).
  [[nodiscard]] std::vector<T>& local() {
    settle();
    return local_;
  }
  /// This rank's values.
  [[nodiscard]] const std::vector<T>& local() const noexcept { return local_; }
  /// Calls `f(i, value)` for every value of this rank (calls it makes on indices of this rank
  /// run after the last; messages from other ranks wait too).
  template <class F>
  void for_all(F&& f) {
    settle();
    detail::with_calls_held(calls_.records(), [&] {
      for (std::size_t j = 0; j < local_.size(); ++j) f(first_ + j, local_[j]);
    });
  }
  /// Counters of the array's calls on this rank.
  [[nodiscard]] const cairn::msg::channel_stats& stats() const noexcept {
    return calls_.records().core().stats();
  }
  /// Collective: every value, in order, on rank `root` (empty on other ranks).
  [[nodiscard]] std::vector<T> gather(int root) {
    settle();
    std::vector<T> out;
    for (auto& part : ranks_.gather(local_, root)) out.insert(out.end(), part.begin(), part.end());
    return out;
  }

 private:
  using index_hash = default_hash<std::uint64_t>;  // picks a cache slot (not the owner)
  friend class detail::reduce_combiner<array, std::uint64_t, T, index_hash>;

  static std::uint64_t first_index(const cairn::block_distribution& d, int rank) {
    std::uint64_t first = 0;
    for (int r = 0; r < rank; ++r) first += d.local_size(r);
    return first;
  }
  std::uint64_t checked(std::uint64_t i, const char* call) const {
    if (i >= dist_.size())
      cairn::detail::fail(call, ranks_.world_rank(), "index ", i, " is outside the array of ",
                          dist_.size(), " values");
    return i;
  }
  // The owner of index i, once a reduction cached for it has been sent (so this rank's
  // operations on the index keep their order).
  int release(std::uint64_t i) {
    reduce_.release(*this, i);
    return owner(i);
  }
  T& at(std::uint64_t i) { return local_[static_cast<std::size_t>(dist_.local_index(i))]; }

  struct set_op {
    void operator()(array& self, std::uint64_t i, T&& v) const {
      self.settle();
      self.at(i) = std::move(v);
    }
  };
  template <class F, class... A>
  struct visit_op {
    void operator()(array& self, std::uint64_t i, A&&... args) const {
      self.settle();
      F f{};
      if constexpr (std::is_invocable_v<F&, array&, std::uint64_t, T&, A&...>)
        f(self, i, self.at(i), args...);
      else
        f(i, self.at(i), args...);
    }
  };
  // Runs at the owner: gathers the reduction (owner_batch), applied with others at once.
  template <class Merge>
  struct reduce_op {
    void operator()(array& self, std::uint64_t&& i, T&& v) const {
      self.batch_.add(&self, &apply_reductions<Merge>, std::move(i), std::move(v));
    }
  };
  // The values' places are prefetched ahead: a batch keeps several misses in flight.
  template <class Merge>
  static void apply_reductions(void* part,
                               typename detail::owner_batch<std::uint64_t, T>::items& items) {
    auto& self = *static_cast<array*>(part);
    cairn::for_each_prefetched(
        std::span<const std::pair<std::uint64_t, T>>(items),
        [&](const std::pair<std::uint64_t, T>& x) { return &self.at(x.first); },
        [&](const std::pair<std::uint64_t, T>& x) {
          T& y = self.at(x.first);
          y = Merge{}(y, x.second);
        });
  }
  void settle() { batch_.settle(this); }
  template <class Merge>
  static void send_reduce(array& self, const std::uint64_t& i, const T& v, std::uint64_t) {
    self.calls_.template call<reduce_op<Merge>>(self.owner(i), i, v);
  }
  template <class Merge>
  static std::uint32_t reduce_index() {
    return cairn::msg::detail::call_entry<array, reduce_op<Merge>, std::uint64_t,
                                          cairn::msg::detail::wire_type<T>>::index();
  }

  detail::container_ranks ranks_;
  cairn::block_distribution dist_;
  std::uint64_t first_;
  std::vector<T> local_;
  detail::reduce_combiner<array, std::uint64_t, T, index_hash> reduce_;  // reductions waiting here
  detail::owner_batch<std::uint64_t, T> batch_;  // reductions arrived here, not yet applied
  detail::container_calls<array, Route> calls_;  // last: deliveries may start in its constructor
};

}  // namespace cairn::containers
