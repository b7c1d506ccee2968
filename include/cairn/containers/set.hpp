#pragma once
/// \file
/// `cairn::containers::set`: keys distributed over the ranks by hash (YGM's set):
/// `async_insert`, `async_erase`, collective `contains`, `size`, `gather`. Complete after
/// world::quiesce().

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
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
  using local_set = std::unordered_set<K, detail::local_hash<Hash, K>>;

  /// An empty set on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  explicit set(const Ranks& on, container_options opts = {}, Hash hash = {}, Route route = {})
      : ranks_(on),
        hash_(hash),
        local_(16, detail::local_hash<Hash, K>{hash}),
        calls_(on, *this, std::move(route), detail::call_options(opts, "set")) {}
  set(const set&) = delete;
  set& operator=(const set&) = delete;

  /// Inserts `key` at its owner.
  void async_insert(const K& key) { calls_.template call<insert_op>(owner(key), key); }
  /// Removes `key` at its owner (nothing if missing).
  void async_erase(const K& key) { calls_.template call<erase_op>(owner(key), key); }

  /// The owner rank of `key`.
  [[nodiscard]] int owner(const K& key) const {
    return detail::owner_of(hash_, key, ranks_.size());
  }
  /// This rank's keys (complete after world::quiesce()).
  [[nodiscard]] const local_set& local() const noexcept { return local_; }
  /// Calls `f(key)` for every key of this rank.
  template <class F>
  void for_all(F&& f) const {
    for (const auto& k : local_) f(k);
  }
  /// Collective (every rank passes the same key): true on every rank if `key` is in the set.
  [[nodiscard]] bool contains(const K& key) {
    const int mine = owner(key) == ranks_.rank() && local_.count(key) ? 1 : 0;
    return ranks_.allreduce(mine, cairn::plus{}) != 0;
  }
  /// Collective: whether each of this rank's `keys` (ranks pass any number, zero included) is
  /// in the set, in order: one exchange each way for the batch.
  [[nodiscard]] std::vector<bool> contains_each(std::span<const K> keys) {
    const auto found = detail::ask_owners<std::uint8_t>(
        ranks_, hash_, keys, [this](const K& k) { return std::uint8_t{local_.contains(k)}; });
    return std::vector<bool>(found.begin(), found.end());
  }
  /// Collective: the number of keys over all ranks.
  [[nodiscard]] std::uint64_t size() {
    return ranks_.allreduce(static_cast<std::uint64_t>(local_.size()), cairn::plus{});
  }
  /// Collective: every key on rank `root`, sorted (empty on other ranks).
  [[nodiscard]] std::set<K> gather(int root) {
    std::vector<K> mine(local_.begin(), local_.end());
    std::set<K> out;
    for (auto& part : ranks_.gather(mine, root))
      for (auto& k : part) out.insert(std::move(k));
    return out;
  }
  /// Collective: ends the phase (quiesce on its ranks) and empties the set.
  void clear() {
    ranks_.quiesce_and_empty([this] { local_.clear(); });
  }

 private:
  struct insert_op {
    void operator()(set& self, K&& key) const { self.local_.insert(std::move(key)); }
  };
  struct erase_op {
    void operator()(set& self, K&& key) const { self.local_.erase(key); }
  };

  detail::container_ranks ranks_;
  Hash hash_;
  local_set local_;
  detail::container_calls<set, Route> calls_;  // last: deliveries may start in its constructor
};

}  // namespace cairn::containers
