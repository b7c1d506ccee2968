#pragma once
/// \file
/// `cairn::for_each_prefetched`: the loop of a batch handler whose items each touch a random
/// place in memory (a counter, a table slot, a vertex). A per-item handler takes those cache
/// misses one after the other; a loop that asks for the places of the next items while it works
/// on this one keeps several misses in flight, as a plain loop over an array lets the processor
/// do by itself.
///
///     auto ch = cairn::make_channel<std::uint64_t>(w, dist,
///         [&](std::span<const std::uint64_t> keys) {
///           cairn::for_each_prefetched(keys,
///               [&](std::uint64_t k) { return &table[dist.local_index(k)]; },
///               [&](std::uint64_t k) { ++table[dist.local_index(k)]; });
///         });

#include <algorithm>
#include <cstddef>
#include <span>

namespace cairn::msg {

/// Items a for_each_prefetched loop looks ahead by default: enough misses in flight to cover a
/// memory access, few enough that the prefetched lines are still cached when they are used.
inline constexpr std::size_t prefetch_distance = 16;

/// Calls `use(x)` for each item x of `items` in order, having prefetched `place(y)` (a pointer
/// to the memory the item y will touch) for the item y `distance` places ahead.
template <class T, class Place, class Use>
void for_each_prefetched(std::span<const T> items, Place place, Use use,
                         std::size_t distance = prefetch_distance) {
  const std::size_t n = items.size();
  for (std::size_t k = 0; k < std::min(n, distance); ++k) __builtin_prefetch(place(items[k]));
  for (std::size_t k = 0; k < n; ++k) {
    if (k + distance < n) __builtin_prefetch(place(items[k + distance]));
    use(items[k]);
  }
}

}  // namespace cairn::msg

namespace cairn {
using msg::for_each_prefetched;
}  // namespace cairn
