#pragma once
/// \file
/// `cairn::containers::array`: a fixed-size array of n values, block-distributed over the
/// ranks (YGM's array): `async_set(i, v)`, `async_visit(i, f, args...)`, `async_reduce(i, v,
/// merge)` run at the owner of index i; complete after world::quiesce(). An index outside
/// [0, n) is refused with cairn::error on the calling rank before anything is sent.

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/containers/detail/keyed.hpp"
#include "cairn/msg/distribution.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::containers {

/// An array of `n` values of type T (trivially copyable or serializable), in blocks of
/// consecutive indices (cairn::block_distribution). Created collectively (in the same order
/// as channels on every rank).
template <class T, class Route = cairn::msg::route::direct>
class array {
 public:
  /// Value type.
  using value_type = T;

  /// `n` values equal to `init`, on the ranks of `on`: the world, or a group (made by its members;
  /// its ranks are then group ranks, and group::quiesce ends its phases). Calls travel by
  /// `route`.
  template <cairn::msg::channel_ranks Ranks>
  array(const Ranks& on, std::uint64_t n, const T& init = T{}, container_options opts = {},
        Route route = {})
      : ranks_(on),
        dist_(n, on.size()),
        first_(first_index(dist_, on.rank())),
        local_(static_cast<std::size_t>(dist_.local_size(on.rank())), init),
        calls_(on, *this, std::move(route), detail::call_options(opts, "array")) {}
  array(const array&) = delete;
  array& operator=(const array&) = delete;

  /// Sets value `i` to `v` at its owner.
  void async_set(std::uint64_t i, const T& v) {
    calls_.template call<set_op>(owner(checked(i, "array::async_set")), i, v);
  }
  /// Runs `f(i, value, args...)` at the owner on value `i`. `f` is a stateless function
  /// object; it may take the array first (`f(array&, i, value, args...)`) to make further calls.
  template <class F, class... A>
  void async_visit(std::uint64_t i, F, const A&... args) {
    calls_.template call<visit_op<F, cairn::msg::detail::wire_type<A>...>>(
        owner(checked(i, "array::async_visit")), i, args...);
  }
  /// Merges `v` into value `i` at its owner: `value = merge(value, v)` (a stateless function
  /// object `T(const T&, const T&)`).
  template <class Merge>
  void async_reduce(std::uint64_t i, const T& v, Merge) {
    static_assert(std::is_invocable_r_v<T, Merge&, const T&, const T&>,
                  "merge must be callable as T merge(const T&, const T&)");
    calls_.template call<reduce_op<Merge>>(owner(checked(i, "array::async_reduce")), i, v);
  }

  /// Number of values.
  [[nodiscard]] std::uint64_t size() const noexcept { return dist_.size(); }
  /// The owner rank of index `i` (in [0, size())).
  [[nodiscard]] int owner(std::uint64_t i) const { return static_cast<int>(dist_.owner(i)); }
  /// The global index of this rank's first value.
  [[nodiscard]] std::uint64_t local_first() const noexcept { return first_; }
  /// This rank's values (indices local_first() onwards; complete after world::quiesce()).
  [[nodiscard]] std::vector<T>& local() noexcept { return local_; }
  /// This rank's values.
  [[nodiscard]] const std::vector<T>& local() const noexcept { return local_; }
  /// Calls `f(i, value)` for every value of this rank.
  template <class F>
  void for_all(F&& f) {
    for (std::size_t j = 0; j < local_.size(); ++j) f(first_ + j, local_[j]);
  }
  /// Collective: every value, in order, on rank `root` (empty on other ranks).
  [[nodiscard]] std::vector<T> gather(int root) {
    std::vector<T> out;
    for (auto& part : ranks_.gather(local_, root)) out.insert(out.end(), part.begin(), part.end());
    return out;
  }

 private:
  static std::uint64_t first_index(const cairn::block_distribution& d, int rank) {
    std::uint64_t first = 0;
    for (int r = 0; r < rank; ++r) first += d.local_size(r);
    return first;
  }
  std::uint64_t checked(std::uint64_t i, const char* call) const {
    if (i >= dist_.size())
      cairn::detail::fail(call, ranks_.world_rank(), "index ", i, " is outside the array of ",
                          dist_.size(), " values");
    return i;
  }
  T& at(std::uint64_t i) { return local_[static_cast<std::size_t>(dist_.local_index(i))]; }

  struct set_op {
    void operator()(array& self, std::uint64_t i, T&& v) const { self.at(i) = std::move(v); }
  };
  template <class F, class... A>
  struct visit_op {
    void operator()(array& self, std::uint64_t i, A&&... args) const {
      F f{};
      if constexpr (std::is_invocable_v<F&, array&, std::uint64_t, T&, A&...>)
        f(self, i, self.at(i), args...);
      else
        f(i, self.at(i), args...);
    }
  };
  template <class Merge>
  struct reduce_op {
    void operator()(array& self, std::uint64_t i, T&& v) const {
      T& x = self.at(i);
      x = Merge{}(x, v);
    }
  };

  detail::container_ranks ranks_;
  cairn::block_distribution dist_;
  std::uint64_t first_;
  std::vector<T> local_;
  detail::container_calls<array, Route> calls_;  // last: deliveries may start in its constructor
};

}  // namespace cairn::containers
