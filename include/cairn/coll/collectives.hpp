#pragma once
/// \file
/// The collective operations, shared by `world` and `group` (a mixin: `Derived` provides
/// `coll_target(call)`). Every collective is `i<name>(...) -> request`; the blocking form is
/// `<name>(...)` = `i<name>(...).wait()`, and the persistent form `<name>_init(...) ->
/// persistent_request` plans once and runs on every `start()` (its buffers stay bound, so they
/// must be lvalues or views — borrowed ranges: a temporary vector does not compile). Collectives
/// progress whenever any cairn call runs. Where a call takes an algorithm, `automatic` picks it by
/// message and group size (the default table, overridable by CAIRN_COLL; see
/// cairn/coll/algorithms.hpp).
///
/// In-place forms (MPI_IN_PLACE): `cairn::in_place` where the input would be (for scatter,
/// where the output would be) says that the input already sits in the one buffer passed; see
/// each collective. Blocks per rank come from that buffer's size, which must then be a multiple
/// of size(). On a non-root, the in-place form of a rooted collective uses the buffer as the
/// root does (reduce: it is the input; gather, scatter: size() blocks, this member's at its
/// place); non-roots may as well use the other form.

#include <cstddef>
#include <ranges>
#include <span>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/in_place.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/coll/persistent.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::coll {

/// Per-rank element counts (one per group rank) of the v-collectives.
using count_list = std::span<const std::size_t>;

template <class Derived>
class collectives {
 public:
  /// Non-blocking barrier (shared memory on a group of one node, else dissemination).
  request ibarrier() {
    return detail::start_prepared(detail::prepare_barrier(target("ibarrier"), "ibarrier"));
  }
  /// Blocks until every member entered the barrier.
  void barrier() { detail::run_blocking(detail::prepare_barrier(target("barrier"), "barrier")); }
  /// Persistent barrier.
  persistent_request barrier_init() {
    return persistent_request(detail::prepare_barrier(target("barrier_init"), "barrier_init"));
  }

  /// Broadcasts `buf` from group rank `root` to every member.
  template <detail::writable_data R>
  request ibcast(R&& buf, int root, bcast_algorithm alg = bcast_algorithm::automatic) {
    return detail::start_prepared(bcast_impl("ibcast", buf, root, alg));
  }
  /// Blocking broadcast.
  template <detail::writable_data R>
  void bcast(R&& buf, int root, bcast_algorithm alg = bcast_algorithm::automatic) {
    detail::run_blocking(bcast_impl("bcast", buf, root, alg));
  }
  /// Persistent broadcast of `buf` (bound at init).
  template <detail::writable_data R>
  requires std::ranges::borrowed_range<R> persistent_request
  bcast_init(R&& buf, int root, bcast_algorithm alg = bcast_algorithm::automatic) {
    return persistent_request(bcast_impl("bcast_init", buf, root, alg));
  }

  /// Reduces `in` of every member element-wise with `op` into `out` on `root` (`out` is
  /// ignored elsewhere and may be empty there).
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request ireduce(const In& in, Out&& out, int root, Op op = {},
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
  template <detail::writable_data R, class Op = plus>
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
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires(!std::ranges::range<Op>) request
      iallreduce(const In& in, Out&& out, Op op = {},
                 allreduce_algorithm alg = allreduce_algorithm::automatic) {
    return detail::start_prepared(allreduce_impl("iallreduce", std::ranges::data(in),
                                                 std::ranges::size(in), out, op, alg, false));
  }
  /// In-place form: `inout` holds this member's input and receives the result.
  template <detail::writable_data InOut, class Op>
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
    detail::run_blocking(allreduce_impl("allreduce", std::ranges::data(in), std::ranges::size(in),
                                        out, op, alg, false));
  }
  /// Blocking in-place allreduce.
  template <detail::writable_data InOut, class Op>
  requires(!std::ranges::range<Op>) void allreduce(
      InOut&& inout, Op op, allreduce_algorithm alg = allreduce_algorithm::automatic) {
    detail::run_blocking(allreduce_impl("allreduce", std::ranges::data(inout),
                                        std::ranges::size(inout), inout, op, alg, true));
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
  template <detail::writable_data R, class Op = plus>
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

  /// Gathers `in` (n elements, the same n on every member) of every member to group rank
  /// `root` (binomial tree): on the root, `out` must hold at least size() x n elements and gets
  /// member i's block at [i n, (i + 1) n); elsewhere `out` is ignored and may be empty. Where
  /// both are used, `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request igather(const In& in, Out&& out, int root) {
    return detail::start_prepared(gather_impl("igather", in, out, root));
  }
  /// Blocking gather.
  template <detail::contiguous_data In, detail::writable_data Out>
  void gather(const In& in, Out&& out, int root) {
    detail::run_blocking(gather_impl("gather", in, out, root));
  }
  /// Persistent gather.
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  gather_init(In&& in, Out&& out, int root) {
    return persistent_request(gather_impl("gather_init", in, out, root));
  }
  /// In-place gather: `buf` holds size() x n elements with this member's block already at
  /// [rank() n, (rank() + 1) n); on the root the others' blocks land around it.
  template <detail::writable_data R>
  request igather(in_place_t, R&& buf, int root) {
    return detail::start_prepared(gather_impl("igather", in_place, buf, root));
  }
  /// Blocking in-place gather.
  template <detail::writable_data R>
  void gather(in_place_t, R&& buf, int root) {
    detail::run_blocking(gather_impl("gather", in_place, buf, root));
  }
  /// Persistent in-place gather.
  template <detail::writable_data R>
  requires std::ranges::borrowed_range<R> persistent_request gather_init(in_place_t, R&& buf,
                                                                         int root) {
    return persistent_request(gather_impl("gather_init", in_place, buf, root));
  }

