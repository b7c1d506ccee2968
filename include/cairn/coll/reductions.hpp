#pragma once
/// \file
/// The reductions: reduce, allreduce, reduce_scatter_block, reduce_scatter, scan and exscan
/// (see cairn/coll/collectives.hpp for the forms and cairn/coll/op.hpp for the operations).

#include <cstddef>
#include <ranges>
#include <type_traits>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/count_list.hpp"
#include "cairn/coll/detail/blocks.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/in_place.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/coll/persistent.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::coll {

/// reduce, allreduce, reduce_scatter_block, reduce_scatter, scan and exscan (a mixin of
/// coll::collectives: `Derived`, the world or a group, provides `coll_target(call)`).
template <class Derived>
class reduction_collectives {
 public:
  /// Reduces `in` of every member element-wise with `op` into `out` on `root` (`out` is
  /// ignored elsewhere and may be empty there).
  template <detail::lasting_input In, detail::lasting_output Out, class Op = plus>
  request ireduce(In&& in, Out&& out, int root, Op op = {},
                  reduce_algorithm alg = reduce_algorithm::automatic) {
    return detail::start_prepared(reduce_impl("ireduce", in, out, root, op, alg));
  }
  /// Blocking reduce.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void reduce(const In& in, Out&& out, int root, Op op = {},
              reduce_algorithm alg = reduce_algorithm::automatic) {
    detail::run_blocking(reduce_impl("reduce", in, out, root, op, alg));
  }
  /// Persistent reduce.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  reduce_init(In&& in, Out&& out, int root, Op op = {},
              reduce_algorithm alg = reduce_algorithm::automatic) {
    return persistent_request(reduce_impl("reduce_init", in, out, root, op, alg));
  }
  /// In-place reduce: `buf` holds this member's input and, on `root`, receives the result
  /// (elsewhere it is only read).
  template <detail::lasting_output R, class Op = plus>
  request ireduce(in_place_t, R&& buf, int root, Op op = {},
                  reduce_algorithm alg = reduce_algorithm::automatic) {
    return detail::start_prepared(reduce_impl("ireduce", buf, buf, root, op, alg));
  }
  /// Blocking in-place reduce.
  template <detail::writable_data R, class Op = plus>
  void reduce(in_place_t, R&& buf, int root, Op op = {},
              reduce_algorithm alg = reduce_algorithm::automatic) {
    detail::run_blocking(reduce_impl("reduce", buf, buf, root, op, alg));
  }
  /// Persistent in-place reduce.
  template <detail::writable_data R, class Op = plus>
  requires std::ranges::borrowed_range<R> persistent_request
  reduce_init(in_place_t, R&& buf, int root, Op op = {},
              reduce_algorithm alg = reduce_algorithm::automatic) {
    return persistent_request(reduce_impl("reduce_init", buf, buf, root, op, alg));
  }

  /// Reduces `in` of every member element-wise with `op`; every member gets the result in
  /// `out` (same size as `in`).
  template <detail::lasting_input In, detail::lasting_output Out, class Op = plus>
  requires(!std::ranges::range<Op>) request
      iallreduce(In&& in, Out&& out, Op op = {},
                 allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return detail::start_prepared(allreduce_impl("iallreduce", std::ranges::data(in),
                                                 std::ranges::size(in), out, op, alg, false));
  }
  /// In-place form: `inout` holds this member's input and receives the result.
  template <detail::lasting_output InOut, class Op>
  requires(!std::ranges::range<Op>) request
      iallreduce(InOut&& inout, Op op, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return detail::start_prepared(allreduce_impl("iallreduce", std::ranges::data(inout),
                                                 std::ranges::size(inout), inout, op, alg, true));
  }
  /// Blocking allreduce.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires(!std::ranges::range<Op>) void allreduce(
      const In& in, Out&& out, Op op = {},
      allreduce_algorithm alg = allreduce_algorithm::automatic) {
    allreduce_blocking(std::ranges::data(in), std::ranges::size(in), out, op, alg, false);
  }
  /// Blocking in-place allreduce.
  template <detail::writable_data InOut, class Op>
  requires(!std::ranges::range<Op>) void allreduce(
      InOut&& inout, Op op, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    allreduce_blocking(std::ranges::data(inout), std::ranges::size(inout), inout, op, alg, true);
  }
  /// Persistent allreduce.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires(!std::ranges::range<Op>) &&
      std::ranges::borrowed_range<In>&& std::ranges::borrowed_range<Out> persistent_request
      allreduce_init(In&& in, Out&& out, Op op = {},
                     allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return persistent_request(allreduce_impl("allreduce_init", std::ranges::data(in),
                                             std::ranges::size(in), out, op, alg, false));
  }
  /// Persistent in-place allreduce.
  template <detail::writable_data InOut, class Op>
  requires(!std::ranges::range<Op>) && std::ranges::borrowed_range<InOut> persistent_request
      allreduce_init(InOut&& inout, Op op,
                     allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return persistent_request(allreduce_impl("allreduce_init", std::ranges::data(inout),
                                             std::ranges::size(inout), inout, op, alg, true));
  }
  /// In-place allreduce with the tag, as the other in-place forms (same as `iallreduce(buf, op)`).
  template <detail::lasting_output R, class Op = plus>
  requires(!std::ranges::range<Op>) request
      iallreduce(in_place_t, R&& buf, Op op = {},
                 allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return iallreduce(buf, op, alg);
  }
  /// Blocking in-place allreduce with the tag.
  template <detail::writable_data R, class Op = plus>
  requires(!std::ranges::range<Op>) void allreduce(
      in_place_t, R&& buf, Op op = {}, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    allreduce(buf, op, alg);
  }
  /// Persistent in-place allreduce with the tag.
  template <detail::writable_data R, class Op = plus>
  requires(!std::ranges::range<Op>) && std::ranges::borrowed_range<R> persistent_request
      allreduce_init(in_place_t, R&& buf, Op op = {},
                     allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return allreduce_init(buf, op, alg);
  }

  /// Reduces `in` of every member element-wise with `op` and scatters the result in blocks
  /// (MPI_Reduce_scatter_block): `in` holds size() blocks of n = out.size() elements (the same
  /// n on every member; at least size() x n elements) and member i gets block i of the
  /// reduction, [i n, (i + 1) n), in `out`. `in` and `out` must not overlap. Operands are
  /// combined in rank order unless `op` is commutative.
  template <detail::lasting_input In, detail::lasting_output Out, class Op = plus>
  request ireduce_scatter_block(
      In&& in, Out&& out, Op op = {},
      reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    return detail::start_prepared(
        reduce_scatter_block_impl("ireduce_scatter_block", in, out, op, alg));
  }
  /// Blocking reduce_scatter_block.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void reduce_scatter_block(
      const In& in, Out&& out, Op op = {},
      reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    detail::run_blocking(reduce_scatter_block_impl("reduce_scatter_block", in, out, op, alg));
  }
  /// Persistent reduce_scatter_block.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  reduce_scatter_block_init(
      In&& in, Out&& out, Op op = {},
      reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    return persistent_request(
        reduce_scatter_block_impl("reduce_scatter_block_init", in, out, op, alg));
  }
  /// In-place reduce_scatter_block (MPI semantics): `buf` holds the size() x n input, and this
  /// member's block of the reduction lands in its first n elements (the rest is left as is).
  template <detail::lasting_output R, class Op = plus>
  request ireduce_scatter_block(
      in_place_t, R&& buf, Op op = {},
      reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    return detail::start_prepared(
        reduce_scatter_block_impl("ireduce_scatter_block", in_place, buf, op, alg));
  }
  /// Blocking in-place reduce_scatter_block.
  template <detail::writable_data R, class Op = plus>
  void reduce_scatter_block(
      in_place_t, R&& buf, Op op = {},
      reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    detail::run_blocking(reduce_scatter_block_impl("reduce_scatter_block", in_place, buf, op, alg));
  }
  /// Persistent in-place reduce_scatter_block.
  template <detail::writable_data R, class Op = plus>
  requires std::ranges::borrowed_range<R> persistent_request reduce_scatter_block_init(
      in_place_t, R&& buf, Op op = {},
      reduce_scatter_block_algorithm alg = reduce_scatter_block_algorithm::automatic) {
    return persistent_request(
        reduce_scatter_block_impl("reduce_scatter_block_init", in_place, buf, op, alg));
  }

  /// Inclusive prefix reduction in group-rank order (MPI_Scan, recursive doubling): member i
  /// gets in_0 op in_1 op ... op in_i, element-wise, in `out` (same size as `in`; they must not
  /// overlap).
  template <detail::lasting_input In, detail::lasting_output Out, class Op = plus>
  request iscan(In&& in, Out&& out, Op op = {}) {
    return detail::start_prepared(scan_impl("iscan", in, out, op, false));
  }
  /// Blocking scan.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void scan(const In& in, Out&& out, Op op = {}) {
    detail::run_blocking(scan_impl("scan", in, out, op, false));
  }
  /// Persistent scan.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  scan_init(In&& in, Out&& out, Op op = {}) {
    return persistent_request(scan_impl("scan_init", in, out, op, false));
  }
  /// In-place scan: `buf` holds this member's input and receives its prefix.
  template <detail::lasting_output R, class Op = plus>
  request iscan(in_place_t, R&& buf, Op op = {}) {
    return detail::start_prepared(scan_impl("iscan", in_place, buf, op, false));
  }
  /// Blocking in-place scan.
  template <detail::writable_data R, class Op = plus>
  void scan(in_place_t, R&& buf, Op op = {}) {
    detail::run_blocking(scan_impl("scan", in_place, buf, op, false));
  }
  /// Persistent in-place scan.
  template <detail::writable_data R, class Op = plus>
  requires std::ranges::borrowed_range<R> persistent_request scan_init(in_place_t, R&& buf,
                                                                       Op op = {}) {
    return persistent_request(scan_impl("scan_init", in_place, buf, op, false));
  }

  /// Exclusive prefix reduction in group-rank order (MPI_Exscan, recursive doubling): member
  /// i > 0 gets in_0 op ... op in_(i-1), element-wise, in `out` (same size as `in`; they must
  /// not overlap). The output of member 0 is left untouched.
  template <detail::lasting_input In, detail::lasting_output Out, class Op = plus>
  request iexscan(In&& in, Out&& out, Op op = {}) {
    return detail::start_prepared(scan_impl("iexscan", in, out, op, true));
  }
  /// Blocking exscan.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void exscan(const In& in, Out&& out, Op op = {}) {
    detail::run_blocking(scan_impl("exscan", in, out, op, true));
  }
  /// Persistent exscan.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  exscan_init(In&& in, Out&& out, Op op = {}) {
    return persistent_request(scan_impl("exscan_init", in, out, op, true));
  }
  /// In-place exscan: `buf` holds this member's input and receives its exclusive prefix (member
  /// 0's is left as is).
  template <detail::lasting_output R, class Op = plus>
  request iexscan(in_place_t, R&& buf, Op op = {}) {
    return detail::start_prepared(scan_impl("iexscan", in_place, buf, op, true));
  }
  /// Blocking in-place exscan.
  template <detail::writable_data R, class Op = plus>
  void exscan(in_place_t, R&& buf, Op op = {}) {
    detail::run_blocking(scan_impl("exscan", in_place, buf, op, true));
  }
  /// Persistent in-place exscan.
  template <detail::writable_data R, class Op = plus>
  requires std::ranges::borrowed_range<R> persistent_request exscan_init(in_place_t, R&& buf,
                                                                         Op op = {}) {
    return persistent_request(scan_impl("exscan_init", in_place, buf, op, true));
  }

  /// Reduces `in` of every member element-wise with `op` and scatters blocks of different
  /// sizes (MPI_Reduce_scatter, pairwise): `in` holds the blocks packed in rank order
  /// (counts[0] + ... elements), member i gets block i of the reduction in the first
  /// counts[i] elements of `out`. Every member passes the same `counts`. Operands are combined
  /// in rank order.
  template <detail::lasting_input In, detail::lasting_output Out, class Op = plus>
  request ireduce_scatter(In&& in, Out&& out, count_list counts, Op op = {}) {
    return detail::start_prepared(reduce_scatter_impl("ireduce_scatter", in, out, counts, op));
  }
  /// Blocking reduce_scatter.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void reduce_scatter(const In& in, Out&& out, count_list counts, Op op = {}) {
    detail::run_blocking(reduce_scatter_impl("reduce_scatter", in, out, counts, op));
  }
  /// Persistent reduce_scatter.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  reduce_scatter_init(In&& in, Out&& out, count_list counts, Op op = {}) {
    return persistent_request(reduce_scatter_impl("reduce_scatter_init", in, out, counts, op));
  }

 private:
  detail::coll_target target(const char* call) const {
    return static_cast<const Derived&>(*this).coll_target(call);
  }

  template <class In, class Out, class Op>
  detail::prepared reduce_impl(const char* call, const In& in, Out& out, int root, const Op& op,
                               reduce_algorithm alg) {
    using T = std::ranges::range_value_t<In>;
    static_assert(std::is_same_v<T, std::ranges::range_value_t<Out>>,
                  "cairn::reduce: input and output element types differ");
    const auto t = target(call);
    const std::size_t n = std::ranges::size(in);
    detail::checked_bytes(call, t.world_rank, n, sizeof(T));
    if (t.group_rank == root && std::ranges::size(out) != n)
      detail::fail(call, t.world_rank, "output holds ", std::ranges::size(out), " elements, input ",
                   n);
    return detail::prepare_reduce(t, call, std::ranges::data(in), std::ranges::data(out), n, root,
                                  detail::bind_op<T>(op), alg);
  }

  // Where an allreduce of `n` elements of type T (the input's) runs, once its buffers are
  // checked.
  template <class T, class Out>
  detail::coll_target allreduce_target(const char* call, const T*, std::size_t n, Out& out,
                                       bool in_place) {
    static_assert(std::is_same_v<std::remove_const_t<T>, std::ranges::range_value_t<Out>>,
                  "cairn::allreduce: input and output element types differ");
    auto t = target(call);
    detail::checked_bytes(call, t.world_rank, n, sizeof(T));
    if (!in_place && std::ranges::size(out) != n)
      detail::fail(call, t.world_rank, "output holds ", std::ranges::size(out), " elements, input ",
                   n);
    return t;
  }
  template <class T, class Out, class Op>
  detail::prepared allreduce_impl(const char* call, const T* in, std::size_t n, Out& out,
                                  const Op& op, allreduce_algorithm alg, bool in_place) {
    return detail::prepare_allreduce(allreduce_target(call, in, n, out, in_place), call, in,
                                     std::ranges::data(out), n,
                                     detail::bind_op<std::remove_const_t<T>>(op), alg);
  }
  template <class T, class Out, class Op>
  void allreduce_blocking(const T* in, std::size_t n, Out& out, const Op& op,
                          allreduce_algorithm alg, bool in_place) {
    detail::run_allreduce(allreduce_target("allreduce", in, n, out, in_place), "allreduce", in,
                          std::ranges::data(out), n, detail::bind_op<std::remove_const_t<T>>(op),
                          alg);
  }

  template <class In, class Out, class Op>
  detail::prepared reduce_scatter_block_impl(const char* call, const In& in, Out& out, const Op& op,
                                             reduce_scatter_block_algorithm alg) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::reduce_scatter_block: input and output element types differ");
    return detail::prepare_reduce_scatter_block(target(call), call, detail::buffers_of(in, out),
                                                detail::bind_op<detail::block_elem_t<In, Out>>(op),
                                                alg);
  }

  template <class In, class Out, class Op>
  detail::prepared scan_impl(const char* call, const In& in, Out& out, const Op& op,
                             bool exclusive) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::scan: input and output element types differ");
    const auto t = target(call);
    const auto b = detail::buffers_of(in, out);
    const auto bound = detail::bind_op<detail::block_elem_t<In, Out>>(op);
    return exclusive ? detail::prepare_exscan(t, call, b, bound)
                     : detail::prepare_scan(t, call, b, bound);
  }

  template <class In, class Out, class Op>
  detail::prepared reduce_scatter_impl(const char* call, const In& in, Out& out, count_list c,
                                       const Op& op) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::reduce_scatter: input and output element types differ");
    return detail::prepare_reduce_scatter(target(call), call, detail::buffers_of(in, out), c,
                                          detail::bind_op<std::ranges::range_value_t<In>>(op));
  }
};

}  // namespace cairn::coll
