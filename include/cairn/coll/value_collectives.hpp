#pragma once
/// \file
/// The value forms of the collectives: `double s = w.allreduce(x, cairn::plus{})`,
/// `auto all = w.allgather(x)`, `T v = w.bcast(x, root)`, `auto mine = w.scatter(per_rank, root)`,
/// for values of any cairn::sendable type, and the v-forms whose ranks contribute different
/// numbers of items (`gatherv`, `allgatherv`, `scatterv`, `alltoallv`). Counts and sizes are
/// exchanged by cairn: nobody passes a byte count.
///
/// How a value travels (as point-to-point, cairn/runtime/p2p_values.hpp): a trivially copyable
/// value as its bytes, through the buffer collectives with no extra step (its result is the
/// output buffer); a list of trivially copyable items (std::vector, std::string) as its
/// elements, sizes first; everything else serialized (cairn/runtime/serialize.hpp) into one
/// buffer per rank, sizes first, then the bytes by a v-collective, then loaded. The reductions
/// take trivially copyable values only.
///
/// Overloads: a non-const lvalue range of trivially copyable elements (vector<int>, string,
/// span) still selects the buffer forms of coll::collectives (`w.bcast(v, 0)` broadcasts into
/// v, whose size must agree everywhere; `w.allreduce(v, op)` reduces in place). The value forms
/// of ranges take const ranges: `auto s = w.allreduce(std::as_const(v), op)`.
///
/// Non-blocking forms return cairn::value_request (wait() gives the value). Values are copied
/// or serialized at the call, so temporaries are welcome, except the input of `iscatter` of
/// trivially copyable values on the root, which is read where it is (it must outlive the
/// request). A non-blocking collective of two steps keeps its place in issue order: collectives
/// issued after it may start before its second step without mismatching.

#include <cstddef>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/detail/item_exchange.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/operation.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/value_request.hpp"

namespace cairn::detail {

/// Keeps `Keep` alive while the collective it feeds runs (started before it is handed over).
template <class Keep>
class keeping_operation final : public operation {
 public:
  /// `keep` owns the buffers `req` uses.
  keeping_operation(std::unique_ptr<Keep> keep, request req)
      : keep_(std::move(keep)), req_(std::move(req)) {}
  bool advance() override { return req_.test(); }
  [[nodiscard]] std::string describe() const override { return "value collective"; }

 private:
  std::unique_ptr<Keep> keep_;
  request req_;
};

/// A value request whose value is `slot`'s, filled by `req` (`slot` is taken by reference so
/// that it is moved from only after `req`, which uses it, was made).
template <class T>
value_request<T> value_of(request req, std::unique_ptr<value_slot<T>>& slot) {
  return value_request<T>(std::move(req), std::move(slot));
}

}  // namespace cairn::detail

namespace cairn::coll {

/// The value forms of the collectives (a mixin of coll::collectives: `Derived`, the world or a
/// group, provides `coll_target(call)`, `rank()` and `size()`).
template <class Derived>
class value_collectives {
 public:
  // ----- reductions of trivially copyable values ---------------------------------------------

