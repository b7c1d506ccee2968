#pragma once
/// \file
/// The v-collectives: gatherv, scatterv, allgatherv and alltoallv, with per-member counts and
/// displacements (see cairn/coll/collectives.hpp for the forms).

#include <cstddef>
#include <ranges>
#include <type_traits>

#include "cairn/coll/count_list.hpp"
#include "cairn/coll/detail/blocks.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/in_place.hpp"
#include "cairn/coll/persistent.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::coll {

/// gatherv, scatterv, allgatherv and alltoallv (a mixin of coll::collectives: `Derived`, the world
/// or a group, provides `coll_target(call)`).
template <class Derived>
class vector_collectives {
 public:
  /// Gathers blocks of different sizes to group rank `root` (MPI_Gatherv, linear): member i
  /// sends its whole `in`, which must be counts[i] elements; the root places it at
  /// displs[i] of `out` (elements; empty `displs` = packed in rank order). `counts`, `displs`
  /// and `out` matter on the root only (elsewhere they may be empty).
  template <detail::lasting_input In, detail::lasting_output Out>
  request igatherv(In&& in, Out&& out, count_list counts, count_list displs, int root) {
    return detail::start_prepared(gatherv_impl("igatherv", in, out, counts, displs, root));
  }
  /// igatherv with the blocks packed in rank order.
  template <detail::lasting_input In, detail::lasting_output Out>
  request igatherv(In&& in, Out&& out, count_list counts, int root) {
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
  template <detail::lasting_input In, detail::lasting_output Out>
  request iscatterv(In&& in, Out&& out, count_list counts, count_list displs, int root) {
    return detail::start_prepared(scatterv_impl("iscatterv", in, out, counts, displs, root));
  }
  /// iscatterv with the blocks packed in rank order.
  template <detail::lasting_input In, detail::lasting_output Out>
  request iscatterv(In&& in, Out&& out, count_list counts, int root) {
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
  template <detail::lasting_input In, detail::lasting_output Out>
  request iallgatherv(In&& in, Out&& out, count_list counts, count_list displs = {}) {
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
  template <detail::lasting_input In, detail::lasting_output Out>
  request ialltoallv(In&& in, count_list send_counts, count_list send_displs, Out&& out,
                     count_list recv_counts, count_list recv_displs) {
    return detail::start_prepared(
        alltoallv_impl("ialltoallv", in, send_counts, send_displs, out, recv_counts, recv_displs));
  }
  /// ialltoallv with the blocks packed in rank order.
  template <detail::lasting_input In, detail::lasting_output Out>
  request ialltoallv(In&& in, count_list send_counts, Out&& out, count_list recv_counts) {
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

 private:
  detail::coll_target target(const char* call) const {
    return static_cast<const Derived&>(*this).coll_target(call);
  }

  template <class In, class Out>
  detail::prepared gatherv_impl(const char* call, const In& in, Out& out, count_list c,
                                count_list d, int root) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::gatherv: input and output element types differ");
    return detail::prepare_gatherv(target(call), call, detail::buffers_of(in, out), {c, d}, root);
  }

  template <class In, class Out>
  detail::prepared scatterv_impl(const char* call, const In& in, Out& out, count_list c,
                                 count_list d, int root) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::scatterv: input and output element types differ");
    return detail::prepare_scatterv(target(call), call, detail::buffers_of(in, out), {c, d}, root);
  }

  template <class In, class Out>
  detail::prepared allgatherv_impl(const char* call, const In& in, Out& out, count_list c,
                                   count_list d) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::allgatherv: input and output element types differ");
    return detail::prepare_allgatherv(target(call), call, detail::buffers_of(in, out), {c, d});
  }

  template <class In, class Out>
  detail::prepared alltoallv_impl(const char* call, const In& in, count_list sc, count_list sd,
                                  Out& out, count_list rc, count_list rd) {
    static_assert(detail::same_elements<In, Out>,
                  "cairn::alltoallv: input and output element types differ");
    return detail::prepare_alltoallv(target(call), call, detail::buffers_of(in, out), {sc, sd},
                                     {rc, rd});
  }
};

}  // namespace cairn::coll
