#pragma once
/// \file
/// The synchronizing collectives: barrier and broadcast (see cairn/coll/collectives.hpp for
/// the blocking, non-blocking and persistent forms).

#include <ranges>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/persistent.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::coll {

/// barrier and bcast (a mixin of coll::collectives: `Derived`, the world or a group,
/// provides `coll_target(call)`).
template <class Derived>
class barrier_bcast_collectives {
 public:
  /// Non-blocking barrier (shared memory on a group of one node, else dissemination).
  request ibarrier() {
    return detail::start_prepared(detail::prepare_barrier(target("ibarrier"), "ibarrier"));
  }
  /// Blocks until every member entered the barrier.
  void barrier() { detail::run_barrier(target("barrier"), "barrier"); }
  /// Persistent barrier.
  persistent_request barrier_init() {
    return persistent_request(detail::prepare_barrier(target("barrier_init"), "barrier_init"));
  }

  /// Broadcasts `buf` from group rank `root` to every member.
  template <detail::lasting_output R>
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
};

}  // namespace cairn::coll
