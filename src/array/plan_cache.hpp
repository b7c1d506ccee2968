#pragma once
// A rank's cache of plans (redistribution plans, halo plans), keyed by everything a plan
// depends on as bytes, most recently used first. A rank is one thread: no lock.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cairn/array/detail/layout_desc.hpp"

namespace cairn::detail {

/// The bytes of a plan's key.
struct plan_key {
  std::string bytes;
  /// Appends a plain value.
  template <class T>
  void put(const T& v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  /// Appends a list of ranks, with its length.
  void put_ranks(const std::vector<int>& v) {
    put(v.size());
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int));
  }
  /// Appends what a plan reads of a dimension's distribution.
  void put_dim(const dim_map& m) {
    put(m.n);
    put(m.g);
    put(m.k);
    put(m.rep);
  }
};

/// The plan of `key` from this rank's cache of `Plan`s (at most `Capacity`), else `make()`'s,
/// kept.
template <class Plan, std::size_t Capacity, class Make>
std::shared_ptr<const Plan> cached(plan_key&& key, Make&& make) {
  struct entry {
    std::string key;
    std::shared_ptr<const Plan> plan;
  };
  thread_local std::vector<entry> cache;
  for (std::size_t i = 0; i < cache.size(); ++i) {
    if (cache[i].key == key.bytes) {
      auto plan = cache[i].plan;
      std::rotate(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(i),
                  cache.begin() + static_cast<std::ptrdiff_t>(i) + 1);  // most recent first
      return plan;
    }
  }
  std::shared_ptr<const Plan> plan = std::forward<Make>(make)();
  if (cache.size() == Capacity) cache.pop_back();
  cache.insert(cache.begin(), entry{std::move(key.bytes), plan});
  return plan;
}

}  // namespace cairn::detail
