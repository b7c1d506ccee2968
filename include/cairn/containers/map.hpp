#pragma once
/// \file
/// `cairn::containers::map`: a key-value map distributed over the ranks by hash (YGM's map).
/// Operations on a key run at its owner; those one rank issues run in the order it issued them
/// (those of different ranks interleave in any order):
/// `async_insert` (if the key is missing), `async_insert_or_assign`, `async_erase`,
/// `async_visit(key, f, args...)` (f runs on the value, made if missing) and
/// `async_visit_if_contains`, `async_reduce(key, value, merge)`. `f` and `merge` are stateless
/// function objects (lambdas without captures): they travel as registered functions, like
/// async calls. While `f` runs (and while for_all's function runs), the calls it makes on keys
/// of this rank wait until it returns: the value it holds stays in place. Results are complete
/// after world::quiesce().
///
///     cairn::containers::map<std::uint64_t, std::uint64_t> degree(w);
///     for (auto [u, v] : my_edges) {
///       degree.async_reduce(u, 1, [](std::uint64_t a, std::uint64_t b) { return a + b; });
///       degree.async_reduce(v, 1, [](std::uint64_t a, std::uint64_t b) { return a + b; });
///     }
///     w.quiesce();

#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/containers/flat_map.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::containers {

/// A map from keys K to values V (each trivially copyable or serializable), each key kept by
/// the rank its hash picks. Created collectively (in the same order as channels everywhere).
template <class K, class V, class Hash = default_hash<K>, class Route = cairn::msg::route::direct>
class map {
 public:
  /// Key type.
  using key_type = K;
  /// Value type.
  using mapped_type = V;
  /// This rank's part (a flat table: an insert or erase moves other items).
  using local_map = flat_map<K, V, detail::local_hash<Hash, K>>;

  /// An empty map on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  explicit map(const Ranks& on, container_options opts = {}, Hash hash = {}, Route route = {})
      : ranks_(on),
        hash_(hash),
        local_(16, detail::local_hash<Hash, K>{hash}),
        reduce_(opts.cache_slots ? std::bit_ceil(opts.cache_slots) : 0, hash, opts.combine_hops,
                "map::async_reduce"),
        calls_(on, *this, std::move(route), detail::call_options(opts, "map")) {}
  /// Reductions still cached at the source are reported as never sent (call world::quiesce()
  /// before the map goes out of scope).
  ~map() { calls_.records().note_unsent(reduce_.size()); }
  map(const map&) = delete;
  map& operator=(const map&) = delete;

