#pragma once
/// \file
/// Internal: what the distributed containers share — their options, the hash that picks a
/// key's owner rank (the same in every process of a run), and the calls between ranks (an
/// async call channel whose target is the container's part on each rank).

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/msg/async.hpp"
#include "cairn/runtime/group.hpp"
#include "cairn/runtime/serialize.hpp"

namespace cairn::containers {

/// Run-time options of a distributed container.
struct container_options {
  /// Bytes per buffer of its calls (0: 16 KiB).
  std::size_t buffer_bytes = 0;
  /// Entries of the combining cache at the source (counting_set, map::async_reduce,
  /// array::async_reduce): repeated keys are counted or merged there and travel once per
  /// flush; for a set, keys remembered so that an insert repeated within a phase is dropped;
  /// for a disjoint_set, the pairs its unions and their walks' steps joined, so that a
  /// repeated one is dropped (trivially copyable keys). 0 turns combining off. Each
  /// entry holds a key and a value (and the key's hash unless the key is an integer or enum):
  /// 4 MiB per rank for 32-bit keys and 64-bit values. The default was 4096; 32768 measured
  /// 0.26 -> 0.38x the hand-written exchange on `cairn-bench degree` (2^18 vertices, 2 MPI ranks),
  /// 0.49 -> 0.87x at 2^16; 262144 (past the 1 MiB L2, within the L3 of this machine) measured,
  /// 2 ranks against 32768: degree 1.16 -> 1.83x (threads), 0.78 -> 1.49x (MPI), at 2^20
  /// vertices 0.82 -> 1.45x (threads; 131072: 1.09, 2^20 slots: 1.30); distinct 1.61 -> 2.70x
  /// and 1.41 -> 2.92x; wordcount 1.96 -> 2.43x (threads).
  std::size_t cache_slots = 262144;
  /// On a forwarding route, counts and reductions passing through a rank join its combining
  /// cache and travel on merged with the others of their key, a set's inserts of a key that
  /// passed (or was inserted here) in this phase are dropped, and so are a disjoint_set's steps
  /// joining two keys it joined or saw pass before (channel_stats::combined_hops counts them).
  /// Needs cache_slots; a map or array combines reductions by the merge its cache holds (a rank
  /// that has not reduced takes up that of the first passing through).
  bool combine_hops = true;
  /// Name in statistics and errors (nullptr: the container's kind, e.g. "counting_set").
  const char* name = nullptr;
};

/// The default hash of a key: the same value in every process of a run (it picks the owner
/// rank). Integers and enums are mixed; strings and types with std::hash use it; trivially
/// copyable types without padding hash their bytes; any other serializable key hashes its
/// serialized form.
template <class K>
struct default_hash {
  /// 64-bit hash of `k`.
  [[nodiscard]] std::uint64_t operator()(const K& k) const {
    if constexpr (std::is_integral_v<K> || std::is_enum_v<K>) {
      return mix(static_cast<std::uint64_t>(k));
    } else if constexpr (std::is_convertible_v<const K&, std::string_view>) {
      return mix(std::hash<std::string_view>{}(std::string_view(k)));
    } else if constexpr (requires { std::hash<K>{}(k); }) {
      return mix(std::hash<K>{}(k));
    } else if constexpr (std::has_unique_object_representations_v<K>) {
      return bytes(&k, sizeof(K));
    } else {
      static_assert(cairn::serializable<K>,
                    "a container key needs std::hash, unique object bytes, or serialization");
      std::vector<std::byte> b;
      cairn::serialize_append(k, b);
      return bytes(b.data(), b.size());
    }
  }

 private:
  static std::uint64_t mix(std::uint64_t x) noexcept {  // murmur3's finalizer
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
  }
  static std::uint64_t bytes(const void* p, std::size_t n) noexcept {
    return mix(std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(p), n)));
  }
};

