#pragma once
/// \file
/// Distributions: which rank owns a global target, and where it sits in that rank's local part.
/// A channel asks its distribution `owner(x)` for every item (AP 3.1: items are addressed to
/// global targets, not ranks), so owner() is inline and divides by multiplication.
///
/// Domains: block, cyclic and block-cyclic distributions own the keys [0, n) (`size()`; n is
/// all of std::uint64_t but its largest value when not given); `contains(k)` is one compare,
/// and a channel rejects a key outside the domain with cairn::error on the sending rank before
/// anything is sent. A negative key of a signed type is outside every domain. The hashed
/// distribution owns every key; a custom one owns whatever its callable maps to a rank.

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "cairn/msg/detail/fast_divider.hpp"
#include "cairn/runtime/error.hpp"

namespace cairn::msg {

/// The domain size of a distribution made without one: every key but the largest 64-bit value.
inline constexpr std::uint64_t all_keys = std::numeric_limits<std::uint64_t>::max();

namespace detail {
/// The bound of a domain of `n` keys as compared by `domain_index`: signed keys past 2^63 - 1
/// do not exist, so their bound stops there and a negative key (converted) lies above it.
struct domain_bound {
  std::uint64_t n;         ///< keys of an unsigned type: [0, n)
  std::uint64_t n_signed;  ///< keys of a signed type: [0, min(n, 2^63))
  /// The domain [0, size).
  explicit domain_bound(std::uint64_t size)
      : n(size),
        n_signed(std::min<std::uint64_t>(
            size, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1)) {}
  /// True if key `k` lies in [0, n): one compare (a negative key converts to 2^63 or more).
  template <class K>
  [[nodiscard]] bool contains(const K& k) const noexcept {
    return key_index(k) < (std::is_signed_v<K> ? n_signed : n);
  }
};
}  // namespace detail

/// The owner of an item found by a key function first: `dist.of(key)` maps an item x to
/// `dist.owner(key(x))`. Made by the `of` member of every distribution.
template <class Base, class KeyFn>
struct keyed_distribution {
  Base base;  ///< the distribution of keys
  KeyFn key;  ///< item -> key
  /// Owner rank of item (or key) `x`: keys that the base takes directly go straight to it.
  template <class X>
  [[nodiscard]] int owner(const X& x) const noexcept {
    if constexpr (std::is_invocable_v<const KeyFn&, const X&>)
      return base.owner(std::invoke(key, x));
    else
      return base.owner(x);
  }
  /// Local index of item (or key) `x` on its owner.
  template <class X>
  [[nodiscard]] std::uint64_t local_index(const X& x) const noexcept {
    if constexpr (std::is_invocable_v<const KeyFn&, const X&>)
      return base.local_index(std::invoke(key, x));
    else
      return base.local_index(x);
  }
  /// The key of item `x` (x itself if it is a key).
  template <class X>
  [[nodiscard]] decltype(auto) key_of(const X& x) const {
    if constexpr (std::is_invocable_v<const KeyFn&, const X&>)
      return std::invoke(key, x);
    else
      return (x);
  }
  /// True if the key of `x` lies in the base's domain.
  template <class X>
  requires requires(const Base& b, const keyed_distribution& d, const X& x) {
    b.contains(d.key_of(x));
  }
  [[nodiscard]] bool contains(const X& x) const noexcept { return base.contains(key_of(x)); }
  /// Number of ranks of the base.
  template <class B = Base>
  requires requires(const B& b) { b.ranks(); }
  [[nodiscard]] int ranks() const noexcept { return base.ranks(); }
  /// Size of the base's domain.
  template <class B = Base>
  requires requires(const B& b) { b.size(); }
  [[nodiscard]] std::uint64_t size() const noexcept { return base.size(); }
};

/// CRTP base giving every distribution `of(key_fn)`.
template <class D>
struct distribution_base {
  /// This distribution applied to `key(item)`.
  template <class KeyFn>
  [[nodiscard]] keyed_distribution<D, KeyFn> of(KeyFn key) const {
    return {static_cast<const D&>(*this), std::move(key)};
  }
  /// The key of `k`: the key itself (keyed distributions apply their key function).
  template <class K>
  [[nodiscard]] static const K& key_of(const K& k) noexcept {
    return k;
  }
};

/// HPF BLOCK: `n` targets in `ranks` contiguous blocks of ceil(n / ranks); rank r owns
/// [r·b, min(n, (r+1)·b)).
class block_distribution : public distribution_base<block_distribution> {
 public:
  /// `n` targets over `ranks` ranks.
  block_distribution(std::uint64_t n, int ranks) : n_(n), ranks_(ranks), bound_(n) {
    if (ranks < 1)
      throw error("cairn::block_distribution: ranks must be >= 1, not " + std::to_string(ranks));
    const std::uint64_t b =
        n == 0 ? 1
               : (n + static_cast<std::uint64_t>(ranks) - 1) / static_cast<std::uint64_t>(ranks);
    div_ = detail::fast_divider(b);
  }
  /// Owner of key `k` (k in [0, n): see contains).
  template <class K>
  [[nodiscard]] int owner(const K& k) const noexcept {
    return static_cast<int>(div_.div(detail::key_index(k)));
  }
  /// True if key `k` lies in the domain [0, n) (one compare).
  template <class K>
  [[nodiscard]] bool contains(const K& k) const noexcept {
    return bound_.contains(k);
  }
  /// Index of key `k` in its owner's block.
  template <class K>
  [[nodiscard]] std::uint64_t local_index(const K& k) const noexcept {
    const std::uint64_t x = detail::key_index(k);
    return x - div_.div(x) * div_.divisor();
  }
  /// Number of targets rank `r` owns.
  [[nodiscard]] std::uint64_t local_size(int r) const noexcept {
    const std::uint64_t b = div_.divisor(), lo = static_cast<std::uint64_t>(r) * b;
    return lo >= n_ ? 0 : std::min(b, n_ - lo);
  }
  /// Number of targets.
  [[nodiscard]] std::uint64_t size() const noexcept { return n_; }
  /// Number of ranks.
  [[nodiscard]] int ranks() const noexcept { return ranks_; }

