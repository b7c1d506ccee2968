#pragma once
/// \file
/// `cairn::containers::counting_set`: counts of keys distributed over the ranks by hash (YGM's
/// counting_set). `async_insert(key)` adds one to the key's count at its owner; repeated keys
/// are counted first in a direct-mapped cache at the source and travel once per flush (the
/// cache empties whenever the calls' buffers are flushed: by world::quiesce, a flush interval,
/// or flush()). Collective queries: count(key), counts_of(keys) (a batch per rank), size(),
/// topk(k).
///
///     cairn::containers::counting_set<std::string> words(w);
///     for (const auto& s : my_words) words.async_insert(s);
///     w.quiesce();
///     for (auto& [word, n] : words.topk(10)) ...

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/containers/flat_map.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::containers {

/// Counts of keys of type K (trivially copyable or serializable), each kept by the rank its
/// hash picks. Created collectively (in the same order as channels on every rank).
template <class K, class Hash = default_hash<K>, class Route = cairn::msg::route::direct>
class counting_set {
 public:
  /// Key type.
  using key_type = K;
  /// This rank's part: key -> count.
  using local_map = flat_map<K, std::uint64_t, detail::local_hash<Hash, K>>;

  /// An empty counting set on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  explicit counting_set(const Ranks& on, container_options opts = {}, Hash hash = {},
                        Route route = {})
      : ranks_(on),
        hash_(hash),
        local_(16, detail::local_hash<Hash, K>{hash}),
        counts_(opts.cache_slots ? std::bit_ceil(opts.cache_slots) : 0, hash, opts.combine_hops,
                "counting_set::async_insert"),
        calls_(on, *this, std::move(route), detail::call_options(opts, "counting_set")) {}
  /// Counts still cached at the source are reported as never sent (call world::quiesce()
  /// before the set goes out of scope).
  ~counting_set() { calls_.records().note_unsent(counts_.size()); }
  counting_set(const counting_set&) = delete;
  counting_set& operator=(const counting_set&) = delete;

  /// Adds `n` to the count of `key` at its owner.
  void async_insert(const K& key, std::uint64_t n = 1) {
    counts_.template reduce<count_plus>(*this, hash_(key), key, n);
  }

  /// The owner rank of `key`.
  [[nodiscard]] int owner(const K& key) const {
    return detail::owner_of(hash_, key, ranks_.size());
  }
  /// This rank's keys and counts (complete after world::quiesce()).
  [[nodiscard]] const local_map& local() const noexcept { return local_; }
  /// Calls `f(key, count)` for every key of this rank (counts it adds on this rank arrive
  /// after the last; messages from other ranks wait too).
  template <class F>
  void for_all(F&& f) {
    settle();
    detail::with_calls_held(calls_.records(), [&] {
      for (const auto& [k, n] : local_) f(k, n);
    });
  }

  /// Collective (every rank passes the same key): the count of `key`, on every rank.
  [[nodiscard]] std::uint64_t count(const K& key) {
    settle();
    std::uint64_t mine = 0;
    if (owner(key) == ranks_.rank())
      if (auto it = local_.find(key); it != local_.end()) mine = it->second;
    return ranks_.allreduce(mine, cairn::plus{});
  }
  /// Collective: the count of each of this rank's `keys` (ranks pass any number, zero
  /// included), in order: one exchange each way for the whole batch.
  [[nodiscard]] std::vector<std::uint64_t> counts_of(std::span<const K> keys) {
    settle();
    return detail::ask_owners<std::uint64_t>(ranks_, hash_, keys, [this](const K& k) {
      auto it = local_.find(k);
      return it != local_.end() ? it->second : std::uint64_t{0};
    });
  }
  /// Collective: the number of distinct keys over all ranks.
  [[nodiscard]] std::uint64_t size() {
    settle();
    return ranks_.allreduce(static_cast<std::uint64_t>(local_.size()), cairn::plus{});
  }
  /// Collective: the `k` keys with the largest counts (ties: smaller key first), largest
  /// first, the same on every rank.
  [[nodiscard]] std::vector<std::pair<K, std::uint64_t>> topk(std::size_t k) {
    auto better = [](const std::pair<K, std::uint64_t>& a, const std::pair<K, std::uint64_t>& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    };
    settle();
    std::vector<std::pair<K, std::uint64_t>> mine(local_.begin(), local_.end());
    const std::size_t keep = std::min(k, mine.size());
    std::partial_sort(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(keep), mine.end(),
                      better);
    mine.resize(keep);
    std::vector<std::pair<K, std::uint64_t>> all;
    for (auto& part : ranks_.allgather(mine))
      for (auto& e : part) all.push_back(std::move(e));
    const std::size_t top = std::min(k, all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(top), all.end(),
                      better);
    all.resize(top);
    return all;
  }
  /// Collective: ends the phase (quiesce on its ranks) and empties the set.
  void clear() {
    ranks_.quiesce_and_empty([this] {
      settle();
      local_.clear();
    });
  }
  /// Sends the counts cached at the source now.
  void flush() { calls_.records().flush(); }
  /// Counters of the set's calls on this rank.
  [[nodiscard]] const cairn::msg::channel_stats& stats() const noexcept {
    return calls_.records().core().stats();
  }

  /// Internal (called when the calls' buffers are flushed): empties the cache into them and
  /// applies the counts gathered here.
  void before_flush() {
    counts_.drain(*this);
    settle();
  }
  /// Internal (called after each arrived message of the calls): applies the counts gathered
  /// here.
  void after_deliver() { settle(); }
  /// Internal (a call passing through this rank on a forwarding route): a count joins the
  /// cache, so that counts of one key from several ranks travel on as one. True if taken.
  bool on_transit(std::uint32_t index, std::span<const std::byte> args) {
    return counts_.on_transit(*this, index, args);
  }

 private:
  // The merge of counts (the combiner's merge; the owner adds as well).
  struct count_plus {
    std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const noexcept { return a + b; }
  };
  friend class detail::reduce_combiner<counting_set, K, std::uint64_t, Hash>;
  template <class Merge>
  static void send_reduce(counting_set& self, const K& key, const std::uint64_t& n,
                          std::uint64_t h) {
    self.calls_.template call<add>(detail::owner_of_hash(h, self.ranks_.size()), key, n);
  }
  template <class Merge>
  static std::uint32_t reduce_index() {
    return cairn::msg::detail::call_entry<counting_set, add, cairn::msg::detail::wire_type<K>,
                                          std::uint64_t>::index();
  }
  // Runs at the owner: gathers the count (owner_batch), added with others at once.
  struct add {
    void operator()(counting_set& self, K&& key, std::uint64_t&& n) const {
      self.batch_.add(&self, &apply_counts, std::move(key), std::move(n));
    }
  };
  static void apply_counts(void* self,
                           typename detail::owner_batch<K, std::uint64_t>::items& items) {
    local_map& local = static_cast<counting_set*>(self)->local_;
    detail::apply_prefetched(local, items, [&](std::uint64_t h, auto& item) {
      local.try_emplace_hashed(h, std::move(item.first), 0).first->second += item.second;
    });
  }
  void settle() { batch_.settle(this); }

  detail::container_ranks ranks_;
  Hash hash_;
  local_map local_;
  detail::reduce_combiner<counting_set, K, std::uint64_t, Hash> counts_;  // counts waiting here
  detail::owner_batch<K, std::uint64_t> batch_;  // counts arrived here, not yet added
  // Last: deliveries may start in its constructor.
  detail::container_calls<counting_set, Route> calls_;
};

}  // namespace cairn::containers