  /// Scatters the input of group rank `root` (binomial tree): every member receives a block of
  /// n = out.size() elements (the same n everywhere), member i the block [i n, (i + 1) n) of
  /// the root's `in`, which must hold at least size() x n elements; elsewhere `in` is ignored
  /// and may be empty. Where both are used, `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request iscatter(const In& in, Out&& out, int root) {
    return detail::start_prepared(scatter_impl("iscatter", in, out, root));
  }
  /// Blocking scatter.
  template <detail::contiguous_data In, detail::writable_data Out>
  void scatter(const In& in, Out&& out, int root) {
    detail::run_blocking(scatter_impl("scatter", in, out, root));
  }
  /// Persistent scatter.
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  scatter_init(In&& in, Out&& out, int root) {
    return persistent_request(scatter_impl("scatter_init", in, out, root));
  }
  /// In-place scatter: `buf` holds size() x n elements; the root's own block stays where it is
  /// (it receives nothing), elsewhere this member's block lands at [rank() n, (rank() + 1) n).
  template <detail::writable_data R>
  request iscatter(R&& buf, in_place_t, int root) {
    return detail::start_prepared(scatter_impl("iscatter", buf, in_place, root));
  }
  /// Blocking in-place scatter.
  template <detail::writable_data R>
  void scatter(R&& buf, in_place_t, int root) {
    detail::run_blocking(scatter_impl("scatter", buf, in_place, root));
  }
  /// Persistent in-place scatter.
  template <detail::writable_data R>
  requires std::ranges::borrowed_range<R> persistent_request scatter_init(R&& buf, in_place_t,
                                                                          int root) {
    return persistent_request(scatter_impl("scatter_init", buf, in_place, root));
  }

  /// Gathers `in` (n elements, the same n on every member) of every member to every member:
  /// `out` must hold at least size() x n elements and gets member i's block at [i n, (i + 1) n).
  /// `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request iallgather(const In& in, Out&& out,
                     allgather_algorithm alg = allgather_algorithm::automatic) {
    return detail::start_prepared(allgather_impl("iallgather", in, out, alg));
  }
  /// Blocking allgather.
  template <detail::contiguous_data In, detail::writable_data Out>
  void allgather(const In& in, Out&& out,
                 allgather_algorithm alg = allgather_algorithm::automatic) {
    detail::run_blocking(allgather_impl("allgather", in, out, alg));
  }
  /// Persistent allgather.
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  allgather_init(In&& in, Out&& out, allgather_algorithm alg = allgather_algorithm::automatic) {
    return persistent_request(allgather_impl("allgather_init", in, out, alg));
  }
  /// In-place allgather: `buf` holds size() x n elements with this member's block already at
  /// [rank() n, (rank() + 1) n); the others' blocks land around it.
  template <detail::writable_data R>
  request iallgather(in_place_t, R&& buf,
                     allgather_algorithm alg = allgather_algorithm::automatic) {
    return detail::start_prepared(allgather_impl("iallgather", in_place, buf, alg));
  }
  /// Blocking in-place allgather.
  template <detail::writable_data R>
  void allgather(in_place_t, R&& buf, allgather_algorithm alg = allgather_algorithm::automatic) {
    detail::run_blocking(allgather_impl("allgather", in_place, buf, alg));
  }
  /// Persistent in-place allgather.
  template <detail::writable_data R>
  requires std::ranges::borrowed_range<R> persistent_request
  allgather_init(in_place_t, R&& buf, allgather_algorithm alg = allgather_algorithm::automatic) {
    return persistent_request(allgather_impl("allgather_init", in_place, buf, alg));
  }

  /// Personalized all-to-all exchange: `in` holds size() blocks of n elements (the same n on
  /// every member); block j goes to member j, and block i of `out` (which must hold at least
  /// size() x n elements) comes from member i. `in` and `out` must not overlap.
  template <detail::contiguous_data In, detail::writable_data Out>
  request ialltoall(const In& in, Out&& out,
                    alltoall_algorithm alg = alltoall_algorithm::automatic) {
    return detail::start_prepared(alltoall_impl("ialltoall", in, out, alg));
  }
  /// Blocking alltoall.
  template <detail::contiguous_data In, detail::writable_data Out>
  void alltoall(const In& in, Out&& out, alltoall_algorithm alg = alltoall_algorithm::automatic) {
    detail::run_blocking(alltoall_impl("alltoall", in, out, alg));
  }
  /// Persistent alltoall.
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  alltoall_init(In&& in, Out&& out, alltoall_algorithm alg = alltoall_algorithm::automatic) {
    return persistent_request(alltoall_impl("alltoall_init", in, out, alg));
  }
  /// In-place alltoall: `buf` holds size() blocks of n elements; block j is sent to member j and
  /// replaced by the block from member j. The pairwise exchange then works on a copy of `buf`
  /// in scratch (size() x n elements); Bruck needs none beyond its own.
  template <detail::writable_data R>
  request ialltoall(in_place_t, R&& buf, alltoall_algorithm alg = alltoall_algorithm::automatic) {
    return detail::start_prepared(alltoall_impl("ialltoall", in_place, buf, alg));
  }
  /// Blocking in-place alltoall.
  template <detail::writable_data R>
  void alltoall(in_place_t, R&& buf, alltoall_algorithm alg = alltoall_algorithm::automatic) {
    detail::run_blocking(alltoall_impl("alltoall", in_place, buf, alg));
  }
  /// Persistent in-place alltoall.
  template <detail::writable_data R>
  requires std::ranges::borrowed_range<R> persistent_request
  alltoall_init(in_place_t, R&& buf, alltoall_algorithm alg = alltoall_algorithm::automatic) {
    return persistent_request(alltoall_impl("alltoall_init", in_place, buf, alg));
  }

  /// Reduces `in` of every member element-wise with `op` and scatters the result in blocks
  /// (MPI_Reduce_scatter_block): `in` holds size() blocks of n = out.size() elements (the same
  /// n on every member; at least size() x n elements) and member i gets block i of the
  /// reduction, [i n, (i + 1) n), in `out`. `in` and `out` must not overlap. Operands are
  /// combined in rank order unless `op` is commutative.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request ireduce_scatter_block(
      const In& in, Out&& out, Op op = {},
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
  template <detail::writable_data R, class Op = plus>
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
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request iscan(const In& in, Out&& out, Op op = {}) {
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
  template <detail::writable_data R, class Op = plus>
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
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request iexscan(const In& in, Out&& out, Op op = {}) {
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
  template <detail::writable_data R, class Op = plus>
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

  /// Gathers blocks of different sizes to group rank `root` (MPI_Gatherv, linear): member i
  /// sends its whole `in`, which must be counts[i] elements; the root places it at
  /// displs[i] of `out` (elements; empty `displs` = packed in rank order). `counts`, `displs`
  /// and `out` matter on the root only (elsewhere they may be empty).
  template <detail::contiguous_data In, detail::writable_data Out>
  request igatherv(const In& in, Out&& out, count_list counts, count_list displs, int root) {
    return detail::start_prepared(gatherv_impl("igatherv", in, out, counts, displs, root));
  }
  /// igatherv with the blocks packed in rank order.
  template <detail::contiguous_data In, detail::writable_data Out>
  request igatherv(const In& in, Out&& out, count_list counts, int root) {
    return detail::start_prepared(gatherv_impl("igatherv", in, out, counts, {}, root));
  }
  /// Blocking gatherv.
  template <detail::contiguous_data In, detail::writable_data Out>
  void gatherv(const In& in, Out&& out, count_list counts, count_list displs, int root) {
    detail::run_blocking(gatherv_impl("gatherv", in, out, counts, displs, root));
  }
  /// Blocking gatherv, packed.
  template <detail::contiguous_data In, detail::writable_data Out>
  void gatherv(const In& in, Out&& out, count_list counts, int root) {
    detail::run_blocking(gatherv_impl("gatherv", in, out, counts, {}, root));
  }
  /// Persistent gatherv (empty `displs` = packed).
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  gatherv_init(In&& in, Out&& out, count_list counts, count_list displs, int root) {
    return persistent_request(gatherv_impl("gatherv_init", in, out, counts, displs, root));
  }

  /// Scatters blocks of different sizes from group rank `root` (MPI_Scatterv, linear): member
  /// i receives counts[i] elements from displs[i] of the root's `in` (elements; empty `displs`
  /// = packed in rank order) into its whole `out`, which must be counts[i] elements.
  /// `counts`, `displs` and `in` matter on the root only.
  template <detail::contiguous_data In, detail::writable_data Out>
  request iscatterv(const In& in, Out&& out, count_list counts, count_list displs, int root) {
    return detail::start_prepared(scatterv_impl("iscatterv", in, out, counts, displs, root));
  }
  /// iscatterv with the blocks packed in rank order.
  template <detail::contiguous_data In, detail::writable_data Out>
  request iscatterv(const In& in, Out&& out, count_list counts, int root) {
    return detail::start_prepared(scatterv_impl("iscatterv", in, out, counts, {}, root));
  }
  /// Blocking scatterv.
  template <detail::contiguous_data In, detail::writable_data Out>
  void scatterv(const In& in, Out&& out, count_list counts, count_list displs, int root) {
    detail::run_blocking(scatterv_impl("scatterv", in, out, counts, displs, root));
  }
  /// Blocking scatterv, packed.
  template <detail::contiguous_data In, detail::writable_data Out>
  void scatterv(const In& in, Out&& out, count_list counts, int root) {
    detail::run_blocking(scatterv_impl("scatterv", in, out, counts, {}, root));
  }
  /// Persistent scatterv (empty `displs` = packed).
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  scatterv_init(In&& in, Out&& out, count_list counts, count_list displs, int root) {
    return persistent_request(scatterv_impl("scatterv_init", in, out, counts, displs, root));
  }

  /// Gathers blocks of different sizes to every member (MPI_Allgatherv, ring): member i sends
  /// its whole `in` (counts[i] elements), placed at displs[i] of every `out` (elements; empty
  /// `displs` = packed). Every member passes the same `counts` and `displs`.
  template <detail::contiguous_data In, detail::writable_data Out>
  request iallgatherv(const In& in, Out&& out, count_list counts, count_list displs = {}) {
    return detail::start_prepared(allgatherv_impl("iallgatherv", in, out, counts, displs));
  }
  /// Blocking allgatherv.
  template <detail::contiguous_data In, detail::writable_data Out>
  void allgatherv(const In& in, Out&& out, count_list counts, count_list displs = {}) {
    detail::run_blocking(allgatherv_impl("allgatherv", in, out, counts, displs));
  }
  /// Persistent allgatherv.
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  allgatherv_init(In&& in, Out&& out, count_list counts, count_list displs = {}) {
    return persistent_request(allgatherv_impl("allgatherv_init", in, out, counts, displs));
  }

  /// Personalized all-to-all with blocks of different sizes (MPI_Alltoallv, pairwise): the
  /// send_counts[j] elements at send_displs[j] of `in` go to member j; the recv_counts[i]
  /// elements from member i land at recv_displs[i] of `out` (elements; empty displacements =
  /// packed). send_counts[j] here must equal recv_counts[i] on member j (i = this member).
  template <detail::contiguous_data In, detail::writable_data Out>
  request ialltoallv(const In& in, count_list send_counts, count_list send_displs, Out&& out,
                     count_list recv_counts, count_list recv_displs) {
    return detail::start_prepared(
        alltoallv_impl("ialltoallv", in, send_counts, send_displs, out, recv_counts, recv_displs));
  }
  /// ialltoallv with the blocks packed in rank order.
  template <detail::contiguous_data In, detail::writable_data Out>
  request ialltoallv(const In& in, count_list send_counts, Out&& out, count_list recv_counts) {
    return detail::start_prepared(
        alltoallv_impl("ialltoallv", in, send_counts, {}, out, recv_counts, {}));
  }
  /// Blocking alltoallv.
  template <detail::contiguous_data In, detail::writable_data Out>
  void alltoallv(const In& in, count_list send_counts, count_list send_displs, Out&& out,
                 count_list recv_counts, count_list recv_displs) {
    detail::run_blocking(
        alltoallv_impl("alltoallv", in, send_counts, send_displs, out, recv_counts, recv_displs));
  }
  /// Blocking alltoallv, packed.
  template <detail::contiguous_data In, detail::writable_data Out>
  void alltoallv(const In& in, count_list send_counts, Out&& out, count_list recv_counts) {
    detail::run_blocking(alltoallv_impl("alltoallv", in, send_counts, {}, out, recv_counts, {}));
  }
  /// Persistent alltoallv (empty displacements = packed).
  template <detail::contiguous_data In, detail::writable_data Out>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  alltoallv_init(In&& in, count_list send_counts, count_list send_displs, Out&& out,
                 count_list recv_counts, count_list recv_displs) {
    return persistent_request(alltoallv_impl("alltoallv_init", in, send_counts, send_displs, out,
                                             recv_counts, recv_displs));
  }

  /// Reduces `in` of every member element-wise with `op` and scatters blocks of different
  /// sizes (MPI_Reduce_scatter, pairwise): `in` holds the blocks packed in rank order
  /// (counts[0] + ... elements), member i gets block i of the reduction in the first
  /// counts[i] elements of `out`. Every member passes the same `counts`. Operands are combined
  /// in rank order.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  request ireduce_scatter(const In& in, Out&& out, count_list counts, Op op = {}) {
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

  template <class R>
  detail::prepared bcast_impl(const char* call, R& buf, int root, bcast_algorithm alg) {
    using T = std::ranges::range_value_t<R>;
    const auto t = target(call);
    return detail::prepare_bcast(
        t, call, std::ranges::data(buf),
        detail::checked_bytes(call, t.world_rank, std::ranges::size(buf), sizeof(T)), root, alg);
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

  template <class T>
  static constexpr bool is_in_place = std::is_same_v<std::remove_cvref_t<T>, in_place_t>;

  // The element type of a block collective's buffers (the one buffer's, in place).
  template <class In, class Out>
  using elem_t = std::ranges::range_value_t<std::conditional_t<is_in_place<In>, Out, In>>;

  // The caller's buffers; in place (cairn::in_place as `in` or, for scatter, `out`) the one
  // buffer is both.
  template <class In, class Out>
  static detail::block_buffers buffers_of(In& in, Out& out) {
    if constexpr (is_in_place<In>) {
      return {std::ranges::data(out), std::ranges::size(out),  std::ranges::data(out),
              std::ranges::size(out), sizeof(elem_t<In, Out>), true};
    } else if constexpr (is_in_place<Out>) {
      return {std::ranges::data(in), std::ranges::size(in),   std::ranges::data(in),
              std::ranges::size(in), sizeof(elem_t<In, Out>), true};
    } else {
      return {std::ranges::data(in), std::ranges::size(in), std::ranges::data(out),
              std::ranges::size(out), sizeof(elem_t<In, Out>)};
    }
  }

  template <class In, class Out>
  static constexpr bool same_elements = [] {
    if constexpr (is_in_place<In> || is_in_place<Out>)
      return true;
    else
      return std::is_same_v<std::ranges::range_value_t<In>, std::ranges::range_value_t<Out>>;
  }();

  template <class In, class Out>
  detail::prepared gather_impl(const char* call, const In& in, Out& out, int root) {
    static_assert(same_elements<In, Out>, "cairn::gather: input and output element types differ");
    return detail::prepare_gather(target(call), call, buffers_of(in, out), root);
  }

  template <class In, class Out>
  detail::prepared scatter_impl(const char* call, In& in, Out& out,
                                int root) {  // (in place, `in` is written)
    static_assert(same_elements<In, Out>, "cairn::scatter: input and output element types differ");
    return detail::prepare_scatter(target(call), call, buffers_of(in, out), root);
  }

  template <class In, class Out>
  detail::prepared allgather_impl(const char* call, const In& in, Out& out,
                                  allgather_algorithm alg) {
    static_assert(same_elements<In, Out>,
                  "cairn::allgather: input and output element types differ");
    return detail::prepare_allgather(target(call), call, buffers_of(in, out), alg);
  }

  template <class In, class Out>
  detail::prepared alltoall_impl(const char* call, const In& in, Out& out, alltoall_algorithm alg) {
    static_assert(same_elements<In, Out>, "cairn::alltoall: input and output element types differ");
    return detail::prepare_alltoall(target(call), call, buffers_of(in, out), alg);
  }

  template <class In, class Out, class Op>
  detail::prepared reduce_scatter_block_impl(const char* call, const In& in, Out& out, const Op& op,
                                             reduce_scatter_block_algorithm alg) {
    static_assert(same_elements<In, Out>,
                  "cairn::reduce_scatter_block: input and output element types differ");
    return detail::prepare_reduce_scatter_block(target(call), call, buffers_of(in, out),
                                                detail::bind_op<elem_t<In, Out>>(op), alg);
  }

  template <class In, class Out, class Op>
  detail::prepared scan_impl(const char* call, const In& in, Out& out, const Op& op,
                             bool exclusive) {
    static_assert(same_elements<In, Out>, "cairn::scan: input and output element types differ");
    const auto t = target(call);
    const auto b = buffers_of(in, out);
    const auto bound = detail::bind_op<elem_t<In, Out>>(op);
    return exclusive ? detail::prepare_exscan(t, call, b, bound)
                     : detail::prepare_scan(t, call, b, bound);
  }

  template <class T, class Out, class Op>
  detail::prepared allreduce_impl(const char* call, const T* in, std::size_t n, Out& out,
                                  const Op& op, allreduce_algorithm alg, bool in_place) {
    static_assert(std::is_same_v<std::remove_const_t<T>, std::ranges::range_value_t<Out>>,
                  "cairn::allreduce: input and output element types differ");
    const auto t = target(call);
    detail::checked_bytes(call, t.world_rank, n, sizeof(T));
    if (!in_place && std::ranges::size(out) != n)
      detail::fail(call, t.world_rank, "output holds ", std::ranges::size(out), " elements, input ",
                   n);
    return detail::prepare_allreduce(t, call, in, std::ranges::data(out), n,
                                     detail::bind_op<std::remove_const_t<T>>(op), alg);
  }

  template <class In, class Out>
  detail::prepared gatherv_impl(const char* call, const In& in, Out& out, count_list c,
                                count_list d, int root) {
    static_assert(same_elements<In, Out>, "cairn::gatherv: input and output element types differ");
    return detail::prepare_gatherv(target(call), call, buffers_of(in, out), {c, d}, root);
  }

  template <class In, class Out>
  detail::prepared scatterv_impl(const char* call, const In& in, Out& out, count_list c,
                                 count_list d, int root) {
    static_assert(same_elements<In, Out>, "cairn::scatterv: input and output element types differ");
    return detail::prepare_scatterv(target(call), call, buffers_of(in, out), {c, d}, root);
  }

  template <class In, class Out>
  detail::prepared allgatherv_impl(const char* call, const In& in, Out& out, count_list c,
                                   count_list d) {
    static_assert(same_elements<In, Out>,
                  "cairn::allgatherv: input and output element types differ");
    return detail::prepare_allgatherv(target(call), call, buffers_of(in, out), {c, d});
  }

  template <class In, class Out>
  detail::prepared alltoallv_impl(const char* call, const In& in, count_list sc, count_list sd,
                                  Out& out, count_list rc, count_list rd) {
    static_assert(same_elements<In, Out>,
                  "cairn::alltoallv: input and output element types differ");
    return detail::prepare_alltoallv(target(call), call, buffers_of(in, out), {sc, sd}, {rc, rd});
  }

  template <class In, class Out, class Op>
  detail::prepared reduce_scatter_impl(const char* call, const In& in, Out& out, count_list c,
                                       const Op& op) {
    static_assert(same_elements<In, Out>,
                  "cairn::reduce_scatter: input and output element types differ");
    return detail::prepare_reduce_scatter(target(call), call, buffers_of(in, out), c,
                                          detail::bind_op<std::ranges::range_value_t<In>>(op));
  }
};

}  // namespace cairn::coll
