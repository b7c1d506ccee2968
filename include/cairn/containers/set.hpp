#pragma once
/// \file
/// `cairn::containers::set`: keys distributed over the ranks by hash (YGM's set):
/// `async_insert`, `async_erase`, collective `contains`, `size`, `gather`. Complete after
/// world::quiesce(). A rank's operations on a key run in the order it issued them; those of
/// different ranks interleave in any order within a phase, even where one caused the other
/// through a handler. So an insert that repeats one this rank sent, or saw pass, in the phase
/// (with no erase of the key from this rank since) is dropped: at its source, and on a
/// forwarding route at every hop (container_options::cache_slots keys are remembered per rank,
/// 0 turns it off; channel_stats::combined_source and combined_hops count the dropped ones).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/containers/flat_map.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::containers {

/// A set of keys K (trivially copyable or serializable), each kept by the rank its hash picks.
/// Created collectively (in the same order as channels on every rank).
template <class K, class Hash = default_hash<K>, class Route = cairn::msg::route::direct>
class set {
 public:
  /// Key type.
  using key_type = K;
  /// This rank's part.
  using local_set = flat_set<K, detail::local_hash<Hash, K>>;

  /// An empty set on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  explicit set(const Ranks& on, container_options opts = {}, Hash hash = {}, Route route = {})
      : ranks_(on),
        hash_(hash),
        local_(16, detail::local_hash<Hash, K>{hash}),
        seen_(opts.cache_slots ? std::bit_ceil(opts.cache_slots) : 0),
        combine_hops_(opts.combine_hops),
        calls_(on, *this, std::move(route), detail::call_options(opts, "set")) {}
  set(const set&) = delete;
  set& operator=(const set&) = delete;

  /// Inserts `key` at its owner (dropped here if this rank inserted it, or saw it pass, since
  /// the phase began and did not erase it since).
  void async_insert(const K& key) {
    const std::uint64_t h = hash_(key);
    if (seen_.enabled() && seen_.seen(h, key)) {
      ++calls_.records().core().stats().combined_source;
      return;
    }
    calls_.template call<insert_op>(detail::owner_of_hash(h, ranks_.size()), key);
  }
  /// Removes `key` at its owner (nothing if missing).
  void async_erase(const K& key) {
    const std::uint64_t h = hash_(key);
    calls_.template call<erase_op>(detail::owner_of_hash(h, ranks_.size()), key);
    if (seen_.enabled()) seen_.forget(h, key);  // once sent: see seen_filter
  }

  /// Internal (a call passing through this rank on a forwarding route): an insert of a key
  /// inserted here in this phase is dropped (true); an erase forgets the key.
  bool on_transit(std::uint32_t index, std::span<const std::byte> args) {
    if (!combine_hops_ || !seen_.enabled()) return false;
    K key{};
    if (!cairn::msg::detail::unpack_first(args, key)) return false;
    const std::uint64_t h = hash_(key);
    if (index == insert_entry::index()) return seen_.seen(h, key);
    seen_.forget(h, key);
    return false;
  }
  /// Internal (a phase of the calls ended): forgets the keys inserted in it.
  void end_phase() { seen_.clear(); }

  /// The owner rank of `key`.
  [[nodiscard]] int owner(const K& key) const {
    return detail::owner_of(hash_, key, ranks_.size());
  }
  /// This rank's keys (complete after world::quiesce()).
  [[nodiscard]] const local_set& local() const noexcept { return local_; }
  /// Calls `f(key)` for every key of this rank (calls it makes on keys of this rank run after
  /// the last; messages from other ranks wait too).
  template <class F>
  void for_all(F&& f) {
    settle();
    detail::with_calls_held(calls_.records(), [&] {
      for (const auto& k : local_) f(k);
    });
  }
  /// Collective (every rank passes the same key): true on every rank if `key` is in the set.
  [[nodiscard]] bool contains(const K& key) {
    settle();
    const int mine = owner(key) == ranks_.rank() && local_.count(key) ? 1 : 0;
    return ranks_.allreduce(mine, cairn::plus{}) != 0;
  }
  /// Collective: whether each of this rank's `keys` (ranks pass any number, zero included) is
  /// in the set, in order: one exchange each way for the batch.
  [[nodiscard]] std::vector<bool> contains_each(std::span<const K> keys) {
    settle();
    const auto found = detail::ask_owners<std::uint8_t>(
        ranks_, hash_, keys, [this](const K& k) { return std::uint8_t{local_.contains(k)}; });
    return std::vector<bool>(found.begin(), found.end());
  }
  /// Collective: the number of keys over all ranks.
  [[nodiscard]] std::uint64_t size() {
    settle();
    return ranks_.allreduce(static_cast<std::uint64_t>(local_.size()), cairn::plus{});
  }
  /// Collective: every key on rank `root`, sorted (empty on other ranks).
  [[nodiscard]] std::set<K> gather(int root) {
    settle();
    std::vector<K> mine(local_.begin(), local_.end());
    std::set<K> out;
    for (auto& part : ranks_.gather(mine, root))
      for (auto& k : part) out.insert(std::move(k));
    return out;
  }
  /// Counters of the set's calls on this rank.
  [[nodiscard]] const cairn::msg::channel_stats& stats() const noexcept {
    return calls_.records().core().stats();
  }
  /// Collective: ends the phase (quiesce on its ranks) and empties the set.
  void clear() {
    ranks_.quiesce_and_empty([this] {
      settle();
      local_.clear();
    });
  }

  /// Internal (called when the calls' buffers are flushed): applies the operations gathered
  /// here.
  void before_flush() { settle(); }
  /// Internal (called after each arrived message of the calls): applies the operations
  /// gathered here.
  void after_deliver() { settle(); }

 private:
  // Run at the owner: gather the operation (owner_batch), applied with others at once and in
  // order (an insert and an erase of one key keep theirs).
  struct insert_op {
    void operator()(set& self, K&& key) const {
      self.batch_.add(&self, &apply_ops, std::move(key), std::uint8_t{1});
    }
  };
  struct erase_op {
    void operator()(set& self, K&& key) const {
      self.batch_.add(&self, &apply_ops, std::move(key), std::uint8_t{0});
    }
  };
  static void apply_ops(void* self, typename detail::owner_batch<K, std::uint8_t>::items& items) {
    local_set& local = static_cast<set*>(self)->local_;
    detail::apply_prefetched(local, items, [&](std::uint64_t h, auto& item) {
      if (item.second)
        local.try_emplace_hashed(h, std::move(item.first));
      else
        local.erase(item.first);
    });
  }
  void settle() { batch_.settle(this); }
  using insert_entry =
      cairn::msg::detail::call_entry<set, insert_op, cairn::msg::detail::wire_type<K>>;

  detail::container_ranks ranks_;
  Hash hash_;
  local_set local_;
  detail::seen_filter<K> seen_;  // keys inserted in this phase (here and passing)
  bool combine_hops_;
  detail::owner_batch<K, std::uint8_t> batch_;  // operations arrived here, not yet applied
  detail::container_calls<set, Route> calls_;   // last: deliveries may start in its constructor
};

}  // namespace cairn::containers
