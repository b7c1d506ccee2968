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

#include "cairn/coll/barrier_bcast.hpp"
#include "cairn/coll/count_list.hpp"
#include "cairn/coll/gather_scatter.hpp"
#include "cairn/coll/reductions.hpp"
#include "cairn/coll/value_collectives.hpp"
#include "cairn/coll/vector_collectives.hpp"

namespace cairn::coll {

/// Every collective of a group (the world is one): the composition of the per-family mixins
/// (barrier_bcast.hpp, reductions.hpp, gather_scatter.hpp, vector_collectives.hpp) and of the
/// value forms (value_collectives.hpp), which overload the buffer forms' names. `Derived`
/// provides `coll_target(call)`, `rank()` and `size()`.
template <class Derived>
class collectives : public barrier_bcast_collectives<Derived>,
                    public reduction_collectives<Derived>,
                    public gather_scatter_collectives<Derived>,
                    public vector_collectives<Derived>,
                    public value_collectives<Derived> {
 public:
  // Each name below is declared by a family's mixin and by value_collectives: one overload set.
  using barrier_bcast_collectives<Derived>::bcast;
  using barrier_bcast_collectives<Derived>::ibcast;
  using value_collectives<Derived>::bcast;
  using value_collectives<Derived>::ibcast;
  using reduction_collectives<Derived>::allreduce;
  using reduction_collectives<Derived>::iallreduce;
  using reduction_collectives<Derived>::reduce;
  using reduction_collectives<Derived>::ireduce;
  using reduction_collectives<Derived>::scan;
  using reduction_collectives<Derived>::iscan;
  using reduction_collectives<Derived>::exscan;
  using reduction_collectives<Derived>::iexscan;
  using value_collectives<Derived>::allreduce;
  using value_collectives<Derived>::iallreduce;
  using value_collectives<Derived>::reduce;
  using value_collectives<Derived>::ireduce;
  using value_collectives<Derived>::scan;
  using value_collectives<Derived>::iscan;
  using value_collectives<Derived>::exscan;
  using value_collectives<Derived>::iexscan;
  using gather_scatter_collectives<Derived>::gather;
  using gather_scatter_collectives<Derived>::igather;
  using gather_scatter_collectives<Derived>::allgather;
  using gather_scatter_collectives<Derived>::iallgather;
  using gather_scatter_collectives<Derived>::scatter;
  using gather_scatter_collectives<Derived>::iscatter;
  using gather_scatter_collectives<Derived>::alltoall;
  using gather_scatter_collectives<Derived>::ialltoall;
  using value_collectives<Derived>::gather;
  using value_collectives<Derived>::igather;
  using value_collectives<Derived>::allgather;
  using value_collectives<Derived>::iallgather;
  using value_collectives<Derived>::scatter;
  using value_collectives<Derived>::iscatter;
  using value_collectives<Derived>::alltoall;
  using value_collectives<Derived>::ialltoall;
  using vector_collectives<Derived>::gatherv;
  using vector_collectives<Derived>::igatherv;
  using vector_collectives<Derived>::allgatherv;
  using vector_collectives<Derived>::iallgatherv;
  using vector_collectives<Derived>::scatterv;
  using vector_collectives<Derived>::iscatterv;
  using vector_collectives<Derived>::alltoallv;
  using vector_collectives<Derived>::ialltoallv;
  using value_collectives<Derived>::gatherv;
  using value_collectives<Derived>::igatherv;
  using value_collectives<Derived>::allgatherv;
  using value_collectives<Derived>::iallgatherv;
  using value_collectives<Derived>::scatterv;
  using value_collectives<Derived>::iscatterv;
  using value_collectives<Derived>::alltoallv;
  using value_collectives<Derived>::ialltoallv;
};

}  // namespace cairn::coll
