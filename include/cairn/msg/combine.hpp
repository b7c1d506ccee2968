#pragma once
/// \file
/// Combining on the way (AP 3.5): a per-channel, direct-mapped cache consulted before an item
/// enters a buffer — at its source *and at every intermediate hop* — that drops redundant items
/// or merges them into one already buffered. Each lookup is one hash and one slot: no
/// allocation, no probing chain.
///
/// Lifetime of a cache: one *phase* of its channel. A phase ends when a termination completes:
/// world::quiesce(), channel::wait() or a channel::done() phase. Every rank then empties the
/// cache (an O(slots) clear), and so does an intermediate rank that receives an item of the
/// next phase before its own termination call returned; so a second phase — another search
/// with the same keys — delivers its items as if the channel were new. Within a phase the
/// cache is kept: dedup and keep_min/keep_max drop an item that repeats (or does not improve
/// on) one sent earlier in the phase, even if that one was delivered long ago.
/// channel::reset_combining() empties this rank's cache at any time.
///
/// A combiner is any type with `static constexpr bool enabled`, `template <class T> void
/// init()` (allocate, empty), `template <class T> bool absorb(const T&, out_buffer&, std::byte*)`
/// (true: drop the item) and, for a combiner with state, `void reset()` (empty the cache;
/// without it the channel calls init<T>() again).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/msg/detail/combine.hpp"

namespace cairn::msg {

namespace combine {

/// No combining: every item travels.
struct none {
  static constexpr bool enabled = false;  ///< the channel skips the cache entirely
  /// Nothing to prepare.
  template <class T>
  void init() {}
  /// Never absorbs.
  template <class T>
  bool absorb(const T&, detail::out_buffer&, std::byte*) noexcept {
    return false;
  }
  /// Nothing to empty.
  void reset() noexcept {}
};

/// Drops an item equal (bytewise) to the one cached in its slot: for idempotent handlers
/// (e.g. "mark visited"), repeats within the cache's reach never travel.
struct dedup {
  static constexpr bool enabled = true;  ///< consulted for every item
  std::size_t slots = 4096;              ///< cache entries (rounded up to a power of two)

  /// A cache of `slots` items.
  explicit dedup(std::size_t n = 4096) : slots(n) {}

  /// Allocates the cache for items of type T (once, at channel construction).
  template <class T>
  void init() {
    cache_.assign(detail::slot_count(slots) * sizeof(T), std::byte{0});
    valid_.assign(detail::slot_count(slots), 0);
    mask_ = detail::slot_count(slots) - 1;
  }
  /// Empties the cache (at the end of every phase of the channel).
  void reset() noexcept { std::fill(valid_.begin(), valid_.end(), 0); }
  /// True if `x` repeats the cached item of its slot (drop it); else caches it.
  template <class T>
  bool absorb(const T& x, detail::out_buffer&, std::byte*) noexcept {
    std::uint64_t h = 0;
    std::memcpy(&h, &x, sizeof(T) < 8 ? sizeof(T) : 8);
    if constexpr (sizeof(T) > 8) {
      for (std::size_t i = 8; i + 8 <= sizeof(T); i += 8) {
        std::uint64_t w = 0;
        std::memcpy(&w, reinterpret_cast<const std::byte*>(&x) + i, 8);
        h = h * 0x9e3779b97f4a7c15ULL ^ w;
      }
    }
    const std::size_t s = detail::slot_of(h, mask_);
    std::byte* slot = cache_.data() + s * sizeof(T);
    if (valid_[s] && std::memcmp(slot, &x, sizeof(T)) == 0) return true;
    std::memcpy(slot, &x, sizeof(T));
    valid_[s] = 1;
    return false;
  }

 private:
  std::vector<std::byte> cache_;
  std::vector<unsigned char> valid_;
  std::size_t mask_ = 0;
};

/// Keeps only improving items per key: an item whose value is not better than the best value
/// cached for its key is dropped (e.g. BFS/SSSP distances). `Better(a, b)` is true when a is
/// better than b.
template <class Key, class Value, class Better>
struct keep_best {
  static constexpr bool enabled = true;  ///< consulted for every item
  Key key;                               ///< item -> integral key
  Value value;                           ///< item -> comparable value
  std::size_t slots = 4096;              ///< cache entries (rounded up to a power of two)

  /// Best values per `key(item)`, compared by `value(item)`, in a cache of `n` slots.
  keep_best(Key k, Value v, std::size_t n = 4096)
      : key(std::move(k)), value(std::move(v)), slots(n) {}

  /// Allocates the cache for items of type T.
  template <class T>
  void init() {
    using V = std::remove_cvref_t<std::invoke_result_t<const Value&, const T&>>;
    static_assert(std::is_trivially_copyable_v<V>,
                  "keep_min/keep_max values must be trivially copyable");
    entries_.assign(detail::slot_count(slots) * entry_bytes<T>(), std::byte{0});
    mask_ = detail::slot_count(slots) - 1;
  }
  /// Empties the cache (at the end of every phase of the channel): no key has a best value.
  void reset() noexcept { std::fill(entries_.begin(), entries_.end(), std::byte{0}); }
  /// True if `x` is no better than the best seen for its key (drop it); else records it.
  template <class T>
  bool absorb(const T& x, detail::out_buffer&, std::byte*) {
    using V = std::remove_cvref_t<std::invoke_result_t<const Value&, const T&>>;
    const auto k = static_cast<std::uint64_t>(std::invoke(key, x));
    const V v = std::invoke(value, x);
    std::byte* e = entries_.data() + detail::slot_of(k, mask_) * entry_bytes<T>();
    std::uint64_t stored_key;  // entry: key + 1 (0 = empty), then the best value
    std::memcpy(&stored_key, e, 8);
    if (stored_key == k + 1) {
      V best;
      std::memcpy(&best, e + 8, sizeof(V));
      if (!Better{}(v, best)) return true;
    }
    stored_key = k + 1;
    std::memcpy(e, &stored_key, 8);
    std::memcpy(e + 8, &v, sizeof(V));
    return false;
  }