namespace detail {

/// True if a rank's part of a container keyed by K under `Hash` is hashed by std::hash<K>: the
/// default hash of a key std::hash takes.
template <class Hash, class K>
inline constexpr bool local_std_hash =
    std::is_same_v<Hash, default_hash<K>>&& requires(const K& k) {
  std::hash<K>{}(k);
};

/// The hash of a rank's part (a flat_map or flat_set). The owner is picked by
/// the 64-bit `Hash`; the part itself does not need those mixed bits. With the default hash it uses
/// std::hash<K>, as a user's own std::unordered_map would: for integer keys the identity, so
/// keys near in value sit near in the table. Measured on the keys of an R-MAT graph
/// (bench/degree.cpp's, 2^18 vertices, one rank, 2^23 counts): 27-59 ns per count against
/// 72-108 ns with the mixed hash. Integer keys do not keep the hash in the table's nodes.
template <class Hash, class K>
struct local_hash {
  Hash h;
  std::size_t operator()(const K& k) const
      noexcept(local_std_hash<Hash, K> && (std::is_integral_v<K> || std::is_enum_v<K>)) {
    if constexpr (local_std_hash<Hash, K>)
      return std::hash<K>{}(k);
    else
      return static_cast<std::size_t>(h(k));
  }
};

/// The owner of a key whose hash is `h` among `ranks` ranks: the hash's top bits scaled.
inline int owner_of_hash(std::uint64_t h, int ranks) noexcept {
  __extension__ typedef unsigned __int128 u128;
  return static_cast<int>((static_cast<u128>(h) * static_cast<unsigned>(ranks)) >> 64);
}

/// The owner of a key under `hash` among `ranks` ranks.
template <class Hash, class K>
int owner_of(const Hash& hash, const K& k, int ranks) {
  return owner_of_hash(hash(k), ranks);
}

/// Updates of a rank's part gathered as they arrive at the owner, then applied in one tight
/// loop: independent hash-table lookups in a loop overlap their cache misses, where one
/// lookup per delivered call waits for each miss in turn. The container applies the batch
/// (`settle`) after each arrived message, when it is full, before any other operation on its
/// part, and when its buffers are flushed, so a rank's operations on a key keep their order
/// and every update is in place when a phase ends.
template <class K, class V>
class owner_batch {
 public:
  /// The gathered (key, value) pairs.
  using items = std::vector<std::pair<K, V>>;
  /// Applies `items` to the part at `part`.
  using apply_fn = void (*)(void* part, items&);

  /// Pairs gathered before they are applied.
  static constexpr std::size_t capacity = 64;

  owner_batch() { items_.reserve(capacity); }
  /// Gathers (key, value), to be applied by `apply` (the batch waiting for another `apply`
  /// is applied first).
  void add(void* part, apply_fn apply, K&& key, V&& value) {
    if (apply != apply_) {
      settle(part);
      apply_ = apply;
    }
    items_.emplace_back(std::move(key), std::move(value));
    if (items_.size() == capacity) settle(part);
  }
  /// Applies the gathered pairs to the part at `part`.
  void settle(void* part) {
    if (items_.empty()) return;
    apply_(part, items_);
    items_.clear();
  }

 private:
  items items_;
  apply_fn apply_ = nullptr;
};

/// Applies an owner_batch's `items` to a flat_map `part`: every key is hashed and its slot
/// prefetched first, then `apply(slot_hash, item)` runs for each item in order (typically a
/// `part.try_emplace_hashed(slot_hash, ...)`), so the batch's cache misses overlap instead of
/// each lookup waiting for the last.
template <class Part, class K, class V, class Apply>
void apply_prefetched(Part& part, std::vector<std::pair<K, V>>& items, Apply apply) {
  constexpr std::size_t chunk = owner_batch<K, V>::capacity;  // hashes on the stack
  std::uint64_t hashes[chunk];
  for (std::size_t lo = 0; lo < items.size(); lo += chunk) {
    const std::size_t n = std::min(chunk, items.size() - lo);
    for (std::size_t k = 0; k < n; ++k) {
      hashes[k] = part.slot_hash(items[lo + k].first);
      part.prefetch(hashes[k]);
    }
    for (std::size_t k = 0; k < n; ++k) apply(hashes[k], items[lo + k]);
  }
}

/// Runs `f`, a user's function that holds a reference into a rank's part (a map visitor's
/// value, a for_all's item), with the part unchanged under it: calls it makes on this rank are
/// queued (a hold of `records`, the container's record_channel) and run after it returns, and
/// arrived messages wait as they do while a handler runs (a send never delivers them; it exceeds
/// the buffers' cap rather than wait).
template <class Records, class F>
void with_calls_held(Records& records, F&& f) {
  records.hold_local();
  try {
    cairn::msg::detail::channel_core::handler_scope as_handler(records.core());
    f();
  } catch (...) {
    records.end_hold();  // the queued calls wait for the next poll
    throw;
  }
  records.end_hold();
  records.deliver_held();
}

/// One bit per slot of a direct-mapped table (the caches and filters below).
class slot_bits {
 public:
  /// `slots` bits, all clear.
  explicit slot_bits(std::size_t slots) : words_((slots + 63) / 64, 0) {}
  /// True if bit i is set.
  [[nodiscard]] bool test(std::size_t i) const noexcept { return (words_[i / 64] & bit(i)) != 0; }
  /// Sets bit i.
  void set(std::size_t i) noexcept { words_[i / 64] |= bit(i); }
  /// Clears bit i.
  void reset(std::size_t i) noexcept { words_[i / 64] &= ~bit(i); }
  /// Clears every bit.
  void clear() noexcept { std::fill(words_.begin(), words_.end(), 0); }
  /// The lowest set bit in word `w` (of 64 bits) or a later one, or npos.
  [[nodiscard]] std::size_t next(std::size_t w) const noexcept {
    for (; w < words_.size(); ++w)
      if (words_[w] != 0) return w * 64 + static_cast<std::size_t>(std::countr_zero(words_[w]));
    return npos;
  }
  /// No set bit.
  static constexpr std::size_t npos = ~std::size_t{0};

