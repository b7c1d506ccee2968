#pragma once
// The plan caches of the start functions, one per rank (kept in its context,
// rank_context::layer). Plans are pure functions of their key, so a repeated collective plans
// and allocates nothing.

#include <cstddef>
#include <unordered_map>

namespace cairn::detail {

/// Values by key, made on first use; cleared when `Bound` entries are reached (keys that vary
/// forever). Values handed out must be copied by callers that keep them past the next get().
template <class Key, class Value, class Hash, std::size_t Bound>
class bounded_cache {
 public:
  /// The value of `k`; `make()` makes it on a miss.
  template <class Make>
  const Value& get(const Key& k, Make&& make) {
    if (auto it = map_.find(k); it != map_.end()) return it->second;
    if (map_.size() >= Bound) map_.clear();
    return map_.emplace(k, make()).first->second;
  }

 private:
  std::unordered_map<Key, Value, Hash> map_;
};

}  // namespace cairn::detail
