#pragma once
/// \file
/// `cairn::containers::disjoint_set`: union-find over keys distributed by hash (YGM's
/// disjoint_set), for connected components at scale. `async_union(a, b)` walks from a to its
/// root and from b to its root, each step at the owner of the item it stands on, and links
/// the root with the larger key under the other (parents only ever point to smaller keys, so
/// concurrent unions never make a cycle; a root that was linked meanwhile restarts the walk).
/// `compress()` (collective) then points every item straight at its root by pointer jumping
/// (each round halves the depth of every path); after it, `local()` maps each item of this
/// rank to its set's root, the smallest key of the set. A round asks each parent on another
/// rank for its own parent once, however many of this rank's items point to it, and a parent
/// known to be a root is not asked again (channel_stats::combined_source counts the asks
/// saved), so a giant component costs a message per rank and round, not one per item.
///
/// A union is idempotent: one this rank already sent (of the same two keys, either way round)
/// is dropped at the source, for trivially copyable keys, by a direct-mapped filter of
/// container_options::cache_slots pairs (channel_stats::combined_source counts them). A union
/// of a key with itself only inserts it.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::containers {

/// Disjoint sets of keys K (trivially copyable or serializable, ordered by `<`). Created
/// collectively (in the same order as channels on every rank).
template <class K, class Hash = default_hash<K>, class Route = cairn::msg::route::direct>
class disjoint_set {
 public:
  /// Key type.
  using key_type = K;
  /// This rank's items and their parents (their roots after compress()).
  using local_map = std::unordered_map<K, K, detail::local_hash<Hash, K>>;