 private:
  static std::uint64_t bit(std::size_t i) noexcept { return std::uint64_t{1} << (i % 64); }
  std::vector<std::uint64_t> words_;
};

/// The direct-mapped combining cache at the source (counting_set, map::async_reduce): a
/// key's slot is picked by its 64-bit hash; a repeated key merges into its slot, another key
/// evicts it (the evicted pair travels to its owner). Slots are plain (key, value) pairs with
/// a bitmap of the used ones; keys whose hash is a few instructions (integers, enums) recompute
/// it on eviction instead of keeping it, so a slot of a 32-bit key and a 64-bit value is 16
/// bytes (the default 262144 slots: 4 MiB).
///
/// On a forwarding route the cache also takes calls passing through this rank (combining on
/// every hop): a slot holding such a value is marked *passing*, and `evict` learns it (its
/// fourth argument), so that it sends the pair as forwarding is sent (send_held).
template <class K, class V, class Hash>
class source_cache {
 public:
  /// A cache of `slots` entries (a power of two; 0: combining off, `enabled()` is false).
  source_cache(std::size_t slots, const Hash& hash)
      : hash_(hash), slots_(slots), used_(slots), passing_(slots) {}

  /// True if the cache has slots.
  [[nodiscard]] bool enabled() const noexcept { return !slots_.empty(); }
  /// The number of pairs cached.
  [[nodiscard]] std::uint64_t size() const noexcept { return cached_; }
  /// Starts loading the slot of hash `h` (a put of it follows).
  void prefetch(std::uint64_t h) const noexcept { __builtin_prefetch(&slots_[index(h)], 1); }

  /// Merges `value` into the slot of `key` (hash `h`) by `merge(old, value)`, or stores it
  /// there after `evict(key, value, hash, passing)` of the pair the slot held. `passing`: the
  /// value is a call passing through this rank (the slot is marked).
  template <class Merge, class Evict>
  void put(std::uint64_t h, const K& key, const V& value, Merge&& merge, Evict&& evict,
           bool passing = false) {
    const std::size_t i = index(h);
    entry& e = slots_[i];
    while (used(i)) {
      if (same(e, h, key)) {
        e.value = merge(std::as_const(e.value), value);
        if (passing) passing_.set(i);
        return;
      }
      send_out(i, evict);  // a delivery meanwhile may fill the slot again: look again
    }
    mark(i);
    if (passing) passing_.set(i);
    e.key = key;
    e.value = value;
    if constexpr (keeps_hash) e.hash = h;
  }
  /// Sends the pair cached for `key` (hash `h`), if any, by `evict(key, value, hash, passing)`
  /// (so an operation that follows on the key keeps its origin's order).
  template <class Evict>
  void take(std::uint64_t h, const K& key, Evict&& evict) {
    const std::size_t i = index(h);
    if (cached_ != 0 && used(i) && same(slots_[i], h, key)) send_out(i, evict);
  }
  /// Sends every cached pair by `evict(key, value, hash, passing)` and empties the cache.
  template <class Evict>
  void drain(Evict&& evict) {
    // Sending may deliver calls that fill slots already passed: they stay for the next drain.
    for (std::size_t i = used_.next(0); i != slot_bits::npos && cached_ != 0;
         i = used_.next(i / 64)) {
      send_out(i, evict);
    }
  }

