#pragma once
/// \file
/// `cairn::containers::flat_map` and `flat_set`: the hash tables behind a rank's part of the
/// hashed containers (counting_set, map, disjoint_set; set). Open addressing with linear probing:
/// an item lives in its slot, so a lookup of an integer key costs one cache miss where
/// std::unordered_map's costs up to three (bucket, the node before, the node). Measured with
/// bench/cc.cpp's disjoint set at R-MAT scale 18: those misses were most of its time.
///
/// The interface is std::unordered_map's (std::unordered_set's) for what the containers and
/// their users do with a part (iterate, find, count, try_emplace, operator[], insert_or_assign;
/// a set's insert; erase, clear, reserve), with one difference: an insert or erase may move other
/// items, so it invalidates references and iterators to every item (std::unordered_map keeps
/// references across an insert). No container hands out a reference while it can insert: a map's
/// visitor and a for_all's function hold one, and the calls they make on their rank wait until
/// they return.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace cairn::containers {

/// An open-addressing hash map from K to V hashed by `Hash` (any hash: its bits are mixed
/// before they pick a slot, so the identity hash of integer keys is fine); with V = void, a
/// set of keys K (flat_set). Iteration order is unspecified. At most 3/4 of the slots are
/// used; the slots double when that is passed.
template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class flat_map {
  static constexpr bool is_set = std::is_void_v<V>;

 public:
  /// Key type.
  using key_type = K;
  /// Value type (void in a set).
  using mapped_type = V;
  /// An item, as a slot holds it: key and value (a set's: the key, kept writable so that it
  /// moves when items move; the set hands it out read-only).
  using value_type = std::conditional_t<is_set, K, std::pair<const K, V>>;
  /// Sizes.
  using size_type = std::size_t;
  /// The hash.
  using hasher = Hash;

 private:
  // A slot: empty (tag 0) or holding an item whose mixed hash has `tag`'s low 7 bits (tags let
  // a lookup skip most keys of other items without comparing them).
  struct slot {
    std::uint8_t tag;
    alignas(value_type) unsigned char item[sizeof(value_type)];
  };

 public:
  /// A forward iterator over the items (`Const`: read-only).
  template <bool Const>
  class basic_iterator {
   public:
    /// Iterator traits.
    using iterator_category = std::forward_iterator_tag;
    /// Iterator traits.
    using value_type = flat_map::value_type;
    /// Iterator traits.
    using difference_type = std::ptrdiff_t;
    /// Iterator traits.
    using reference = std::conditional_t<Const, const value_type&, value_type&>;
    /// Iterator traits.
    using pointer = std::conditional_t<Const, const value_type*, value_type*>;

    /// A singular iterator.
    basic_iterator() = default;
    /// A read-only iterator from a writable one.
    template <bool C = Const, class = std::enable_if_t<C>>
    basic_iterator(const basic_iterator<false>& o) noexcept  // NOLINT: implicit, as std's
        : at_(o.at_), end_(o.end_) {}
    /// The item.
    reference operator*() const noexcept { return *item_of(at_); }
    /// The item.
    pointer operator->() const noexcept { return item_of(at_); }
    /// The next item.
    basic_iterator& operator++() noexcept {
      ++at_;
      skip();
      return *this;
    }
    /// The next item (returns this one).
    basic_iterator operator++(int) noexcept {
      basic_iterator was = *this;
      ++*this;
      return was;
    }
    /// Same position.
    friend bool operator==(const basic_iterator& a, const basic_iterator& b) noexcept {
      return a.at_ == b.at_;
    }

   private:
    friend class flat_map;
    friend class basic_iterator<!Const>;
    using slot_ptr = std::conditional_t<Const, const slot*, slot*>;
    basic_iterator(slot_ptr at, slot_ptr end) noexcept : at_(at), end_(end) {}
    void skip() noexcept {
      while (at_ != end_ && at_->tag == 0) ++at_;
    }
    slot_ptr at_ = nullptr;
    slot_ptr end_ = nullptr;
  };
  /// A writable iterator (the key stays read-only; a set's is read-only).
  using iterator = basic_iterator<is_set>;
  /// A read-only iterator.
  using const_iterator = basic_iterator<true>;

  /// Empty, with room for about `expected` items before the slots grow.
  explicit flat_map(size_type expected = 0, const Hash& hash = Hash{}, const Eq& eq = Eq{})
      : hash_(hash), eq_(eq) {
    reserve(expected);
  }
  /// A copy of every item.
  flat_map(const flat_map& o) : hash_(o.hash_), eq_(o.eq_) {
    reserve(o.size_);
    for (const value_type& v : o) {
      if constexpr (is_set)
        place(mix(v), v);
      else
        place(mix(v.first), v.first, v.second);
    }
  }
  /// Takes `o`'s items (o is left empty).
  flat_map(flat_map&& o) noexcept
      : slots_(std::exchange(o.slots_, nullptr)),
        mask_(std::exchange(o.mask_, 0)),
        size_(std::exchange(o.size_, 0)),
        hash_(std::move(o.hash_)),
        eq_(std::move(o.eq_)) {}
  /// Replaces the items by a copy of `o`'s.
  flat_map& operator=(const flat_map& o) {
    if (this != &o) *this = flat_map(o);
    return *this;
  }
  /// Replaces the items by `o`'s (o is left empty).
  flat_map& operator=(flat_map&& o) noexcept {
    if (this != &o) {
      release();
      slots_ = std::exchange(o.slots_, nullptr);
      mask_ = std::exchange(o.mask_, 0);
      size_ = std::exchange(o.size_, 0);
      hash_ = std::move(o.hash_);
      eq_ = std::move(o.eq_);
    }
    return *this;
  }
  ~flat_map() { release(); }

  /// The first item.
  [[nodiscard]] iterator begin() noexcept { return first<iterator>(slots_); }
  /// The first item.
  [[nodiscard]] const_iterator begin() const noexcept { return first<const_iterator>(slots_); }
  /// Past the last item.
  [[nodiscard]] iterator end() noexcept { return {slots_ + capacity(), slots_ + capacity()}; }
  /// Past the last item.
  [[nodiscard]] const_iterator end() const noexcept {
    return {slots_ + capacity(), slots_ + capacity()};
  }
  /// The number of items.
  [[nodiscard]] size_type size() const noexcept { return size_; }
  /// True if there is no item.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// The hash.
  [[nodiscard]] hasher hash_function() const { return hash_; }

  /// The item of `key`, or end().
  [[nodiscard]] iterator find(const K& key) { return {locate(key), slots_ + capacity()}; }
  /// The item of `key`, or end().
  [[nodiscard]] const_iterator find(const K& key) const {
    return {const_cast<flat_map*>(this)->locate(key), slots_ + capacity()};
  }
  /// True if `key` has an item.
  [[nodiscard]] bool contains(const K& key) const { return find(key) != end(); }
  /// 1 if `key` has an item, else 0.
  [[nodiscard]] size_type count(const K& key) const { return contains(key) ? 1 : 0; }

  /// Inserts (key, V(args...)) (a set: key, no args) unless `key` has an item. Returns the
  /// item and true if new.
  template <class Key, class... Args>
  std::pair<iterator, bool> try_emplace(Key&& key, Args&&... args) {
    const std::uint64_t m = mix(key);
    return try_emplace_hashed(m, std::forward<Key>(key), std::forward<Args>(args)...);
  }
  /// The hash by which `key` picks its slot, for the `_hashed` calls: a batch of inserts hashes
  /// its keys, prefetches their slots, then inserts, so that the batch's misses overlap.
  [[nodiscard]] std::uint64_t slot_hash(const K& key) const { return mix(key); }
  /// Starts loading the slot where the item of slot hash `m` would be looked for first.
  void prefetch(std::uint64_t m) const noexcept {
    if (slots_) __builtin_prefetch(slots_ + (m >> shift()));
  }
  /// try_emplace of a key whose slot_hash is `m`.
  template <class Key, class... Args>
  std::pair<iterator, bool> try_emplace_hashed(std::uint64_t m, Key&& key, Args&&... args) {
    if (slot* s = lookup(m, key)) return {{s, slots_ + capacity()}, false};
    return {{place(m, std::forward<Key>(key), std::forward<Args>(args)...), slots_ + capacity()},
            true};
  }
  /// A set: inserts `key` unless it is there. Returns its item and true if new.
  template <class Key>
  requires is_set std::pair<iterator, bool> insert(Key&& key) {
    return try_emplace(std::forward<Key>(key));
  }
  /// The value of `key`, inserted as V() if missing.
  template <class W = V>
  requires(!is_set) W& operator[](const K& key) { return try_emplace(key).first->second; }
  /// The value of `key`, inserted as V() if missing.
  template <class W = V>
  requires(!is_set) W& operator[](K&& key) { return try_emplace(std::move(key)).first->second; }
  /// Sets the value of `key` to `value` (inserting it if missing). Returns the item and true
  /// if new.
  template <class Key, class Value>
  requires(!is_set) std::pair<iterator, bool> insert_or_assign(Key&& key, Value&& value) {
    auto r = try_emplace(std::forward<Key>(key), std::forward<Value>(value));
    if (!r.second) r.first->second = std::forward<Value>(value);
    return r;
  }
  /// Removes the item of `key`. Returns the number removed (0 or 1).
  size_type erase(const K& key) {
    slot* s = locate(key);
    if (s == slots_ + capacity()) return 0;
    remove(s);
    return 1;
  }
  /// Removes every item for which `pred(item)` is true. Returns the number removed.
  template <class Pred>
  friend size_type erase_if(flat_map& m, Pred pred) {
    // A removal shifts later items back into the slot: it is looked at again until it keeps
    // its item. (At the wrap, items the loop has kept may shift to later slots and be looked
    // at twice; none is skipped.)
    size_type removed = 0;
    for (size_type i = 0; i < m.capacity();) {
      slot& s = m.slots_[i];
      if (s.tag != 0 && pred(std::as_const(*item_of(&s)))) {
        m.remove(&s);
        ++removed;
      } else {
        ++i;
      }
    }
    return removed;
  }
  /// Removes every item (the slots stay).
  void clear() noexcept {
    for (size_type i = 0; i < capacity(); ++i)
      if (slots_[i].tag != 0) {
        std::destroy_at(item_of(&slots_[i]));
        slots_[i].tag = 0;
      }
    size_ = 0;
  }
  /// Room for `n` items before the slots grow.
  void reserve(size_type n) {
    size_type want = 8;
    while (want / 4 * 3 < n) want *= 2;
    if (want > capacity()) rehash(want);
  }

 private:
  static value_type* item_of(slot* s) noexcept {
    return std::launder(reinterpret_cast<value_type*>(s->item));
  }
  static const value_type* item_of(const slot* s) noexcept {
    return std::launder(reinterpret_cast<const value_type*>(s->item));
  }
  static const K& key_of(const value_type& v) noexcept {
    if constexpr (is_set)
      return v;
    else
      return v.first;
  }
  template <class It, class S>
  It first(S* slots) const noexcept {
    It it(slots, slots + capacity());
    it.skip();
    return it;
  }
  [[nodiscard]] size_type capacity() const noexcept { return slots_ ? mask_ + 1 : 0; }
  [[nodiscard]] int shift() const noexcept { return 64 - std::countr_zero(mask_ + 1); }
  // Fibonacci hashing: the top bits of the product pick the slot, whatever bits the hash
  // varies in (identity-hashed keys that are multiples of a power of two spread too).
  [[nodiscard]] std::uint64_t mix(const K& key) const {
    return static_cast<std::uint64_t>(hash_(key)) * 0x9E3779B97F4A7C15ULL;
  }
  static std::uint8_t tag_of(std::uint64_t m) noexcept {
    return static_cast<std::uint8_t>(0x80u | (m & 0x7fu));
  }
  // The slot of the item of `key` (mixed hash m), or nullptr.
  slot* lookup(std::uint64_t m, const K& key) {
    if (!slots_) return nullptr;
    const std::uint8_t tag = tag_of(m);
    for (size_type i = m >> shift();; i = (i + 1) & mask_) {
      slot& s = slots_[i];
      if (s.tag == 0) return nullptr;
      if (s.tag == tag && eq_(key_of(*item_of(&s)), key)) return &s;
    }
  }
  slot* locate(const K& key) {
    slot* s = lookup(mix(key), key);
    return s ? s : slots_ + capacity();
  }
  // Inserts a new item (its key has none) with mixed hash m; returns its slot.
  template <class Key, class... Args>
  slot* place(std::uint64_t m, Key&& key, Args&&... args) {
    const size_type old_capacity = capacity();
    slot* old = nullptr;
    if ((size_ + 1) * 4 > old_capacity * 3) old = fresh_slots(old_capacity ? old_capacity * 2 : 8);
    // Made before the old items move: `key` or `args` may be their values.
    size_type i = m >> shift();
    while (slots_[i].tag != 0) i = (i + 1) & mask_;
    slot& s = slots_[i];
    try {
      if constexpr (is_set) {
        static_assert(sizeof...(Args) == 0, "a flat_set's item is its key alone");
        ::new (static_cast<void*>(s.item)) value_type(std::forward<Key>(key));
      } else {
        ::new (static_cast<void*>(s.item))
            value_type(std::piecewise_construct, std::forward_as_tuple(std::forward<Key>(key)),
                       std::forward_as_tuple(std::forward<Args>(args)...));
      }
    } catch (...) {
      if (old) {  // the items are still in the old slots
        std::allocator<slot>{}.deallocate(slots_, capacity());
        slots_ = old;
        mask_ = old_capacity - 1;
      }
      throw;
    }
    s.tag = tag_of(m);
    ++size_;
    if (old) move_from(old, old_capacity);
    return &s;
  }
  // Moves the item of slot `from` into the empty slot `to` (a map's key is copied: it is
  // const).
  static void relocate(slot& from, slot& to) {
    value_type* v = item_of(&from);
    if constexpr (is_set)
      ::new (static_cast<void*>(to.item)) value_type(std::move(*v));
    else
      ::new (static_cast<void*>(to.item)) value_type(v->first, std::move(v->second));
    to.tag = from.tag;
    std::destroy_at(v);
    from.tag = 0;
  }
  // Removes the item of slot `s`, shifting the items after it back so no lookup meets a gap
  // before its key's item (no tombstones).
  void remove(slot* s) {
    std::destroy_at(item_of(s));
    s->tag = 0;
    --size_;
    size_type hole = static_cast<size_type>(s - slots_);
    for (size_type j = (hole + 1) & mask_; slots_[j].tag != 0; j = (j + 1) & mask_) {
      const size_type home = mix(key_of(*item_of(&slots_[j]))) >> shift();
      // The item at j may fill the hole if the hole lies between its home slot and j.
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        relocate(slots_[j], slots_[hole]);
        hole = j;
      }
    }
  }
  void rehash(size_type slots) {
    const size_type old_capacity = capacity();
    if (slot* old = fresh_slots(slots)) move_from(old, old_capacity);
  }
  // Replaces the slots by `slots` empty ones; returns the old slots (nullptr if none).
  slot* fresh_slots(size_type slots) {
    slot* old = slots_;
    slots_ = std::allocator<slot>{}.allocate(slots);
    for (size_type i = 0; i < slots; ++i) slots_[i].tag = 0;
    mask_ = slots - 1;
    return old;
  }
  // Moves the items of `old` (its `n` slots) into the slots, then frees them.
  void move_from(slot* old, size_type n) {
    for (size_type i = 0; i < n; ++i)
      if (old[i].tag != 0) {
        size_type j = mix(key_of(*item_of(&old[i]))) >> shift();
        while (slots_[j].tag != 0) j = (j + 1) & mask_;
        relocate(old[i], slots_[j]);
      }
    std::allocator<slot>{}.deallocate(old, n);
  }
  void release() noexcept {
    if (!slots_) return;
    clear();
    std::allocator<slot>{}.deallocate(slots_, capacity());
    slots_ = nullptr;
    mask_ = 0;
  }

  slot* slots_ = nullptr;
  size_type mask_ = 0;  // slots - 1 (a power of two)
  size_type size_ = 0;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] Eq eq_;
};

/// An open-addressing hash set of keys K (flat_map's table with no values): its items are
/// read-only keys.
template <class K, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
using flat_set = flat_map<K, void, Hash, Eq>;

}  // namespace cairn::containers
