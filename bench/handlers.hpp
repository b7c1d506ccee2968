#pragma once
/// \file
/// The two handler forms the channel benchmarks compare: one item per call, or a batch handler
/// that prefetches the memory of the items ahead (cairn::for_each_prefetched).

#include <span>

#include "cairn/msg/prefetch.hpp"

namespace cairn::bench {

/// `use` as a per-item handler of a channel of T or, if Batched, a batch handler that calls it
/// on each item after prefetching `place` of the items ahead.
template <class T, bool Batched, class Place, class Use>
auto handler_of(Place place, Use use) {
  if constexpr (Batched)
    return [=](std::span<const T> items) { cairn::for_each_prefetched(items, place, use); };
  else
    return use;
}

}  // namespace cairn::bench
