// The default selection table: which algorithm `automatic` picks for every collective. This is
// the one place the defaults are written; cairn-info prints it, tests/coll/selection_table_test
// checks it against an independent reference.
//
// Syntax: CAIRN_COLL's (parse_selection, src/coll/engine/selection.cpp), one rule per entry:
//   collective=algorithm[@min-max][ if condition[ and condition]...]
// A call takes the first rule of its collective (CAIRN_COLL's rules come before these) whose
// size range holds the call's size (what the size measures: cairn-info, algorithm_catalog()),
// whose conditions all hold, and whose algorithm can run the call:
//   - shared_memory (the node board is its provider) needs every rank of the group on one node,
//     and past a slot's 16384 bytes a collective that moves straight between the buffers
//     (bcast, reduce, allreduce, generalized reduce) and ranks that can copy across processes
//     (threads; MPI with CAIRN_CMA): board_refusal, src/coll/board/shared_memory_flat.cpp;
//     the generalized reduce's also needs no load balancing;
//   - ring (allreduce, reduce_scatter_block) needs a commutative operation;
//   - every other algorithm runs every call.
// Conditions: ranks (the group's size) and count (elements in the measured size) compared with
// a number or ranks (< <= > >= == !=); the flags commutative (the operation; true without
// one), power_of_two (ranks), count_check (CAIRN_COLL_CHECK=1: collectives stay off the board
// and check their counts by messages) and balanced (load_balance or a balancer), each maybe
// negated with '!'. The last rule of each collective applies to every call.
//
// Where a call runs by messages and another count of it would run on the board (a size past
// the board's reach, a range of CAIRN_COLL), it first meets the other ranks on the board (a
// gate, prepared::gate), so that counts on either side fail everywhere instead of waiting.
//
// The table is canonical (coll::to_string of each rule, joined by ","): cairn-info prints it
// rule by rule and the test compares the two.
#include "cairn/coll/algorithms.hpp"

namespace cairn::coll {

std::string_view default_selection_table() {
  return "barrier=shared_memory if !count_check,"
         "barrier=dissemination,"

         "bcast=shared_memory if !count_check,"
         "bcast=scatter_allgather@512k- if ranks>2,"
         "bcast=binomial,"

         "reduce=shared_memory if !count_check,"
         "reduce=reduce_scatter_gather@512k- if ranks>2 and count>=ranks,"
         "reduce=binomial,"

         "allreduce=shared_memory if !count_check,"
         "allreduce=ring@256k- if commutative and ranks>2 and count>=ranks,"
         "allreduce=rabenseifner@64k- if ranks>1 and count>=ranks,"
         "allreduce=recursive_doubling,"

         "gather=binomial,"
         "scatter=binomial,"

         "allgather=ring@64k-,"
         "allgather=recursive_doubling if power_of_two,"
         "allgather=bruck,"

         "alltoall=bruck@-256 if ranks>4,"
         "alltoall=pairwise,"

         "reduce_scatter_block=ring@256k- if commutative and ranks>2,"
         "reduce_scatter_block=recursive_halving,"

         "scan=recursive_doubling,"
         "exscan=recursive_doubling,"
         "gatherv=linear,"
         "scatterv=linear,"
         "allgatherv=ring,"
         "alltoallv=pairwise,"
         "reduce_scatter=pairwise,"

         "generalized_reduce=shared_memory if !count_check and !balanced,"
         "generalized_reduce=butterfly";
}

}  // namespace cairn::coll