 private:
  static constexpr bool keeps_hash = !(std::is_integral_v<K> || std::is_enum_v<K>);
  struct no_hash {};
  struct entry {
    K key{};
    V value{};
    [[no_unique_address]] std::conditional_t<keeps_hash, std::uint64_t, no_hash> hash{};
  };

  std::size_t index(std::uint64_t h) const noexcept {
    return static_cast<std::size_t>(h) & (slots_.size() - 1);
  }
  bool used(std::size_t i) const noexcept { return used_.test(i); }
  void mark(std::size_t i) noexcept {
    used_.set(i);
    ++cached_;
  }
  // Empties slot i, then sends its pair: the slot is free first, because sending may flush
  // (which drains the cache) or deliver calls that put into it.
  template <class Evict>
  void send_out(std::size_t i, Evict& evict) {
    const std::uint64_t h = hash_of(slots_[i]);
    K key = std::move(slots_[i].key);
    V value = std::move(slots_[i].value);
    const bool passing = passing_.test(i);
    used_.reset(i);
    passing_.reset(i);
    --cached_;
    evict(std::as_const(key), std::as_const(value), h, passing);
  }
  bool same(const entry& e, std::uint64_t h, const K& key) const {
    if constexpr (keeps_hash)
      return e.hash == h && e.key == key;
    else
      return e.key == key;
  }
  std::uint64_t hash_of(const entry& e) const {
    if constexpr (keeps_hash)
      return e.hash;
    else
      return hash_(e.key);
  }

  Hash hash_;
  std::vector<entry> slots_;
  slot_bits used_;     // slot i holds a pair
  slot_bits passing_;  // slot i holds a passing call's value
  std::uint64_t cached_ = 0;
};

/// Runs `send()`, which sends a pair a container's cache held. A pair holding a passing call's
/// value (`passing`) is sent as forwarding is: inside the handler scope, where sending never
/// delivers arrived messages meanwhile. Else a later call of one of its origins, which this
/// rank forwards at once, could be delivered and sent on while this send waits for a buffer,
/// and overtake it. The rank's own pairs may wait for a buffer (backpressure) as before.
template <class Send>
void send_held(cairn::msg::detail::channel_core& core, bool passing, Send&& send) {
  if (!passing) {
    send();
    return;
  }
  cairn::msg::detail::channel_core::handler_scope guard(core);
  send();
}

/// The combining of reductions by a user's merge (map::async_reduce, array::async_reduce): a
/// source_cache whose values wait for one merge at a time (a reduction by another merge sends
/// them first), taking the container's own reductions and, on a forwarding route, those by
/// the same merge passing through this rank. A rank that has not reduced yet takes the merge
/// of the first reduction passing through: every merge the program reduces by with this
/// container type is known in every process from static initialization, as async functions
/// are (detail/call_registry.hpp), so a rank that only forwards combines too.
///
/// `Self` (the container, which befriends this class) provides
/// `template <class Merge> static void send_reduce(Self&, const K&, const V&, std::uint64_t h)`
/// (sends the reduction of key hash `h` to its owner), `template <class Merge> static
/// std::uint32_t reduce_index()` (the call index of those reductions) and `calls_`.
template <class Self, class K, class V, class Hash>
class reduce_combiner {
 public:
  /// `slots` entries (a power of two; 0: off), keys hashed by `hash`; `combine_hops` takes
  /// passing reductions; `call` names the reduction in errors.
  reduce_combiner(std::size_t slots, const Hash& hash, bool combine_hops, const char* call)
      : cache_(slots, hash), hash_(hash), combine_hops_(combine_hops), call_(call) {}

  /// True if reductions are combined.
  [[nodiscard]] bool enabled() const noexcept { return cache_.enabled(); }
  /// The number of reductions waiting here (staged or cached).
  [[nodiscard]] std::uint64_t size() const noexcept { return cache_.size() + staged_; }