 private:
  template <class T>
  static constexpr std::size_t entry_bytes() {
    using V = std::remove_cvref_t<std::invoke_result_t<const Value&, const T&>>;
    return 8 + (sizeof(V) + 7) / 8 * 8;
  }
  std::vector<std::byte> entries_;
  std::size_t mask_ = 0;
};

/// keep_best with "smaller is better".
template <class Key, class Value>
struct keep_min : keep_best<Key, Value, std::less<>> {
  using keep_best<Key, Value, std::less<>>::keep_best;
};
/// keep_best with "larger is better".
template <class Key, class Value>
struct keep_max : keep_best<Key, Value, std::greater<>> {
  using keep_best<Key, Value, std::greater<>>::keep_best;
};
/// Deduces keep_min's types from its constructor's arguments.
template <class Key, class Value>
keep_min(Key, Value, std::size_t = 4096) -> keep_min<Key, Value>;
/// Deduces keep_max's types from its constructor's arguments.
template <class Key, class Value>
keep_max(Key, Value, std::size_t = 4096) -> keep_max<Key, Value>;

/// Merges items with a user's associative operation: an item whose key matches one still
/// waiting in the same buffer is merged into it (`merge(buffered, x)`, which updates
/// `buffered`) instead of travelling. At the source and at every hop, so the handler sees
/// fewer items, each the merge of several; `merge` must be associative and commutative for
/// the result not to depend on which items meet (e.g. a min of distances, a union of flags).
template <class Key, class Merge>
struct merge {
  static constexpr bool enabled = true;  ///< consulted for every item
  Key key;                               ///< item -> integral key
  Merge fn;                              ///< fn(T& buffered, const T& x): merges x into buffered
  std::size_t slots = 4096;              ///< cache entries (rounded up to a power of two)

  /// Merges items of equal `key(item)` with `m`, in a cache of `n` slots.
  merge(Key k, Merge m, std::size_t n = 4096) : key(std::move(k)), fn(std::move(m)), slots(n) {}

  /// Allocates the cache.
  template <class T>
  void init() {
    entries_.assign(detail::slot_count(slots), entry{});
    mask_ = detail::slot_count(slots) - 1;
  }
  /// Forgets every buffered position (at the end of every phase of the channel; positions of
  /// sent buffers are stale anyway, since sending a buffer changes its generation).
  void reset() noexcept { std::fill(entries_.begin(), entries_.end(), entry{}); }
  /// True if `x` was merged into an item buffered in `b` (drop it); else remembers that x is
  /// about to become item b.n of `b`. `items` points at b's first item.
  template <class T>
  bool absorb(const T& x, detail::out_buffer& b, std::byte* items) {
    const auto k = static_cast<std::uint64_t>(std::invoke(key, x));
    entry& e = entries_[detail::slot_of(k, mask_)];
    if (e.key == k + 1 && e.buf == &b && e.gen == b.gen && e.index < b.n) {
      T held;
      std::memcpy(&held, items + std::size_t{e.index} * sizeof(T), sizeof(T));
      std::invoke(fn, held, x);
      std::memcpy(items + std::size_t{e.index} * sizeof(T), &held, sizeof(T));
      return true;
    }
    e = entry{k + 1, &b, b.gen, b.n};
    return false;
  }

 private:
  struct entry {
    std::uint64_t key = 0;  // key + 1; 0 = empty
    const detail::out_buffer* buf = nullptr;
    std::uint32_t gen = 0;
    std::uint32_t index = 0;
  };
  std::vector<entry> entries_;
  std::size_t mask_ = 0;
};
/// Deduces merge's types from its constructor's arguments.
template <class Key, class Merge>
merge(Key, Merge, std::size_t = 4096) -> merge<Key, Merge>;

namespace detail {
/// sum's merge: adds the field `value` projects.
template <class Value>
struct add_field {
  Value value;  ///< item& -> reference to the additive field
  /// buffered.field += x.field
  template <class T>
  void operator()(T& buffered, const T& x) const {
    std::invoke(value, buffered) += std::invoke(value, x);
  }
};
}  // namespace detail

/// Merges additive payloads: an item whose key matches one still waiting in the same buffer is
/// added into it (`value(buffered) += value(x)`) instead of travelling (e.g. histogram counts).
template <class Key, class Value>
struct sum : merge<Key, detail::add_field<Value>> {
  /// Merges items of equal `key(item)` by adding `value(item)`, in a cache of `n` slots.
  sum(Key k, Value v, std::size_t n = 4096)
      : merge<Key, detail::add_field<Value>>(std::move(k), detail::add_field<Value>{std::move(v)},
                                             n) {}
};
/// Deduces sum's types from its constructor's arguments.
template <class Key, class Value>
sum(Key, Value, std::size_t = 4096) -> sum<Key, Value>;

}  // namespace combine
}  // namespace cairn::msg
