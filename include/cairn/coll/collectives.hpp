#pragma once
/// \file
/// The collective operations, shared by `world` and `group` (a mixin: `Derived` provides
/// `coll_target(call)`). Every collective is `i<name>(...) -> request`; the blocking form is
/// `<name>(...)` = `i<name>(...).wait()`. Collectives progress whenever any cairn call runs.

#include <ranges>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/detail.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/transferable.hpp"

namespace cairn::coll {

template <class Derived>
class collectives {
 public:
  /// Non-blocking barrier (dissemination).
  request ibarrier() { return detail::start_barrier(target("ibarrier"), "ibarrier"); }
  /// Blocks until every member entered the barrier.
  void barrier() { detail::start_barrier(target("barrier"), "barrier").wait(); }

  /// Broadcasts `buf` from group rank `root` to every member (binomial tree).
  template <detail::writable_data R>
  request ibcast(R&& buf, int root) {
    return bcast_impl("ibcast", std::forward<R>(buf), root);
  }
  /// Blocking broadcast.
  template <detail::writable_data R>
  void bcast(R&& buf, int root) {
    bcast_impl("bcast", std::forward<R>(buf), root).wait();
  }

  /// Reduces `in` of every member element-wise with `op` into `out` on `root` (`out` is
  /// ignored elsewhere and may be empty there).
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request ireduce(const In& in, Out&& out, int root, Op op = {}) {
    return reduce_impl("ireduce", in, std::forward<Out>(out), root, op);
  }
  /// Blocking reduce.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void reduce(const In& in, Out&& out, int root, Op op = {}) {
    reduce_impl("reduce", in, std::forward<Out>(out), root, op).wait();
  }

  /// Reduces `in` of every member element-wise with `op`; every member gets the result in
  /// `out` (same size as `in`).
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
    requires(!std::ranges::range<Op>)
  request iallreduce(const In& in, Out&& out, Op op = {},
                     allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return allreduce_impl("iallreduce", std::ranges::data(in), std::ranges::size(in),
                          std::forward<Out>(out), op, alg, false);
  }
  /// In-place form: `inout` holds this member's input and receives the result.
  template <detail::writable_data InOut, class Op>
    requires(!std::ranges::range<Op>)
  request iallreduce(InOut&& inout, Op op, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return allreduce_impl("iallreduce", std::ranges::data(inout), std::ranges::size(inout),
                          std::forward<InOut>(inout), op, alg, true);
  }
  /// Blocking allreduce.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
    requires(!std::ranges::range<Op>)
  void allreduce(const In& in, Out&& out, Op op = {},
                 allreduce_algorithm alg = allreduce_algorithm::automatic) {
    allreduce_impl("allreduce", std::ranges::data(in), std::ranges::size(in),
                   std::forward<Out>(out), op, alg, false)
        .wait();
  }
  /// Blocking in-place allreduce.
  template <detail::writable_data InOut, class Op>
    requires(!std::ranges::range<Op>)
  void allreduce(InOut&& inout, Op op, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    allreduce_impl("allreduce", std::ranges::data(inout), std::ranges::size(inout),
                   std::forward<InOut>(inout), op, alg, true)
        .wait();
  }

 private:
  detail::coll_target target(const char* call) const {
    return static_cast<const Derived&>(*this).coll_target(call);
  }

  template <class R>
  request bcast_impl(const char* call, R&& buf, int root) {
    using T = std::ranges::range_value_t<R>;
    const auto t = target(call);
    return detail::start_bcast(t, call, std::ranges::data(buf),
                               detail::checked_bytes(call, t.world_rank, std::ranges::size(buf), sizeof(T)),
                               root);
  }

  template <class In, class Out, class Op>
  request reduce_impl(const char* call, const In& in, Out&& out, int root, const Op& op) {
    using T = std::ranges::range_value_t<In>;
    static_assert(std::is_same_v<T, std::ranges::range_value_t<Out>>,
                  "cairn::reduce: input and output element types differ");
    const auto t = target(call);
    const std::size_t n = std::ranges::size(in);
    detail::checked_bytes(call, t.world_rank, n, sizeof(T));
    if (t.group_rank == root && std::ranges::size(out) != n)
      detail::fail(call, t.world_rank, "output holds ", std::ranges::size(out), " elements, input ", n);
    return detail::start_reduce(t, call, std::ranges::data(in), std::ranges::data(out), n, root,
                                detail::bind_op<T>(op));
  }

  template <class T, class Out, class Op>
  request allreduce_impl(const char* call, const T* in, std::size_t n, Out&& out, const Op& op,
                         allreduce_algorithm alg, bool in_place) {
    static_assert(std::is_same_v<std::remove_const_t<T>, std::ranges::range_value_t<Out>>,
                  "cairn::allreduce: input and output element types differ");
    const auto t = target(call);
    detail::checked_bytes(call, t.world_rank, n, sizeof(T));
    if (!in_place && std::ranges::size(out) != n)
      detail::fail(call, t.world_rank, "output holds ", std::ranges::size(out), " elements, input ", n);
    return detail::start_allreduce(t, call, in, std::ranges::data(out), n,
                                   detail::bind_op<std::remove_const_t<T>>(op), alg);
  }
};

}  // namespace cairn::coll