  /// Merges (key, value) (the key's hash `h`) into the cache by Merge, `stage_depth`
  /// reductions later (its slot is prefetched meanwhile); a pair it evicts, or the pairs
  /// waiting for another merge, go out. Without a cache, sends it at once.
  template <class Merge>
  void reduce(Self& self, std::uint64_t h, const K& key, const V& value) {
    (void)known<Merge>;
    if (!cache_.enabled()) {
      Self::template send_reduce<Merge>(self, key, value, h);
      return;
    }
    if (merge_ != &merge_tag<Merge>) use<Merge>(self);
    cache_.prefetch(h);
    while (staged_ == stage_depth) put_oldest<Merge>(*this, self);  // (a handler may stage)
    staged& s = stage_[(first_ + staged_) % stage_depth];
    s.h = h;
    s.key = key;
    s.value = value;
    ++staged_;
  }
  /// Sends every staged and cached pair (when the container's buffers are flushed).
  void drain(Self& self) {
    unstage(self);
    cache_.drain([&](const K& k, const V& v, std::uint64_t kh, bool passing) {
      send_held_pair(self, k, v, kh, passing);
    });
  }
  /// Sends the pair cached for `key` (hash `h`), if any: another operation on the key follows.
  void release(Self& self, std::uint64_t h, const K& key) {
    unstage(self);
    cache_.take(h, key, [&](const K& k, const V& v, std::uint64_t kh, bool passing) {
      send_held_pair(self, k, v, kh, passing);
    });
  }
  /// As release(self, h, key), hashing the key only if something is cached.
  void release(Self& self, const K& key) {
    if (size() != 0) release(self, hash_(key), key);
  }
  /// A call passing through this rank (its function index and packed arguments, the key
  /// first): a reduction by the cached merge joins the cache (true: taken); any other travels
  /// on after the value cached for its key.
  bool on_transit(Self& self, std::uint32_t index, std::span<const std::byte> args) {
    if (!combine_hops_ || !cache_.enabled()) return false;
    if (!merge_) adopt(self, index);
    if (take_passing_ && index == reduce_index_) {
      take_passing_(*this, self, args);
      return true;
    }
    K key{};
    if (size() != 0 && cairn::msg::detail::unpack_first(args, key)) release(self, key);
    return false;
  }

 private:
  template <class Merge>
  static constexpr char merge_tag = 0;  // its address names the merge type

  // Every merge the program reduces by with this container type: the call index of its
  // reductions (resolved once every call is registered) and how to take it up.
  struct known_merge {
    std::uint32_t (*index)();
    void (*use)(reduce_combiner&, Self&);
  };
  static std::vector<known_merge>& merges() {
    static std::vector<known_merge> m;
    return m;
  }
  template <class Merge>
  static void take_up(reduce_combiner& c, Self& self) {
    c.template use<Merge>(self);
  }
  template <class Merge>
  static inline const bool known =
      (merges().push_back(known_merge{&Self::template reduce_index<Merge>, &take_up<Merge>}), true);

  // Values wait for Merge from now on; those waiting for another go out first.
  template <class Merge>
  void use(Self& self) {
    drain(self);
    merge_ = &merge_tag<Merge>;
    put_oldest_ = &put_oldest<Merge>;
    send_ = &Self::template send_reduce<Merge>;
    take_passing_ = &take_reduction<Merge>;
    reduce_index_ = Self::template reduce_index<Merge>();
  }
  // A call of function `index` passes through a rank that has not reduced yet: if it is a
  // reduction, its merge is the cache's from now on.
  void adopt(Self& self, std::uint32_t index) {
    for (const known_merge& m : merges())
      if (m.index() == index) {
        m.use(*this, self);
        return;
      }
  }