  /// Inserts (key, value) at the owner unless the key is there.
  void async_insert(const K& key, const V& value) {
    calls_.template call<insert_op>(release(key), key, value);
  }
  /// Sets the key's value at its owner (inserting it if missing).
  void async_insert_or_assign(const K& key, const V& value) {
    calls_.template call<assign_op>(release(key), key, value);
  }
  /// Removes the key at its owner (nothing if missing).
  void async_erase(const K& key) { calls_.template call<erase_op>(release(key), key); }
  /// Runs `f(key, value, args...)` at the owner on the key's value (a default V is inserted
  /// first if the key is missing). `f` is a stateless function object; it may take the map
  /// first (`f(map&, key, value, args...)`) to make further calls.
  template <class F, class... A>
  void async_visit(const K& key, F, const A&... args) {
    calls_.template call<visit_op<F, true, cairn::msg::detail::wire_type<A>...>>(release(key), key,
                                                                                 args...);
  }
  /// async_visit, only if the key is present at its owner.
  template <class F, class... A>
  void async_visit_if_contains(const K& key, F, const A&... args) {
    calls_.template call<visit_op<F, false, cairn::msg::detail::wire_type<A>...>>(release(key), key,
                                                                                  args...);
  }
  /// Merges `value` into the key's value at its owner: `merge(old, value)`, or inserts
  /// `value` if the key is missing. `merge` is a stateless function object `V(const V&,
  /// const V&)`, associative and commutative: values for one key are merged first in a
  /// direct-mapped cache at the source (container_options::cache_slots), which empties into
  /// the buffers whenever they are flushed, and then at the owner. Another operation of this
  /// rank on the key sends the cached value first, so the rank's order on the key holds.
  template <class Merge>
  void async_reduce(const K& key, const V& value, Merge) {
    static_assert(std::is_invocable_r_v<V, Merge&, const V&, const V&>,
                  "merge must be callable as V merge(const V&, const V&)");
    reduce_.template reduce<Merge>(*this, hash_(key), key, value);
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
  /// merge this rank's cache holds joins the cache, so that reductions of one key from
  /// several ranks travel on as one; true if taken. Any other call travels on, after the value
  /// cached for its key (so the order of its origin's operations on the key holds).
  bool on_transit(std::uint32_t index, std::span<const std::byte> args) {
    return reduce_.on_transit(*this, index, args);
  }

  /// The owner rank of `key`.
  [[nodiscard]] int owner(const K& key) const {
    return detail::owner_of(hash_, key, ranks_.size());
  }
  /// This rank's part (complete after world::quiesce()).
  [[nodiscard]] const local_map& local() const noexcept { return local_; }
  /// This rank's part, to change locally.
  [[nodiscard]] local_map& local() {
    settle();
    return local_;
  }
  /// Calls `f(key, value)` for every key of this rank (calls it makes on keys of this rank
  /// run after the last; messages from other ranks wait too).
  template <class F>
  void for_all(F&& f) {
    settle();
    detail::with_calls_held(calls_.records(), [&] {
      for (auto& [k, v] : local_) f(k, v);
    });
  }
  /// Collective (every rank passes the same key): the key's value, on every rank.
  [[nodiscard]] std::optional<V> value_of(const K& key) {
    settle();
    std::optional<V> mine;
    const int o = owner(key);
    if (o == ranks_.rank())
      if (auto it = local_.find(key); it != local_.end()) mine = it->second;
    return ranks_.bcast(std::as_const(mine), o);
  }
  /// Collective: the value of each of this rank's `keys` (ranks pass any number, zero
  /// included), in order, empty for a key not in the map: one exchange each way for the batch.
  [[nodiscard]] std::vector<std::optional<V>> values_of(std::span<const K> keys) {
    settle();
    return detail::ask_owners<std::optional<V>>(ranks_, hash_, keys, [this](const K& k) {
      auto it = local_.find(k);
      return it != local_.end() ? std::optional<V>(it->second) : std::nullopt;
    });
  }
  /// Collective: the number of keys over all ranks.
  [[nodiscard]] std::uint64_t size() {
    settle();
    return ranks_.allreduce(static_cast<std::uint64_t>(local_.size()), cairn::plus{});
  }
  /// Collective: every (key, value) on rank `root`, sorted by key (empty on other ranks).
  [[nodiscard]] std::map<K, V> gather(int root) {
    settle();
    std::vector<std::pair<K, V>> mine(local_.begin(), local_.end());
    std::map<K, V> out;
    for (auto& part : ranks_.gather(mine, root))
      for (auto& [k, v] : part) out.emplace(std::move(k), std::move(v));
    return out;
  }
  /// Collective: ends the phase (quiesce on its ranks) and empties the map.
  void clear() {
    ranks_.quiesce_and_empty([this] {
      settle();
      local_.clear();
    });
  }
  /// Counters of the map's calls on this rank.
  [[nodiscard]] const cairn::msg::channel_stats& stats() const noexcept {
    return calls_.records().core().stats();
  }

 private:
  struct insert_op {
    void operator()(map& self, K&& key, V&& value) const {
      self.settle();
      self.local_.try_emplace(std::move(key), std::move(value));
    }
  };
  struct assign_op {
    void operator()(map& self, K&& key, V&& value) const {
      self.settle();
      self.local_.insert_or_assign(std::move(key), std::move(value));
    }
  };
  struct erase_op {
    void operator()(map& self, K&& key) const {
      self.settle();
      self.local_.erase(key);
    }
  };
  template <class F, bool Make, class... A>
  struct visit_op {
    void operator()(map& self, K&& key, A&&... args) const {
      self.settle();
      auto it = self.local_.find(key);
      if (it == self.local_.end()) {
        if constexpr (!Make) return;
        it = self.local_.try_emplace(std::move(key)).first;
      }
      detail::with_calls_held(self.calls_.records(), [&] {
        F f{};
        if constexpr (std::is_invocable_v<F&, map&, const K&, V&, A&...>)
          f(self, it->first, it->second, args...);
        else
          f(it->first, it->second, args...);
      });
    }
  };
  friend class detail::reduce_combiner<map, K, V, Hash>;
  template <class Merge>
  static void send_reduce(map& self, const K& key, const V& value, std::uint64_t h) {
    self.calls_.template call<reduce_op<Merge>>(detail::owner_of_hash(h, self.ranks_.size()), key,
                                                value);
  }
  // The owner of `key`, once a value cached for it has been sent (so this rank's operations
  // on the key keep their order).
  int release(const K& key) {
    const std::uint64_t h = hash_(key);
    reduce_.release(*this, h, key);
    return detail::owner_of_hash(h, ranks_.size());
  }

  // Runs at the owner: gathers the reduction (owner_batch), applied with others at once.
  template <class Merge>
  struct reduce_op {
    void operator()(map& self, K&& key, V&& value) const {
      self.batch_.add(&self, &apply_reductions<Merge>, std::move(key), std::move(value));
    }
  };
  template <class Merge>
  static void apply_reductions(void* self, typename detail::owner_batch<K, V>::items& items) {
    local_map& local = static_cast<map*>(self)->local_;
    detail::apply_prefetched(local, items, [&](std::uint64_t h, auto& item) {
      auto [it, fresh] = local.try_emplace_hashed(h, std::move(item.first), item.second);
      if (!fresh) it->second = Merge{}(std::as_const(it->second), std::as_const(item.second));
    });
  }
  template <class Merge>
  static std::uint32_t reduce_index() {
    return cairn::msg::detail::call_entry<map, reduce_op<Merge>, cairn::msg::detail::wire_type<K>,
                                          cairn::msg::detail::wire_type<V>>::index();
  }
  // Applies the reductions gathered here (not while a user's function holds a value).
  void settle() {
    if (!calls_.records().holds_local()) batch_.settle(this);
  }

  detail::container_ranks ranks_;
  Hash hash_;
  local_map local_;
  detail::reduce_combiner<map, K, V, Hash> reduce_;  // reductions waiting here
  detail::owner_batch<K, V> batch_;                  // reductions arrived here, not yet applied
  detail::container_calls<map, Route> calls_;  // last: deliveries may start in its constructor
};

}  // namespace cairn::containers