 private:
  std::uint64_t n_;
  int ranks_;
  detail::domain_bound bound_;
  detail::fast_divider div_;
};

/// HPF CYCLIC: key k lives on rank k mod ranks, at local index k / ranks.
class cyclic_distribution : public distribution_base<cyclic_distribution> {
 public:
  /// Keys [0, all_keys) dealt round-robin over `ranks` ranks.
  explicit cyclic_distribution(int ranks) : cyclic_distribution(all_keys, ranks) {}
  /// The `n` keys [0, n) dealt round-robin over `ranks` ranks.
  cyclic_distribution(std::uint64_t n, int ranks) : ranks_(ranks), bound_(n) {
    if (ranks < 1)
      throw error("cairn::cyclic_distribution: ranks must be >= 1, not " + std::to_string(ranks));
    div_ = detail::fast_divider(static_cast<std::uint64_t>(ranks));
  }
  /// Owner of key `k`.
  template <class K>
  [[nodiscard]] int owner(const K& k) const noexcept {
    const std::uint64_t x = detail::key_index(k);
    return static_cast<int>(x - div_.div(x) * div_.divisor());
  }
  /// Index of key `k` on its owner.
  template <class K>
  [[nodiscard]] std::uint64_t local_index(const K& k) const noexcept {
    return div_.div(detail::key_index(k));
  }
  /// True if key `k` lies in the domain [0, n) (one compare).
  template <class K>
  [[nodiscard]] bool contains(const K& k) const noexcept {
    return bound_.contains(k);
  }
  /// Number of targets (all_keys if not given).
  [[nodiscard]] std::uint64_t size() const noexcept { return bound_.n; }
  /// Number of ranks.
  [[nodiscard]] int ranks() const noexcept { return ranks_; }

