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
#include "cairn/coll/vector_collectives.hpp"

namespace cairn::coll {

/// Every collective of a group (the world is one): the composition of the per-family mixins
/// (barrier_bcast.hpp, reductions.hpp, gather_scatter.hpp, vector_collectives.hpp). `Derived`
/// provides `coll_target(call)`.
template <class Derived>
class collectives : public barrier_bcast_collectives<Derived>,
                    public reduction_collectives<Derived>,
                    public gather_scatter_collectives<Derived>,
                    public vector_collectives<Derived> {};

}  // namespace cairn::coll
