#pragma once
/// \file
/// `cairn::containers::bag`: an unordered collection of items spread over the ranks (YGM's
/// bag). `async_insert(x)` places an item on a rank (round robin from each source, or on the
/// rank given); `rebalance()` evens the ranks' counts out; `shuffle(seed)` sends every item to
/// a random rank and permutes each rank's items. Complete after world::quiesce().

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::containers {

/// A bag of items T (trivially copyable or serializable). Created collectively (in the same
/// order as channels on every rank).
template <class T, class Route = cairn::msg::route::direct>
class bag {
 public:
  /// Item type.
  using value_type = T;

  /// An empty bag on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  explicit bag(const Ranks& on, container_options opts = {}, Route route = {})
      : ranks_(on),
        next_(on.rank()),
        calls_(on, *this, std::move(route), detail::call_options(opts, "bag")) {}
  bag(const bag&) = delete;
  bag& operator=(const bag&) = delete;

  /// Places `x` on the next rank in round-robin order from this rank.
  void async_insert(const T& x) {
    const int dest = next_;
    next_ = next_ + 1 == ranks_.size() ? 0 : next_ + 1;
    async_insert(x, dest);
  }
  /// Places `x` on rank `dest`.
  void async_insert(const T& x, int dest) {
    if (static_cast<unsigned>(dest) >= static_cast<unsigned>(ranks_.size()))
      cairn::detail::fail("bag::async_insert", ranks_.world_rank(), "target rank ", dest,
                          " is outside the ", ranks_.kind(), " of ", ranks_.size(), " ranks");
    calls_.template call<insert_op>(dest, x);
  }
  /// This rank's items (complete after world::quiesce()).
  [[nodiscard]] const std::vector<T>& local() const noexcept { return local_; }
  /// This rank's items, to change locally.
  [[nodiscard]] std::vector<T>& local() noexcept { return local_; }
  /// Calls `f(item)` for every item of this rank (items it places on this rank arrive after
  /// the last; messages from other ranks wait too).
  template <class F>
  void for_all(F&& f) {
    detail::with_calls_held(calls_.records(), [&] {
      for (auto& x : local_) f(x);
    });
  }
  /// Collective: the number of items over all ranks.
  [[nodiscard]] std::uint64_t size() {
    return ranks_.allreduce(static_cast<std::uint64_t>(local_.size()), cairn::plus{});
  }
  /// Collective: moves items so that rank r holds N/P items, plus one if r < N mod P (N items
  /// over P ranks), keeping the items' order by (rank, local position).
  void rebalance() {
    ranks_.quiesce();
    const int p = ranks_.size();
    const auto n = static_cast<std::uint64_t>(local_.size());
    const std::uint64_t total = ranks_.allreduce(n, cairn::plus{});
    const std::uint64_t before = ranks_.exscan(n, cairn::plus{});
    const std::uint64_t first = ranks_.rank() == 0 ? 0 : before;
    std::vector<T> mine = std::move(local_);
    local_.clear();
    const std::uint64_t base = total / static_cast<std::uint64_t>(p);
    const std::uint64_t extra = total % static_cast<std::uint64_t>(p);
    // Rank r's block starts at r * base + min(r, extra).
    auto block_of = [&](std::uint64_t i) {
      const std::uint64_t big = extra * (base + 1);
      return static_cast<int>(i < big ? i / (base + 1)
                                      : extra + (i - big) / std::max<std::uint64_t>(base, 1));
    };
    // Items arrive in any order: each carries its global index, and every rank sorts its
    // block by it at the end.
    for (std::uint64_t j = 0; j < mine.size(); ++j)
      calls_.template call<place_op>(block_of(first + j), first + j, mine[j]);
    ranks_.quiesce();
    std::sort(arrived_.begin(), arrived_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    local_.reserve(arrived_.size());
    for (auto& [i, x] : arrived_) local_.push_back(std::move(x));
    arrived_.clear();
  }
  /// Collective: sends every item to a random rank, then permutes each rank's items
  /// (deterministic for a given seed and rank count).
  void shuffle(std::uint64_t seed) {
    ranks_.quiesce();
    std::mt19937_64 g(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(ranks_.rank()));
    std::vector<T> mine = std::move(local_);
    local_.clear();
    for (auto& x : mine)
      calls_.template call<insert_op>(
          static_cast<int>(g() % static_cast<std::uint64_t>(ranks_.size())), x);
    ranks_.quiesce();
    std::shuffle(local_.begin(), local_.end(), g);
  }
  /// Collective: ends the phase (quiesce on its ranks) and empties the bag.
  void clear() {
    ranks_.quiesce_and_empty([this] { local_.clear(); });
  }

 private:
  struct insert_op {
    void operator()(bag& self, T&& x) const { self.local_.push_back(std::move(x)); }
  };
  struct place_op {
    void operator()(bag& self, std::uint64_t index, T&& x) const {
      self.arrived_.emplace_back(index, std::move(x));
    }
  };

  detail::container_ranks ranks_;
  int next_;
  std::vector<T> local_;
  std::vector<std::pair<std::uint64_t, T>> arrived_;  // rebalance: items with their index
  detail::container_calls<bag, Route> calls_;  // last: deliveries may start in its constructor
};

}  // namespace cairn::containers