  /// No items yet, on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  explicit disjoint_set(const Ranks& on, container_options opts = {}, Hash hash = {},
                        Route route = {})
      : ranks_(on),
        hash_(hash),
        parent_(16, detail::local_hash<Hash, K>{hash}),
        above_(16, detail::local_hash<Hash, K>{hash}),
        sent_(filtered && opts.cache_slots ? std::bit_ceil(opts.cache_slots) : 0),
        calls_(on, *this, std::move(route), detail::call_options(opts, "disjoint_set")) {}
  disjoint_set(const disjoint_set&) = delete;
  disjoint_set& operator=(const disjoint_set&) = delete;

  /// Joins the sets of `a` and `b` (each made a set of its own first if new).
  void async_union(const K& a, const K& b) {
    if (a == b) {
      async_insert(a);
      return;
    }
    const std::uint64_t ha = hash_(a);
    if (sent_.enabled()) {
      const std::uint64_t hb = hash_(b);
      const bool ordered = a < b;
      // Either way round: the low bits (the filter's slot) mix both keys' hashes.
      const std::uint64_t h = (ordered ? ha : hb) ^ ((ordered ? hb : ha) * 0x9E3779B97F4A7C15ULL);
      if (sent_.seen(h, ordered ? std::pair<K, K>(a, b) : std::pair<K, K>(b, a))) {
        ++calls_.records().core().stats().combined_source;
        return;
      }
    }
    calls_.template call<walk_a>(detail::owner_of_hash(ha, ranks_.size()), a, b);
  }
  /// Makes `a` a set of its own if it is new.
  void async_insert(const K& a) { calls_.template call<insert_op>(owner(a), a); }

  /// Collective: ends the phase (quiesce on its ranks), then points every
  /// item at its root. Returns the pointer-jumping rounds it took.
  int compress() {
    const int me = ranks_.rank();
    auto& stats = calls_.records().core().stats();
    above_.clear();  // unions since an earlier compress may have linked its roots
    int rounds = 0;
    for (;;) {
      ranks_.quiesce();
      // Parents that were not roots: every item pointing to one moved past it last round.
      std::erase_if(above_, [](const auto& e) { return !(e.second == e.first); });
      // Ask each parent on another rank once (it is entered as its own parent until the answer
      // comes); one entered before as its own parent is a root, and stays one (no union runs
      // during compress).
      parent_owner_.clear();
      for (const auto& [x, p] : parent_) {
        if (p == x) continue;
        const int o = owner(p);
        parent_owner_.push_back(o);
        if (o != me && above_.try_emplace(p, p).second)
          calls_.template call<ask_op>(o, p, me);
        else
          ++stats.combined_source;
      }
      ranks_.quiesce();
      // Every answer is in: move each item to its parent's parent (parent_ unchanged since the
      // ask loop, so its items come in the same order as their parents' owners).
      std::uint64_t changed = 0;
      auto o = parent_owner_.begin();
      for (auto& [x, p] : parent_) {
        if (p == x) continue;
        const local_map& known = *o++ == me ? parent_ : above_;
        const auto it = known.find(p);
        if (it != known.end() && !(it->second == p)) {
          p = it->second;
          ++changed;
        }
      }
      ++rounds;
      if (ranks_.allreduce(changed, cairn::plus{}) == 0) break;
    }
    above_.clear();
    return rounds;
  }
  /// The owner rank of `key`.
  [[nodiscard]] int owner(const K& key) const {
    return detail::owner_of(hash_, key, ranks_.size());
  }
  /// This rank's items and their parents (their roots after compress()).
  [[nodiscard]] const local_map& local() const noexcept { return parent_; }
  /// Calls `f(item, parent)` for every item of this rank (`parent` is the root after
  /// compress()).
  template <class F>
  void for_all(F&& f) const {
    for (const auto& [x, p] : parent_) f(x, p);
  }
  /// Collective, after compress() (every rank passes the same key): the root of `key`'s set,
  /// on every rank (`key` itself if it is in no union).
  [[nodiscard]] K find(const K& key) {
    K root = key;
    const int o = owner(key);
    if (o == ranks_.rank())
      if (auto it = parent_.find(key); it != parent_.end()) root = it->second;
    return ranks_.bcast(std::as_const(root), o);
  }
  /// Collective, after compress(): the root of each of this rank's `keys` (ranks pass any
  /// number, zero included), in order (a key in no union is its own root): one exchange each
  /// way for the batch.
  [[nodiscard]] std::vector<K> roots_of(std::span<const K> keys) {
    return detail::ask_owners<K>(ranks_, hash_, keys, [this](const K& k) {
      auto it = parent_.find(k);
      return it != parent_.end() ? it->second : k;
    });
  }
  /// Collective: the number of sets over all ranks.
  [[nodiscard]] std::uint64_t num_sets() {
    std::uint64_t roots = 0;
    for (const auto& [x, p] : parent_) roots += p == x ? 1 : 0;
    return ranks_.allreduce(roots, cairn::plus{});
  }
  /// Collective: the number of items over all ranks.
  [[nodiscard]] std::uint64_t size() {
    return ranks_.allreduce(static_cast<std::uint64_t>(parent_.size()), cairn::plus{});
  }
  /// Collective: every item and its parent on rank `root` (empty on other ranks).
  [[nodiscard]] std::map<K, K> gather(int root) {
    std::vector<std::pair<K, K>> mine(parent_.begin(), parent_.end());
    std::map<K, K> out;
    for (auto& part : ranks_.gather(mine, root))
      for (auto& [x, p] : part) out.emplace(std::move(x), std::move(p));
    return out;
  }
  /// Collective: ends the phase and removes every item.
  void clear() {
    ranks_.quiesce_and_empty([this] {
      parent_.clear();
      sent_.clear();
    });
  }
  /// Counters of the disjoint set's calls on this rank.
  [[nodiscard]] const cairn::msg::channel_stats& stats() const noexcept {
    return calls_.records().core().stats();
  }

 private:
  // Pairs of string keys would be copied into the filter on every union.
  static constexpr bool filtered = std::is_trivially_copyable_v<K>;

  // The parent of item `x` of this rank, made a root if new.
  K& parent_of(const K& x) { return parent_.try_emplace(x, x).first->second; }

  struct insert_op {
    void operator()(disjoint_set& self, K&& a) const { self.parent_of(a); }
  };
  // Climbs from `x` (an item of this rank) while the parents are items of this rank too,
  // halving the path on the way (each item passed points to its grandparent, an ancestor with
  // a smaller key: the order stays). Returns the root, or the first parent on another rank.
  K climb(K x) {
    const int me = ranks_.rank();
    for (;;) {
      const K p = parent_of(x);
      if (p == x || owner(p) != me) return p;
      const K g = parent_.find(p)->second;  // p is a parent: an item of its owner
      if (g == p) return p;
      parent_.find(x)->second = g;
      x = g;
      if (owner(x) != me) return x;
    }
  }
  // At a's owner: climb to a's root (looping while the path stays on this rank, so a long
  // local chain never nests calls), then walk from b.
  struct walk_a {
    void operator()(disjoint_set& self, K&& a, K&& b) const {
      const K top = self.climb(a);
      if (self.owner(top) != self.ranks_.rank() || !(self.parent_.find(top)->second == top))
        self.calls_.template call<walk_a>(self.owner(top), top, b);
      else
        self.calls_.template call<walk_b>(self.owner(b), b, top);
    }
  };
  // At b's owner: climb to b's root; link the larger of the two roots under the smaller.
  struct walk_b {
    void operator()(disjoint_set& self, K&& b, K&& ra) const {
      const K top = self.climb(b);
      if (self.owner(top) != self.ranks_.rank() || !(self.parent_.find(top)->second == top)) {
        self.calls_.template call<walk_b>(self.owner(top), top, ra);
      } else if (ra < top) {
        self.parent_.find(top)->second = ra;  // top is a root here and now: link it
      } else if (top < ra) {
        self.calls_.template call<link_op>(self.owner(ra), ra, top);
      }
    }
  };
  // At ra's owner: link ra under b if ra is still a root, else join b with ra's new parent.
  struct link_op {
    void operator()(disjoint_set& self, K&& ra, K&& b) const {
      K& p = self.parent_of(ra);
      if (p == ra) {
        p = b;
      } else {
        const K up = p;
        self.calls_.template call<walk_a>(self.owner(up), up, b);
      }
    }
  };
  // At p's owner (compress): tell rank `asker` p's parent.
  struct ask_op {
    void operator()(disjoint_set& self, K&& p, int&& asker) const {
      const auto it = self.parent_.find(p);  // a parent is an item of its owner
      const K gp = it == self.parent_.end() ? p : it->second;
      self.calls_.template call<answer_op>(asker, p, gp);
    }
  };
  struct answer_op {
    void operator()(disjoint_set& self, K&& p, K&& gp) const {
      self.above_.insert_or_assign(std::move(p), std::move(gp));
    }
  };

  detail::container_ranks ranks_;
  Hash hash_;
  local_map parent_;
  local_map above_;  // compress(): parents on other ranks and their parents (asked this round)
  std::vector<int> parent_owner_;  // compress(): the owner of each non-root item's parent
  detail::seen_filter<std::pair<K, K>> sent_;  // unions this rank sent (smaller key first)
  // Last: deliveries may start in its constructor.
  detail::container_calls<disjoint_set, Route> calls_;
};

}  // namespace cairn::containers
