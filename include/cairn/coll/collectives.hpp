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

  /// Gathers `in` (n elements, the same n on every member) of every member to group rank
  /// `root` (binomial tree): on the root, `out` must hold at least size() x n elements and gets
  /// member i's block at [i n, (i + 1) n); elsewhere `out` is ignored and may be empty. Where
  /// both are used, `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request igather(const In& in, Out&& out, int root) {
    return gather_impl("igather", in, out, root);
  }
  /// Blocking gather.
  template <detail::contiguous_data In, detail::writable_data Out>
  void gather(const In& in, Out&& out, int root) {
    gather_impl("gather", in, out, root).wait();
  }

  /// Scatters the input of group rank `root` (binomial tree): every member receives a block of
  /// n = out.size() elements (the same n everywhere), member i the block [i n, (i + 1) n) of
  /// the root's `in`, which must hold at least size() x n elements; elsewhere `in` is ignored
  /// and may be empty. Where both are used, `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request iscatter(const In& in, Out&& out, int root) {
    return scatter_impl("iscatter", in, out, root);
  }
  /// Blocking scatter.
  template <detail::contiguous_data In, detail::writable_data Out>
  void scatter(const In& in, Out&& out, int root) {
    scatter_impl("scatter", in, out, root).wait();
  }

  /// Gathers `in` (n elements, the same n on every member) of every member to every member:
  /// `out` must hold at least size() x n elements and gets member i's block at [i n, (i + 1) n).
  /// `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request iallgather(const In& in, Out&& out, allgather_algorithm alg = allgather_algorithm::automatic) {
    return allgather_impl("iallgather", in, out, alg);
  }
  /// Blocking allgather.
  template <detail::contiguous_data In, detail::writable_data Out>
  void allgather(const In& in, Out&& out, allgather_algorithm alg = allgather_algorithm::automatic) {
    allgather_impl("allgather", in, out, alg).wait();
  }

  /// Personalized all-to-all exchange (pairwise): `in` holds size() blocks of n elements (the
  /// same n on every member); block j goes to member j, and block i of `out` (which must hold
  /// at least size() x n elements) comes from member i. `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request ialltoall(const In& in, Out&& out) {
    return alltoall_impl("ialltoall", in, out);
  }
  /// Blocking alltoall.
  template <detail::contiguous_data In, detail::writable_data Out>
  void alltoall(const In& in, Out&& out) {
    alltoall_impl("alltoall", in, out).wait();
  }

  /// Reduces `in` of every member element-wise with `op` and scatters the result in blocks
  /// (MPI_Reduce_scatter_block): `in` holds size() blocks of n = out.size() elements (the same
  /// n on every member; at least size() x n elements) and member i gets block i of the
  /// reduction, [i n, (i + 1) n), in `out`. `in` and `out` must not overlap. Operands are
  /// combined in rank order unless `op` is commutative.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request ireduce_scatter_block(const In& in, Out&& out, Op op = {},
                                reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    return reduce_scatter_block_impl("ireduce_scatter_block", in, out, op, alg);
  }
  /// Blocking reduce_scatter_block.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void reduce_scatter_block(const In& in, Out&& out, Op op = {},
                            reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    reduce_scatter_block_impl("reduce_scatter_block", in, out, op, alg).wait();
  }

  /// Inclusive prefix reduction in group-rank order (MPI_Scan, recursive doubling): member i
  /// gets in_0 op in_1 op ... op in_i, element-wise, in `out` (same size as `in`; they must not
  /// overlap).
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request iscan(const In& in, Out&& out, Op op = {}) {
    return scan_impl("iscan", in, out, op, false);
  }
  /// Blocking scan.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void scan(const In& in, Out&& out, Op op = {}) {
    scan_impl("scan", in, out, op, false).wait();
  }

  /// Exclusive prefix reduction in group-rank order (MPI_Exscan, recursive doubling): member
  /// i > 0 gets in_0 op ... op in_(i-1), element-wise, in `out` (same size as `in`; they must
  /// not overlap). The output of member 0 is left untouched.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request iexscan(const In& in, Out&& out, Op op = {}) {
    return scan_impl("iexscan", in, out, op, true);
  }
  /// Blocking exscan.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void exscan(const In& in, Out&& out, Op op = {}) {
    scan_impl("exscan", in, out, op, true).wait();
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

  template <class In, class Out>
  static detail::block_buffers buffers_of(const In& in, Out& out) {
    return {std::ranges::data(in), std::ranges::size(in), std::ranges::data(out),
            std::ranges::size(out), sizeof(std::ranges::range_value_t<In>)};
  }

  template <class In, class Out>
  static constexpr bool same_elements =
      std::is_same_v<std::ranges::range_value_t<In>, std::ranges::range_value_t<Out>>;

  template <class In, class Out>
  request gather_impl(const char* call, const In& in, Out& out, int root) {
    static_assert(same_elements<In, Out>, "cairn::gather: input and output element types differ");
    return detail::start_gather(target(call), call, buffers_of(in, out), root);
  }

  template <class In, class Out>
  request scatter_impl(const char* call, const In& in, Out& out, int root) {
    static_assert(same_elements<In, Out>, "cairn::scatter: input and output element types differ");
    return detail::start_scatter(target(call), call, buffers_of(in, out), root);
  }

  template <class In, class Out>
  request allgather_impl(const char* call, const In& in, Out& out, allgather_algorithm alg) {
    static_assert(same_elements<In, Out>, "cairn::allgather: input and output element types differ");
    return detail::start_allgather(target(call), call, buffers_of(in, out), alg);
  }

  template <class In, class Out>
  request alltoall_impl(const char* call, const In& in, Out& out) {
    static_assert(same_elements<In, Out>, "cairn::alltoall: input and output element types differ");
    return detail::start_alltoall(target(call), call, buffers_of(in, out));
  }

  template <class In, class Out, class Op>
  request reduce_scatter_block_impl(const char* call, const In& in, Out& out, const Op& op,
                                    reduce_scatter_block_algorithm alg) {
    static_assert(same_elements<In, Out>,
                  "cairn::reduce_scatter_block: input and output element types differ");
    return detail::start_reduce_scatter_block(target(call), call, buffers_of(in, out),
                                              detail::bind_op<std::ranges::range_value_t<In>>(op), alg);
  }

  template <class In, class Out, class Op>
  request scan_impl(const char* call, const In& in, Out& out, const Op& op, bool exclusive) {
    static_assert(same_elements<In, Out>, "cairn::scan: input and output element types differ");
    const auto t = target(call);
    const auto b = buffers_of(in, out);
    const auto bound = detail::bind_op<std::ranges::range_value_t<In>>(op);
    return exclusive ? detail::start_exscan(t, call, b, bound) : detail::start_scan(t, call, b, bound);
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