  /// Reduces `x` of every member with `op`; every member gets the result.
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) T
      allreduce(const T& x, Op op = {}, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    T out = x;
    detail::run_allreduce(target("allreduce"), "allreduce", &x, &out, 1, detail::bind_op<T>(op),
                          alg);
    return out;
  }
  /// Non-blocking allreduce of a value (the request's value is the output buffer).
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) value_request<T> iallreduce(
      const T& x, Op op = {}, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    auto slot = make_slot<T>(x);
    T* v = &slot->value;
    return detail::value_of(
        detail::start_prepared(detail::prepare_allreduce(target("iallreduce"), "iallreduce", v, v,
                                                         1, detail::bind_op<T>(op), alg)),
        slot);
  }
  /// Reduces a const range of every member element-wise with `op` into a new vector on every
  /// member. (A non-const range is reduced in place by the buffer form `allreduce(buf, op)`.)
  template <detail::contiguous_data R, class Op>
  requires(!std::ranges::range<Op>) std::vector<std::ranges::range_value_t<R>> allreduce(
      const R& range, Op op, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    using E = std::ranges::range_value_t<R>;
    std::vector<E> out(std::ranges::begin(range), std::ranges::end(range));
    detail::run_blocking(detail::prepare_allreduce(target("allreduce"), "allreduce", out.data(),
                                                   out.data(), out.size(), detail::bind_op<E>(op),
                                                   alg));
    return out;
  }
  /// Non-blocking allreduce of a const range into a new vector.
  template <detail::contiguous_data R, class Op>
  requires(!std::ranges::range<Op>)
      value_request<std::vector<std::ranges::range_value_t<R>>> iallreduce(
          const R& range, Op op, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    using E = std::ranges::range_value_t<R>;
    auto slot = make_slot<std::vector<E>>(range);
    E* v = slot->value.data();
    return detail::value_of(detail::start_prepared(detail::prepare_allreduce(
                                target("iallreduce"), "iallreduce", v, v, slot->value.size(),
                                detail::bind_op<E>(op), alg)),
                            slot);
  }

  /// Reduces `x` of every member with `op` to group rank `root`, which gets the result; the
  /// others get `x` back.
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) T
      reduce(const T& x, int root, Op op = {}, reduce_algorithm alg = reduce_algorithm::automatic) {
    T out = x;
    detail::run_blocking(detail::prepare_reduce(target("reduce"), "reduce", &x, &out, 1, root,
                                                detail::bind_op<T>(op), alg));
    return out;
  }
  /// Non-blocking reduce of a value.
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) value_request<T> ireduce(
      const T& x, int root, Op op = {}, reduce_algorithm alg = reduce_algorithm::automatic) {
    auto slot = make_slot<T>(x);
    T* v = &slot->value;
    return detail::value_of(
        detail::start_prepared(detail::prepare_reduce(target("ireduce"), "ireduce", v, v, 1, root,
                                                      detail::bind_op<T>(op), alg)),
        slot);
  }
  /// Reduces a range of every member element-wise with `op` to group rank `root`: a new vector
  /// there, an empty one elsewhere.
  template <detail::contiguous_data R, class Op = plus>
  requires(!std::ranges::range<Op>) std::vector<std::ranges::range_value_t<R>> reduce(
      const R& range, int root, Op op = {}, reduce_algorithm alg = reduce_algorithm::automatic) {
    using E = std::ranges::range_value_t<R>;
    const auto t = target("reduce");
    std::vector<E> out;
    if (t.group_rank == root) out.assign(std::ranges::begin(range), std::ranges::end(range));
    const E* in = t.group_rank == root ? out.data() : std::ranges::data(range);
    detail::run_blocking(detail::prepare_reduce(
        t, "reduce", in, out.data(), std::ranges::size(range), root, detail::bind_op<E>(op), alg));
    return out;
  }
  /// Non-blocking reduce of a range into a new vector (empty off the root).
  template <detail::contiguous_data R, class Op = plus>
  requires(!std::ranges::range<Op>)
      value_request<std::vector<std::ranges::range_value_t<R>>> ireduce(
          const R& range, int root, Op op = {},
          reduce_algorithm alg = reduce_algorithm::automatic) {
    using E = std::ranges::range_value_t<R>;
    const auto t = target("ireduce");
    auto slot = make_slot<std::vector<E>>(range);
    if (t.group_rank != root) slot->check = [](auto& s, const status&) { s.value = {}; };
    E* v = slot->value.data();
    return detail::value_of(
        detail::start_prepared(detail::prepare_reduce(t, "ireduce", v, v, slot->value.size(), root,
                                                      detail::bind_op<E>(op), alg)),
        slot);
  }

  /// Inclusive prefix reduction of values in group-rank order: member i gets
  /// x_0 op ... op x_i.
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) T scan(const T& x, Op op = {}) {
    T out = x;
    detail::run_blocking(
        detail::prepare_scan(target("scan"), "scan", one(x, out), detail::bind_op<T>(op)));
    return out;
  }
  /// Non-blocking scan of a value.
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) value_request<T> iscan(const T& x, Op op = {}) {
    auto slot = make_slot<T>(x);
    return detail::value_of(
        detail::start_prepared(detail::prepare_scan(
            target("iscan"), "iscan", one_in_place(slot->value), detail::bind_op<T>(op))),
        slot);
  }
  /// Element-wise inclusive prefix reduction of a range into a new vector.
  template <detail::contiguous_data R, class Op = plus>
  requires(!std::ranges::range<Op>) std::vector<std::ranges::range_value_t<R>> scan(const R& range,
                                                                                    Op op = {}) {
    using E = std::ranges::range_value_t<R>;
    std::vector<E> out(std::ranges::begin(range), std::ranges::end(range));
    detail::run_blocking(detail::prepare_scan(target("scan"), "scan", in_place_buffers(out),
                                              detail::bind_op<E>(op)));
    return out;
  }
  /// Exclusive prefix reduction of values in group-rank order: member i > 0 gets
  /// x_0 op ... op x_(i-1); member 0 gets T{} (value-initialized: 0 for numbers, the identity
  /// of plus).
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) T exscan(const T& x, Op op = {}) {
    T out{};
    detail::run_blocking(
        detail::prepare_exscan(target("exscan"), "exscan", one(x, out), detail::bind_op<T>(op)));
    return out;
  }
  /// Non-blocking exscan of a value.
  template <detail::trivial_single T, class Op = plus>
  requires(!std::ranges::range<Op>) value_request<T> iexscan(const T& x, Op op = {}) {
    const auto t = target("iexscan");
    auto slot = make_slot<T>(x);
    if (t.group_rank == 0) slot->check = [](auto& s, const status&) { s.value = T{}; };
    return detail::value_of(detail::start_prepared(detail::prepare_exscan(
                                t, "iexscan", one_in_place(slot->value), detail::bind_op<T>(op))),
                            slot);
  }
  /// Element-wise exclusive prefix reduction of a range into a new vector (value-initialized
  /// elements on member 0).
  template <detail::contiguous_data R, class Op = plus>
  requires(!std::ranges::range<Op>) &&
      std::is_default_constructible_v<std::ranges::range_value_t<R>> std::vector<
          std::ranges::range_value_t<R>> exscan(const R& range, Op op = {}) {
    using E = std::ranges::range_value_t<R>;
    std::vector<E> out(std::ranges::size(range));
    detail::run_blocking(detail::prepare_exscan(
        target("exscan"), "exscan",
        {std::ranges::data(range), std::ranges::size(range), out.data(), out.size(), sizeof(E)},
        detail::bind_op<E>(op)));
    return out;
  }

  // ----- bcast ----------------------------------------------------------------------------------

  /// Broadcasts the value `x` of group rank `root` (read there only) and returns it on every
  /// member: any cairn::sendable value, and lists (std::vector, std::string) sized by the root's.
  template <detail::coll_value T>
  T bcast(const T& x, int root) {
    const auto t = target("bcast");
    if constexpr (detail::trivial_single<T>) {
      T out = x;
      detail::run_blocking(
          detail::prepare_bcast(t, "bcast", &out, sizeof(T), root, bcast_algorithm::automatic));
      return out;
    } else {
      auto x_ = exchange_for<T>(t, "bcast", detail::exchange_kind::bcast, root);
      if (t.group_rank == root) add_value(*x_, x, true);
      detail::run_exchange(*x_);
      if (t.group_rank == root) return x;
      return take<T>(*x_);
    }
  }
  /// In-place broadcast of a single value: `x` of group rank `root` overwrites `x` elsewhere.
  /// (A non-const range of trivially copyable elements takes the buffer form instead, whose
  /// size must agree everywhere.)
  template <detail::coll_single T>
  requires(!std::is_const_v<T>) void bcast(T& x, int root) {
    const auto t = target("bcast");
    if constexpr (detail::trivial_single<T>) {
      detail::run_blocking(
          detail::prepare_bcast(t, "bcast", &x, sizeof(T), root, bcast_algorithm::automatic));
    } else {
      auto x_ = exchange_for<T>(t, "bcast", detail::exchange_kind::bcast, root);
      if (t.group_rank == root) add_value(*x_, x, true);
      detail::run_exchange(*x_);
      if (t.group_rank != root) x = take<T>(*x_);
    }
  }
  /// Non-blocking broadcast of a value (copied or serialized at the call).
  template <detail::coll_value T>
  value_request<T> ibcast(const T& x, int root) {
    const auto t = target("ibcast");
    if constexpr (detail::trivial_single<T>) {
      auto slot = make_slot<T>(x);
      return detail::value_of(
          detail::start_prepared(detail::prepare_bcast(t, "ibcast", &slot->value, sizeof(T), root,
                                                       bcast_algorithm::automatic)),
          slot);
    } else {
      auto x_ = exchange_for<T>(t, "ibcast", detail::exchange_kind::bcast, root);
      const bool is_root = t.group_rank == root;
      if (is_root) add_value(*x_, x, false);
      auto keep = is_root ? x : T{};
      return detail::start_exchange<T>(t, "ibcast", std::move(x_),
                                       [keep = std::move(keep), is_root](auto& ex, T& v) mutable {
                                         v = is_root ? std::move(keep) : take<T>(ex);
                                       });
    }
  }
  /// Non-blocking in-place broadcast of a single value: `x` must outlive the request.
  template <detail::coll_single T>
  requires(!std::is_const_v<T>) request ibcast(T& x, int root) {
    const auto t = target("ibcast");
    if constexpr (detail::trivial_single<T>) {
      return detail::start_prepared(
          detail::prepare_bcast(t, "ibcast", &x, sizeof(T), root, bcast_algorithm::automatic));
    } else {
      auto x_ = exchange_for<T>(t, "ibcast", detail::exchange_kind::bcast, root);
      const bool is_root = t.group_rank == root;
      if (is_root) add_value(*x_, x, false);
      return detail::start_exchange_request(t, "ibcast", std::move(x_), [&x, is_root](auto& ex) {
        if (!is_root) x = take<T>(ex);
      });
    }
  }

  // ----- gather, allgather ---------------------------------------------------------------------

  /// Gathers `x` of every member to group rank `root`: there, the values in group-rank order;
  /// elsewhere an empty vector. For a list (std::vector<E>, std::string), one list per member
  /// (sizes may differ): the per-rank form of gatherv.
  template <detail::coll_value T>
  std::vector<T> gather(const T& x, int root) {
    const auto t = target("gather");
    if constexpr (detail::trivial_single<T>) {
      std::vector<T> out(t.group_rank == root ? group_size() : 0);
      detail::run_blocking(
          detail::prepare_gather(t, "gather", {&x, 1, out.data(), out.size(), sizeof(T)}, root));
      return out;
    } else {
      auto x_ = exchange_for<T>(t, "gather", detail::exchange_kind::gather, root);
      add_value(*x_, x, true);
      detail::run_exchange(*x_);
      if (t.group_rank != root) return {};
      return take_all<T>(*x_);
    }
  }
  /// Non-blocking gather of a value.
  template <detail::coll_value T>
  value_request<std::vector<T>> igather(const T& x, int root) {
    const auto t = target("igather");
    if constexpr (detail::trivial_single<T>) {
      auto slot = std::make_unique<detail::value_slot<std::vector<T>>>();
      slot->rank = t.world_rank;
      detail::prepared p;
      if (t.group_rank == root) {
        slot->value.resize(group_size());
        slot->value.at(static_cast<std::size_t>(root)) = x;
        p = detail::prepare_gather(t, "igather", in_place_buffers(slot->value), root);
      } else {
        slot->value.assign(1, x);
        slot->check = [](auto& s, const status&) { s.value.clear(); };
        p = detail::prepare_gather(t, "igather", {slot->value.data(), 1, nullptr, 0, sizeof(T)},
                                   root);
      }
      return detail::value_of(detail::start_prepared(std::move(p)), slot);
    } else {
      auto x_ = exchange_for<T>(t, "igather", detail::exchange_kind::gather, root);
      add_value(*x_, x, false);
      const bool is_root = t.group_rank == root;
      return detail::start_exchange<std::vector<T>>(t, "igather", std::move(x_),
                                                    [is_root](auto& ex, std::vector<T>& v) {
                                                      if (is_root) v = take_all<T>(ex);
                                                    });
    }
  }

  /// Gathers `x` of every member to every member, in group-rank order. For a list, one list
  /// per member (the per-rank form of allgatherv).
  template <detail::coll_value T>
  std::vector<T> allgather(const T& x) {
    const auto t = target("allgather");
    if constexpr (detail::trivial_single<T>) {
      std::vector<T> out(group_size());
      detail::run_blocking(detail::prepare_allgather(t, "allgather",
                                                     {&x, 1, out.data(), out.size(), sizeof(T)},
                                                     allgather_algorithm::automatic));
      return out;
    } else {
      auto x_ = exchange_for<T>(t, "allgather", detail::exchange_kind::allgather);
      add_value(*x_, x, true);
      detail::run_exchange(*x_);
      return take_all<T>(*x_);
    }
  }
  /// Non-blocking allgather of a value.
  template <detail::coll_value T>
  value_request<std::vector<T>> iallgather(const T& x) {
    const auto t = target("iallgather");
    if constexpr (detail::trivial_single<T>) {
      auto slot = std::make_unique<detail::value_slot<std::vector<T>>>();
      slot->rank = t.world_rank;
      slot->value.resize(group_size());
      slot->value[static_cast<std::size_t>(t.group_rank)] = x;
      return detail::value_of(
          detail::start_prepared(detail::prepare_allgather(
              t, "iallgather", in_place_buffers(slot->value), allgather_algorithm::automatic)),
          slot);
    } else {
      auto x_ = exchange_for<T>(t, "iallgather", detail::exchange_kind::allgather);
      add_value(*x_, x, false);
      return detail::start_exchange<std::vector<T>>(
          t, "iallgather", std::move(x_), [](auto& ex, std::vector<T>& v) { v = take_all<T>(ex); });
    }
  }

  // ----- scatter, alltoall ---------------------------------------------------------------------

  /// Scatters the values of group rank `root`: member i gets per_rank[i]. `per_rank` is read
  /// on the root only, where it must hold size() values.
  template <detail::coll_value T>
  T scatter(const std::vector<T>& per_rank, int root) {
    const auto t = target("scatter");
    if (t.group_rank == root) check_count(t, "scatter", "per_rank", per_rank.size());
    if constexpr (detail::trivial_single<T>) {
      T out{};
      detail::run_blocking(detail::prepare_scatter(
          t, "scatter", {per_rank.data(), per_rank.size(), &out, 1, sizeof(T)}, root));
      return out;
    } else {
      auto x_ = exchange_for<T>(t, "scatter", detail::exchange_kind::scatter, root);
      if (t.group_rank == root) add_values(*x_, per_rank);
      detail::run_exchange(*x_);
      return take<T>(*x_);
    }
  }
  /// Non-blocking scatter. Trivially copyable values are read from the root's `per_rank`
  /// while the request runs (it must outlive the request); others are serialized at the call.
  template <detail::coll_value T>
  value_request<T> iscatter(const std::vector<T>& per_rank, int root) {
    const auto t = target("iscatter");
    if (t.group_rank == root) check_count(t, "iscatter", "per_rank", per_rank.size());
    if constexpr (detail::trivial_single<T>) {
      auto slot = make_slot<T>(T{});
      return detail::value_of(
          detail::start_prepared(detail::prepare_scatter(
              t, "iscatter", {per_rank.data(), per_rank.size(), &slot->value, 1, sizeof(T)}, root)),
          slot);
    } else {
      auto x_ = exchange_for<T>(t, "iscatter", detail::exchange_kind::scatter, root);
      if (t.group_rank == root) add_values(*x_, per_rank);
      return detail::start_exchange<T>(t, "iscatter", std::move(x_),
                                       [](auto& ex, T& v) { v = take<T>(ex); });
    }
  }
  /// Rejected for trivially copyable values: the request would read the temporary after it is
  /// gone.
  template <detail::trivial_single T>
  value_request<T> iscatter(const std::vector<T>&& per_rank, int root) = delete;

  /// Personalized all-to-all of values: per_dest[j] goes to member j (per_dest holds size()
  /// values on every member); element i of the result came from member i. For lists, one list
  /// per member each way (alltoallv).
  template <detail::coll_value T>
  std::vector<T> alltoall(const std::vector<T>& per_dest) {
    const auto t = target("alltoall");
    check_count(t, "alltoall", "per_dest", per_dest.size());
    if constexpr (detail::trivial_single<T>) {
      std::vector<T> out(per_dest.size());
      detail::run_blocking(detail::prepare_alltoall(
          t, "alltoall", {per_dest.data(), per_dest.size(), out.data(), out.size(), sizeof(T)},
          alltoall_algorithm::automatic));
      return out;
    } else {
      auto x_ = exchange_for<T>(t, "alltoall", detail::exchange_kind::alltoall);
      add_values(*x_, per_dest);
      detail::run_exchange(*x_);
      return take_all<T>(*x_);
    }
  }
  /// Non-blocking alltoall of values.
  template <detail::coll_value T>
  value_request<std::vector<T>> ialltoall(const std::vector<T>& per_dest) {
    const auto t = target("ialltoall");
    check_count(t, "ialltoall", "per_dest", per_dest.size());
    if constexpr (detail::trivial_single<T>) {
      auto slot = make_slot<std::vector<T>>(per_dest);
      return detail::value_of(
          detail::start_prepared(detail::prepare_alltoall(
              t, "ialltoall", in_place_buffers(slot->value), alltoall_algorithm::automatic)),
          slot);
    } else {
      auto x_ = exchange_for<T>(t, "ialltoall", detail::exchange_kind::alltoall);
      add_values(*x_, per_dest);
      return detail::start_exchange<std::vector<T>>(
          t, "ialltoall", std::move(x_), [](auto& ex, std::vector<T>& v) { v = take_all<T>(ex); });
    }
  }

  // ----- v-forms: a variable number of items per member -----------------------------------

  /// Gathers the items of every member to group rank `root`: there, their concatenation in
  /// group-rank order; elsewhere an empty vector. Items are trivially copyable (moved as
  /// elements, no serialization) or serializable. The per-rank form: gather(std::vector).
  template <detail::item_range R>
  std::vector<std::ranges::range_value_t<R>> gatherv(const R& mine, int root) {
    using E = std::ranges::range_value_t<R>;
    const auto t = target("gatherv");
    detail::item_exchange<E> x(t, "gatherv", detail::exchange_kind::gather, group_size_int(), root);
    add_items(x, mine, true);
    detail::run_exchange(x);
    if (t.group_rank != root) return {};
    return x.items();
  }
  /// Non-blocking gatherv (the items are copied or serialized at the call).
  template <detail::item_range R>
  value_request<std::vector<std::ranges::range_value_t<R>>> igatherv(const R& mine, int root) {
    using E = std::ranges::range_value_t<R>;
    const auto t = target("igatherv");
    auto x = std::make_unique<detail::item_exchange<E>>(
        t, "igatherv", detail::exchange_kind::gather, group_size_int(), root);
    add_items(*x, mine, false);
    const bool is_root = t.group_rank == root;
    return detail::start_exchange<std::vector<E>>(t, "igatherv", std::move(x),
                                                  [is_root](auto& ex, std::vector<E>& v) {
                                                    if (is_root) v = ex.items();
                                                  });
  }

  /// Gathers the items of every member to every member, concatenated in group-rank order. The
  /// per-rank form: allgather(std::vector).
  template <detail::item_range R>
  std::vector<std::ranges::range_value_t<R>> allgatherv(const R& mine) {
    using E = std::ranges::range_value_t<R>;
    const auto t = target("allgatherv");
    detail::item_exchange<E> x(t, "allgatherv", detail::exchange_kind::allgather, group_size_int());
    add_items(x, mine, true);
    detail::run_exchange(x);
    return x.items();
  }
  /// Non-blocking allgatherv.
  template <detail::item_range R>
  value_request<std::vector<std::ranges::range_value_t<R>>> iallgatherv(const R& mine) {
    using E = std::ranges::range_value_t<R>;
    const auto t = target("iallgatherv");
    auto x = std::make_unique<detail::item_exchange<E>>(
        t, "iallgatherv", detail::exchange_kind::allgather, group_size_int());
    add_items(*x, mine, false);
    return detail::start_exchange<std::vector<E>>(
        t, "iallgatherv", std::move(x), [](auto& ex, std::vector<E>& v) { v = ex.items(); });
  }

  /// Scatters lists of items from group rank `root`: member i gets per_rank[i] (read on the
  /// root only, where it must hold size() lists).
  template <detail::coll_item E>
  std::vector<E> scatterv(const std::vector<std::vector<E>>& per_rank, int root) {
    return scatter(per_rank, root);
  }
  /// Non-blocking scatterv.
  template <detail::coll_item E>
  value_request<std::vector<E>> iscatterv(const std::vector<std::vector<E>>& per_rank, int root) {
    return iscatter(per_rank, root);
  }

  /// Personalized all-to-all of lists: per_dest[j] (size() lists on every member) goes to
  /// member j; element i of the result is the list member i sent here.
  template <detail::coll_item E>
  std::vector<std::vector<E>> alltoallv(const std::vector<std::vector<E>>& per_dest) {
    return alltoall(per_dest);
  }
  /// Non-blocking alltoallv.
  template <detail::coll_item E>
  value_request<std::vector<std::vector<E>>> ialltoallv(
      const std::vector<std::vector<E>>& per_dest) {
    return ialltoall(per_dest);
  }

 private:
  detail::coll_target target(const char* call) const {
    return static_cast<const Derived&>(*this).coll_target(call);
  }
  int group_size_int() const { return static_cast<const Derived&>(*this).size(); }
  std::size_t group_size() const { return static_cast<std::size_t>(group_size_int()); }

  // Fails unless a per-member vector holds one value per member.
  void check_count(const detail::coll_target& t, const char* call, const char* what,
                   std::size_t n) const {
    if (n != group_size())
      detail::fail(call, t.world_rank, what, " holds ", n, " values, the group has ", group_size(),
                   " members");
  }

  // A value slot holding `init` (a range is copied into the slot's vector).
  template <class T, class Init>
  static std::unique_ptr<detail::value_slot<T>> make_slot(const Init& init) {
    auto slot = std::make_unique<detail::value_slot<T>>();
    if constexpr (std::is_same_v<T, Init> || !std::ranges::range<Init>)
      slot->value = init;
    else
      slot->value.assign(std::ranges::begin(init), std::ranges::end(init));
    return slot;
  }

  // One element in, one out.
  template <class T>
  static detail::block_buffers one(const T& in, T& out) {
    return {&in, 1, &out, 1, sizeof(T)};
  }
  template <class T>
  static detail::block_buffers one_in_place(T& v) {
    return {&v, 1, &v, 1, sizeof(T), true};
  }
  template <class E>
  static detail::block_buffers in_place_buffers(std::vector<E>& v) {
    return {v.data(), v.size(), v.data(), v.size(), sizeof(E), true};
  }

  // The items an exchange moves for values of type T.
  template <class T>
  struct item_of {
    using type = T;
  };
  template <class T>
  requires detail::item_list<T>
  struct item_of<T> {
    using type = detail::list_item_t<T>;
  };
  template <class T>
  using item_t = typename item_of<T>::type;

  template <class T>
  std::unique_ptr<detail::item_exchange<item_t<T>>> exchange_for(const detail::coll_target& t,
                                                                 const char* call,
                                                                 detail::exchange_kind k,
                                                                 int root = -1) {
    return std::make_unique<detail::item_exchange<item_t<T>>>(t, call, k, group_size_int(), root);
  }

  // Adds `x` as one outgoing chunk (a list's items, or one item); `view`: trivially copyable
  // items are sent from where they are (blocking calls).
  template <class T, class E>
  static void add_value(detail::item_exchange<E>& ex, const T& x, bool view) {
    if constexpr (detail::item_list<T>)
      add_items(ex, x, view);
    else
      ex.add_item(x);
  }
  template <class R, class E>
  static void add_items(detail::item_exchange<E>& ex, const R& items, bool view) {
    if constexpr (detail::transferable<E>) {
      const std::span<const E> s(std::ranges::data(items), std::ranges::size(items));
      if (view)
        ex.view_chunk(s);
      else
        ex.add_chunk(s);
    } else {
      ex.add_chunk(items);
    }
  }
  template <class T, class E>
  static void add_values(detail::item_exchange<E>& ex, const std::vector<T>& values) {
    ex.expect_chunks(values.size());
    for (const T& v : values) add_value(ex, v, false);
  }

  // The one incoming value, and one value per member.
  template <class T, class E>
  static T take(detail::item_exchange<E>& ex) {
    if constexpr (detail::item_list<T>)
      return ex.template list<T>();
    else
      return ex.item();
  }
  template <class T, class E>
  static std::vector<T> take_all(detail::item_exchange<E>& ex) {
    if constexpr (detail::item_list<T>)
      return ex.template lists<T>();
    else
      return ex.items();
  }
};

}  // namespace cairn::coll