  template <class Merge>
  void put(Self& self, std::uint64_t h, const K& key, const V& value, bool passing) {
    cache_.put(
        h, key, value, Merge{},
        [&](const K& k, const V& v, std::uint64_t kh, bool held_passing) {
          send_held(self.calls_.records().core(), held_passing,
                    [&] { Self::template send_reduce<Merge>(self, k, v, kh); });
        },
        passing);
  }
  // Takes the oldest staged reduction out of the stage, then merges it into the cache (a
  // send it makes may flush, which unstages the rest first: the stage is consistent then).
  template <class Merge>
  static void put_oldest(reduce_combiner& c, Self& self) {
    staged& s = c.stage_[c.first_];
    const std::uint64_t h = s.h;
    K key = std::move(s.key);
    V value = std::move(s.value);
    c.first_ = (c.first_ + 1) % stage_depth;
    --c.staged_;
    c.template put<Merge>(self, h, key, value, false);
  }
  // Merges every staged reduction into the cache, oldest first.
  void unstage(Self& self) {
    while (staged_ != 0) put_oldest_(*this, self);
  }
  // Sends a pair the cache held, by the merge it holds.
  void send_held_pair(Self& self, const K& k, const V& v, std::uint64_t h, bool passing) {
    send_held(self.calls_.records().core(), passing, [&] { send_(self, k, v, h); });
  }
  // A reduction by Merge passing through this rank (its packed key and value) joins the cache.
  template <class Merge>
  static void take_reduction(reduce_combiner& c, Self& self, std::span<const std::byte> args) {
    K key{};
    V value{};
    cairn::msg::detail::unpack_all(args, c.call_, self.ranks_.world_rank(), key, value);
    c.template put<Merge>(self, c.hash_(key), key, value, true);
  }

  // Reductions of this rank waiting to meet the cache: a slot of a large direct-mapped cache
  // is mostly a cache miss, and staging lets `stage_depth` of them overlap.
  static constexpr std::size_t stage_depth = 8;
  struct staged {
    std::uint64_t h = 0;
    K key{};
    V value{};
  };

  source_cache<K, V, Hash> cache_;  // reductions waiting here (own and passing)
  std::array<staged, stage_depth> stage_{};
  std::size_t first_ = 0;                                  // the oldest staged reduction
  std::size_t staged_ = 0;                                 // reductions staged
  void (*put_oldest_)(reduce_combiner&, Self&) = nullptr;  // by the cached merge
  Hash hash_;
  bool combine_hops_;
  const char* call_;
  const char* merge_ = nullptr;  // the merge the cached values wait for
  void (*send_)(Self&, const K&, const V&, std::uint64_t) = nullptr;
  // Takes a passing reduction by the cached merge, whose calls have index reduce_index_.
  void (*take_passing_)(reduce_combiner&, Self&, std::span<const std::byte>) = nullptr;
  std::uint32_t reduce_index_ = 0;
};

/// The combining of an idempotent call (a set's insert): a direct-mapped filter of the keys
/// inserted in this phase, at the source and at every hop. A repeat within the phase is dropped:
/// the insert that went before it, already sent, covers it. An erase of the key forgets it once
/// the erase is sent (a passing insert remembered while the erase waited for a buffer must not
/// cover a later one). Emptied when a phase ends: a later phase may follow another rank's erase.
template <class K>
class seen_filter {
 public:
  /// A filter of `slots` keys (a power of two; 0: off, `enabled()` is false).
  explicit seen_filter(std::size_t slots) : keys_(slots), used_(slots) {}
  /// True if the filter has slots.
  [[nodiscard]] bool enabled() const noexcept { return !keys_.empty(); }
  /// True if `key` (hash `h`) was inserted in this phase; else remembers it (in place of the
  /// key its slot held) and returns false.
  bool seen(std::uint64_t h, const K& key) {
    const std::size_t i = index(h);
    if (used_.test(i) && keys_[i] == key) return true;
    keys_[i] = key;
    used_.set(i);
    any_ = true;
    return false;
  }
  /// Forgets `key` (hash `h`), if remembered.
  void forget(std::uint64_t h, const K& key) {
    const std::size_t i = index(h);
    if (used_.test(i) && keys_[i] == key) used_.reset(i);
  }
  /// Forgets every key.
  void clear() noexcept {
    if (!any_) return;
    used_.clear();
    any_ = false;
  }

 private:
  std::size_t index(std::uint64_t h) const noexcept {
    return static_cast<std::size_t>(h) & (keys_.size() - 1);
  }

