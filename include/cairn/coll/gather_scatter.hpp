#pragma once
/// \file
/// The block collectives: gather, scatter, allgather and alltoall, each member with a block of
/// the same size (see cairn/coll/collectives.hpp for the forms).

#include <cstddef>
#include <ranges>
#include <type_traits>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/detail/blocks.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/in_place.hpp"
#include "cairn/coll/persistent.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::coll {

/// gather, scatter, allgather and alltoall (a mixin of coll::collectives: `Derived`, the world or a
/// group, provides `coll_target(call)`).
template <class Derived>
class gather_scatter_collectives {
 public:
  /// Gathers `in` (n elements, the same n on every member) of every member to group rank
  /// `root` (binomial tree): on the root, `out` must hold at least size() x n elements and gets
  /// member i's block at [i n, (i + 1) n); elsewhere `out` is ignored and may be empty. Where
  /// both are used, `in` and `out` must not overlap.
  template <detail::lasting_input In, detail::lasting_output Out>
  request igather(In&& in, Out&& out, int root) {
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
  template <detail::lasting_output R>
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
  template <detail::lasting_input In, detail::lasting_output Out>
  request iscatter(In&& in, Out&& out, int root) {
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
  template <detail::lasting_output R>
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
  template <detail::lasting_input In, detail::lasting_output Out>
  request iallgather(In&& in, Out&& out, allgather_algorithm alg = allgather_algorithm::automatic) {
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
  template <detail::lasting_output R>
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
  template <detail::lasting_input In, detail::lasting_output Out>
  request ialltoall(In&& in, Out&& out, alltoall_algorithm alg = alltoall_algorithm::automatic) {
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
  template <detail::lasting_output R>
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

 private:
  detail::coll_target target(const char* call) const {
    return static_cast<const Derived&>(*this).coll_target(call);
  }

  template <class In, class Out>
  detail::prepared gather_impl(const char* call, const In& in, Out& out, int root) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::gather: input and output element types differ");
    return detail::prepare_gather(target(call), call, detail::buffers_of(in, out), root);
  }

  template <class In, class Out>
  detail::prepared scatter_impl(const char* call, In& in, Out& out,
                                int root) {  // (in place, `in` is written)
    static_assert(detail::same_elements<In, Out>,
                  "cairn::scatter: input and output element types differ");
    return detail::prepare_scatter(target(call), call, detail::buffers_of(in, out), root);
  }

  template <class In, class Out>
  detail::prepared allgather_impl(const char* call, const In& in, Out& out,
                                  allgather_algorithm alg) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::allgather: input and output element types differ");
    return detail::prepare_allgather(target(call), call, detail::buffers_of(in, out), alg);
  }

  template <class In, class Out>
  detail::prepared alltoall_impl(const char* call, const In& in, Out& out, alltoall_algorithm alg) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::alltoall: input and output element types differ");
    return detail::prepare_alltoall(target(call), call, detail::buffers_of(in, out), alg);
  }
};

}  // namespace cairn::coll
