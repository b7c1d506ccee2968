#pragma once
/// \file
/// `cairn::containers::disjoint_set`: union-find over keys distributed by hash (YGM's
/// disjoint_set), for connected components at scale. `async_union(a, b)` walks from a to its
/// root and from b to its root (from b first if only b is this rank's: that step needs no
/// message), each step at the owner of the item it stands on, and links
/// the root with the larger key under the other (parents only ever point to smaller keys, so
/// concurrent unions never make a cycle; a root that was linked meanwhile restarts the walk).
/// `compress()` (collective) then points every item straight at its root by pointer jumping
/// (each round halves the depth of every path); after it, `local()` maps each item of this
/// rank to its set's root, the smallest key of the set. A round asks each parent on another
/// rank for its own parent once, however many of this rank's items point to it, and a parent
/// known to be a root is not asked again (channel_stats::combined_source counts the asks
/// saved), so a giant component costs a message per rank and round, not one per item.
///
/// A union is idempotent, and so is every step of its walk (each joins the sets of two keys):
/// for trivially copyable keys, a direct-mapped filter of container_options::cache_slots pairs
/// remembers the steps (kind and keys, in order) this rank sent, as unions or as steps of the
/// walks it serves, or saw pass on a forwarding route. A repeated one is dropped at the source
/// (channel_stats::combined_source counts them) and, with container_options::combine_hops, at
/// every hop (combined_hops): the one that went before joins the same two sets, and it goes to
/// the same rank by the same path, so some copy of every step arrives. (Pairs taken either way
/// round go to different ranks: two hops could each drop the copy the other kept.) A union of a
/// key with itself only inserts it.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/containers/flat_map.hpp"
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
  using local_map = flat_map<K, K, detail::local_hash<Hash, K>>;

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
        combine_hops_(opts.combine_hops),
        calls_(on, *this, std::move(route), detail::call_options(opts, "disjoint_set")) {}
  disjoint_set(const disjoint_set&) = delete;
  disjoint_set& operator=(const disjoint_set&) = delete;

  /// Joins the sets of `a` and `b` (each made a set of its own first if new).
  void async_union(const K& a, const K& b) {
    if (a == b) {
      async_insert(a);
      return;
    }
    // The walk starts at a key of this rank where it can (a union is symmetric): its first
    // step then runs here, without a message.
    const std::uint64_t ha = hash_(a), hb = hash_(b);
    const int me = ranks_.rank(), ranks = ranks_.size();
    if (detail::owner_of_hash(ha, ranks) != me && detail::owner_of_hash(hb, ranks) == me)
      send_step<walk_a>(b, hb, a, ha);
    else
      send_step<walk_a>(a, ha, b, hb);
  }
  /// Internal (a call passing through this rank on a forwarding route): a step of a walk
  /// joining two keys this rank already joined, or saw pass, is dropped (true).
  bool on_transit(std::uint32_t index, std::span<const std::byte> args) {
    if constexpr (!filtered) {
      return false;
    } else {
      if (!combine_hops_ || !sent_.enabled()) return false;
      std::uint8_t step;
      if (index == walk_a_entry::index())
        step = walk_a::step;
      else if (index == walk_b_entry::index())
        step = walk_b::step;
      else if (index == link_entry::index())
        step = link_op::step;
      else
        return false;
      K x{}, y{};
      const std::byte* at = args.data();
      const std::byte* const end = at + args.size();
      if (cairn::msg::detail::unpack_from(at, end, x) ||
          cairn::msg::detail::unpack_from(at, end, y))
        return false;  // travels on: its receiver reports it
      return repeats(step, x, hash_(x), y, hash_(y));
    }
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
      erase_if(above_, [](const auto& e) { return !(e.second == e.first); });
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
  /// compress()). Unions it asks for whose steps run on this rank start after the last;
  /// messages from other ranks wait too.
  template <class F>
  void for_all(F&& f) {
    detail::with_calls_held(calls_.records(), [&] {
      for (const auto& [x, p] : parent_) f(x, p);
    });
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

  // A step of a walk as the filter remembers it: which step, and its two keys in order (the
  // first picks the rank it goes to).
  // Each step a walk takes next differs from it in kind or keys, so only a step that repeats
  // another one is dropped, never the rest of a walk.
  struct step_key {
    K x{}, y{};
    std::uint8_t step = 0;
    bool operator==(const step_key&) const = default;
  };
  // True if this rank sent step `step`(x, y) (keys hashed hx, hy), or saw it pass, since the
  // set was last cleared; else remembers it. False with the filter off.
  bool repeats(std::uint8_t step, const K& x, std::uint64_t hx, const K& y, std::uint64_t hy) {
    if (!sent_.enabled()) return false;
    // The low bits (the filter's slot) mix both keys' hashes and the step.
    const std::uint64_t h = hx ^ (hy * 0x9E3779B97F4A7C15ULL) ^ (step * 0x51ULL);
    return sent_.seen(h, step_key{x, y, step});
  }
  // Sends step Op(x, y), which joins the sets of x and y (hashed hx, hy), to the owner of x,
  // unless this rank sent or saw the same step before.
  template <class Op>
  void send_step(const K& x, std::uint64_t hx, const K& y, std::uint64_t hy) {
    if (repeats(Op::step, x, hx, y, hy)) {
      ++calls_.records().core().stats().combined_source;
      return;
    }
    calls_.template call<Op>(detail::owner_of_hash(hx, ranks_.size()), x, y);
  }
  // As above, hashing y only where the filter needs it.
  template <class Op>
  void send_step(const K& x, std::uint64_t hx, const K& y) {
    send_step<Op>(x, hx, y, sent_.enabled() ? hash_(y) : 0);
  }

  // The parent of item `x` of this rank, made a root if new.
  K& parent_of(const K& x) { return parent_.try_emplace(x, x).first->second; }

  struct insert_op {
    void operator()(disjoint_set& self, K&& a) const { self.parent_of(a); }
  };
  // Where a climb ended: the root, or the first parent on another rank; `root_parent` points
  // at the root's own entry in parent_ if the root is an item of this rank (valid until
  // parent_ next changes), else is null.
  struct summit {
    K top;
    K* root_parent;
  };
  // Climbs from `x` (an item of this rank) while the parents are items of this rank too,
  // halving the path on the way (each item passed points to its grandparent, an ancestor with
  // a smaller key: the order stays). Two lookups a step: a parent is an item of its owner, so
  // only the first item can be new, and no lookup moves another item's entry.
  summit climb(const K& from) {
    const int me = ranks_.rank();
    K x = from;
    K* px = &parent_of(x);
    for (;;) {
      const K p = *px;
      if (p == x) return {x, px};
      if (owner(p) != me) return {p, nullptr};
      K* pp = &parent_.find(p)->second;
      const K g = *pp;
      if (g == p) return {p, pp};
      *px = g;
      x = g;
      if (owner(x) != me) return {x, nullptr};
      px = &parent_.find(x)->second;
    }
  }
  // At a's owner: climb to a's root (looping while the path stays on this rank, so a long
  // local chain never nests calls), then walk from b.
  struct walk_a {
    static constexpr std::uint8_t step = 0;  // its kind in the filter (step_key)
    void operator()(disjoint_set& self, K&& a, K&& b) const {
      const auto [top, root_parent] = self.climb(a);
      const std::uint64_t ht = self.hash_(top);
      if (!root_parent)
        self.template send_step<walk_a>(top, ht, b);
      else
        self.template send_step<walk_b>(b, self.hash_(b), top, ht);
    }
  };
  // At b's owner: climb to b's root; link the larger of the two roots under the smaller.
  struct walk_b {
    static constexpr std::uint8_t step = 1;
    void operator()(disjoint_set& self, K&& b, K&& ra) const {
      const auto [top, root_parent] = self.climb(b);
      const std::uint64_t ht = self.hash_(top);
      if (!root_parent) {
        self.template send_step<walk_b>(top, ht, ra);
      } else if (ra < top) {
        *root_parent = ra;  // top is a root here and now: link it
      } else if (top < ra) {
        self.template send_step<link_op>(ra, self.hash_(ra), top, ht);
      }
    }
  };
  // At ra's owner: link ra under b if ra is still a root, else join b with ra's new parent.
  struct link_op {
    static constexpr std::uint8_t step = 2;
    void operator()(disjoint_set& self, K&& ra, K&& b) const {
      K& p = self.parent_of(ra);
      if (p == ra) {
        p = b;
      } else {
        const K up = p;
        self.template send_step<walk_a>(up, self.hash_(up), b);
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
  using walk_a_entry = cairn::msg::detail::call_entry<disjoint_set, walk_a, K, K>;
  using walk_b_entry = cairn::msg::detail::call_entry<disjoint_set, walk_b, K, K>;
  using link_entry = cairn::msg::detail::call_entry<disjoint_set, link_op, K, K>;

  detail::seen_filter<step_key> sent_;  // steps this rank sent or saw
  bool combine_hops_;
  // Last: deliveries may start in its constructor.
  detail::container_calls<disjoint_set, Route> calls_;
};

}  // namespace cairn::containers