  std::vector<K> keys_;
  slot_bits used_;    // slot i holds a key
  bool any_ = false;  // some key was remembered since the last clear
};

/// The calls of a container: a call channel on `Route` whose target is `Self`.
template <class Self, class Route>
using container_calls = cairn::msg::detail::call_channel<Route, Self>;

/// The ranks a container lives on: the world, or a group of it (then ranks are group ranks,
/// and its collectives and phases run on the members only).
class container_ranks {
 public:
  /// The ranks of `on`.
  template <cairn::msg::channel_ranks Ranks>
  explicit container_ranks(const Ranks& on)
      : w_(cairn::msg::detail::world_of(on)),
        g_(cairn::msg::detail::group_of(on)),
        rank_(on.rank()),
        size_(on.size()) {}
  /// This rank among the container's ranks.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of the container's ranks.
  [[nodiscard]] int size() const noexcept { return size_; }
  /// This rank in the world (errors name it).
  [[nodiscard]] int world_rank() const noexcept { return w_.rank(); }
  /// "group" or "world", for errors.
  [[nodiscard]] const char* kind() const noexcept { return g_ ? "group" : "world"; }
  /// Ends the phase of the container's calls: group::quiesce on a group, else world::quiesce.
  void quiesce() {
    if (g_)
      g_->quiesce();
    else
      w_.quiesce();
  }
  /// Collective: ends the phase, runs `empty()` (which drops this rank's part), then waits
  /// until every rank has. A rank may send items of the next phase as soon as its quiesce
  /// returns; without the wait they could reach a rank before it empties its part, and be
  /// dropped with it.
  template <class F>
  void quiesce_and_empty(F&& empty) {
    quiesce();
    empty();
    run([](auto& c) { c.barrier(); });
  }
  /// A collective on the container's ranks: `f(world&)` or `f(group&)`.
  template <class F>
  decltype(auto) run(F&& f) {
    if (g_) return f(*g_);
    return f(w_);
  }
  /// world::allreduce or group::allreduce.
  template <class... A>
  auto allreduce(A&&... a) {
    return run([&](auto& c) { return c.allreduce(std::forward<A>(a)...); });
  }
  /// bcast on the container's ranks.
  template <class... A>
  auto bcast(A&&... a) {
    return run([&](auto& c) { return c.bcast(std::forward<A>(a)...); });
  }
  /// gather on the container's ranks.
  template <class... A>
  auto gather(A&&... a) {
    return run([&](auto& c) { return c.gather(std::forward<A>(a)...); });
  }
  /// allgather on the container's ranks.
  template <class... A>
  auto allgather(A&&... a) {
    return run([&](auto& c) { return c.allgather(std::forward<A>(a)...); });
  }
  /// exscan on the container's ranks.
  template <class... A>
  auto exscan(A&&... a) {
    return run([&](auto& c) { return c.exscan(std::forward<A>(a)...); });
  }
  /// alltoall on the container's ranks.
  template <class... A>
  auto alltoall(A&&... a) {
    return run([&](auto& c) { return c.alltoall(std::forward<A>(a)...); });
  }

 private:
  cairn::world w_;
  std::optional<cairn::group> g_;
  int rank_;
  int size_;
};

/// Collective: a batch of queries answered at the keys' owners, one exchange each way however
/// many keys there are. `answer(key)` runs on the owner of each of this rank's `keys` (ranks
/// pass any number, zero included); the answers come back in the order of `keys`.
template <class A, class Hash, class K, class Answer>
std::vector<A> ask_owners(container_ranks& w, const Hash& hash, std::span<const K> keys,
                          Answer&& answer) {
  const auto p = static_cast<std::size_t>(w.size());
  std::vector<std::vector<K>> asked(p);
  std::vector<int> owners(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    owners[i] = owner_of(hash, keys[i], w.size());
    asked[static_cast<std::size_t>(owners[i])].push_back(keys[i]);
  }
  const std::vector<std::vector<K>> to_me = w.alltoall(asked);
  std::vector<std::vector<A>> answers(p);
  for (std::size_t r = 0; r < p; ++r) {
    answers[r].reserve(to_me[r].size());
    for (const K& k : to_me[r]) answers[r].push_back(answer(k));
  }
  std::vector<std::vector<A>> back = w.alltoall(answers);
  std::vector<A> out;
  out.reserve(keys.size());
  std::vector<std::size_t> next(p, 0);
  for (int o : owners) {
    const auto r = static_cast<std::size_t>(o);
    out.push_back(std::move(back[r][next[r]++]));
  }
  return out;
}

/// Channel options of the calls of a container of kind `kind`.
inline cairn::msg::channel_options call_options(const container_options& o, const char* kind) {
  cairn::msg::channel_options c;
  c.buffer_bytes = o.buffer_bytes;
  c.name = o.name ? o.name : kind;
  return c;
}

}  // namespace detail
}  // namespace cairn::containers