 private:
  int ranks_;
  detail::domain_bound bound_;
  detail::fast_divider div_;
};

/// HPF BLOCK-CYCLIC(b): blocks of `b` consecutive keys dealt round-robin over the ranks.
class block_cyclic_distribution : public distribution_base<block_cyclic_distribution> {
 public:
  /// Blocks of `b` keys of [0, n) over `ranks` ranks (n = all_keys if not given).
  block_cyclic_distribution(std::uint64_t b, int ranks, std::uint64_t n = all_keys)
      : ranks_(ranks), bound_(n) {
    if (ranks < 1 || b < 1)
      throw error("cairn::block_cyclic_distribution: need block >= 1 and ranks >= 1, got block " +
                  std::to_string(b) + ", ranks " + std::to_string(ranks));
    block_ = detail::fast_divider(b);
    ranks_div_ = detail::fast_divider(static_cast<std::uint64_t>(ranks));
  }
  /// Owner of key `k`.
  template <class K>
  [[nodiscard]] int owner(const K& k) const noexcept {
    const std::uint64_t blk = block_.div(detail::key_index(k));
    return static_cast<int>(blk - ranks_div_.div(blk) * ranks_div_.divisor());
  }
  /// Index of key `k` on its owner: (k / (b·ranks))·b + k mod b.
  template <class K>
  [[nodiscard]] std::uint64_t local_index(const K& k) const noexcept {
    const std::uint64_t x = detail::key_index(k), blk = block_.div(x);
    return ranks_div_.div(blk) * block_.divisor() + (x - blk * block_.divisor());
  }
  /// True if key `k` lies in the domain [0, n) (one compare).
  template <class K>
  [[nodiscard]] bool contains(const K& k) const noexcept {
    return bound_.contains(k);
  }
  /// Number of targets (all_keys if not given).
  [[nodiscard]] std::uint64_t size() const noexcept { return bound_.n; }
  /// Number of ranks.
  [[nodiscard]] int ranks() const noexcept { return ranks_; }

 private:
  int ranks_;
  detail::domain_bound bound_;
  detail::fast_divider block_, ranks_div_;
};

/// Keys scattered by a hash (for sparse or skewed key spaces; the owner keeps its own map).
/// Every key is in its domain.
class hashed_distribution : public distribution_base<hashed_distribution> {
 public:
  /// Hashed over `ranks` ranks.
  explicit hashed_distribution(int ranks) : ranks_(ranks) {
    if (ranks < 1)
      throw error("cairn::hashed_distribution: ranks must be >= 1, not " + std::to_string(ranks));
  }
  /// Owner of key `k`: a 64-bit mix of k, scaled to [0, ranks) by multiplication.
  template <class K>
  [[nodiscard]] int owner(const K& k) const noexcept {
    std::uint64_t x = detail::key_index(k);
    x ^= x >> 33;  // murmur3 finalizer
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return static_cast<int>((static_cast<detail::uint128>(x) * static_cast<unsigned>(ranks_)) >>
                            64);
  }
  /// Every key is in the domain (the channel's check compiles away).
  template <class K>
  [[nodiscard]] static constexpr bool contains(const K& k) noexcept {
    (void)detail::key_index(k);
    return true;
  }
  /// Number of targets: every 64-bit key.
  [[nodiscard]] static constexpr std::uint64_t size() noexcept { return all_keys; }
  /// Number of ranks.
  [[nodiscard]] int ranks() const noexcept { return ranks_; }

 private:
  int ranks_;
};

/// Any callable `int(const X&)` as a distribution (owner only).
template <class F>
struct custom_distribution : distribution_base<custom_distribution<F>> {
  F fn;  ///< x -> owner rank
  /// Owner of `x`.
  template <class X>
  [[nodiscard]] int owner(const X& x) const {
    return static_cast<int>(std::invoke(fn, x));
  }
};

/// Wraps a callable as a distribution.
template <class F>
[[nodiscard]] custom_distribution<F> distribution(F fn) {
  return custom_distribution<F>{{}, std::move(fn)};
}

/// The owner rank of `x` under `d`: `d.owner(x)`, or `d(x)` for a plain callable.
template <class D, class X>
[[nodiscard]] int owner_under(const D& d, const X& x) {
  if constexpr (requires { d.owner(x); })
    return static_cast<int>(d.owner(x));
  else
    return static_cast<int>(std::invoke(d, x));
}

/// What a channel accepts as its distribution for items of type T: anything with owner(T).
template <class D, class T>
concept distribution_for = requires(const D& d, const T& x) {
  { d.owner(x) } -> std::convertible_to<int>;
};

/// A distribution that knows its domain and ranks (the built-in ones): `contains(x)` is true
/// for the keys it owns, and then `owner(x)` lies in [0, ranks()). A channel checks such keys
/// with contains() instead of checking the owner rank.
template <class D, class X>
concept bounded_distribution_for = requires(const D& d, const X& x) {
  { d.contains(x) } -> std::same_as<bool>;
  {d.key_of(x)};
  { d.size() } -> std::convertible_to<std::uint64_t>;
  { d.ranks() } -> std::convertible_to<int>;
};

}  // namespace cairn::msg

namespace cairn {
using msg::all_keys;
using msg::block_cyclic_distribution;
using msg::block_distribution;
using msg::cyclic_distribution;
using msg::hashed_distribution;
}  // namespace cairn
