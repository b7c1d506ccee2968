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
//     and past a slot's 16384 bytes (per rank) a collective that moves straight between the
//     buffers (bcast, reduce, allreduce, allgather, reduce_scatter_block, generalized reduce) and
//     ranks that can copy across processes (threads; MPI with CAIRN_CMA): board_refusal,
//     src/coll/board/shared_memory_flat.cpp; the generalized reduce's also needs no load
//     balancing;
//   - shared_memory_direct (bcast, reduce, allreduce, allgather, reduce_scatter_block) moves
//     straight between the buffers at every size: one node and ranks that can copy across
//     processes;
//   - shared_memory_staged (bcast, reduce, allreduce, allgather, reduce_scatter_block,
//     generalized reduce) copies through node memory in pipelined chunks
//     (src/coll/board/shared_memory_staged.cpp): one node; the generalized reduce's also needs
//     no load balancing;
//   - ring (allreduce, reduce_scatter_block) needs a commutative operation;
//   - hierarchical (bcast, reduce, allreduce, allgather) and hierarchical_slices (allreduce) need a
//     commutative operation or a group whose nodes hold consecutive group ranks, and
//     hierarchical_slices nodes that each hold as many of the group's ranks; across nodes they
//     run this table's choice for a group of one rank per node (src/coll/engine/start.cpp,
//     across_nodes); the generalized reduce's hierarchical needs no load balancing and runs the
//     butterfly across nodes (its nodes and ranks: those of P ∪ R);
//   - every other algorithm runs every call.
// Conditions: ranks (the group's size), count (elements in the measured size) and nodes (the
// nodes the group's ranks sit on) compared with a number, count and nodes also with ranks
// (< <= > >= == !=); the flags commutative (the operation; true without
// one), power_of_two (ranks), processes (the ranks are processes: the MPI engine), count_check
// (CAIRN_COLL_CHECK=1: collectives stay off the board and check their counts by messages) and
// balanced (load_balance or a balancer), each maybe negated with '!'. The last rule of each
// collective applies to every call.
//
// Where a call runs by messages and another count of it would run on the board (a size past
// the board's reach, a range of CAIRN_COLL), it first meets the other ranks on the board (a
// gate, prepared::gate), so that counts on either side fail everywhere instead of waiting.
//
// The board's paths, measured on 2 ranks of this 2-core machine (`cairn-bench bcast | reduce |
// allreduce` with each algorithm forced, interleaved, one placement):
//   - threads: reading the peers' buffers in place beats copying through the slots from 1 KiB
//     (allreduce: 0.55 vs 0.77 us), 4 KiB (bcast: 0.46 vs 0.51) and 8 KiB (reduce: 0.83 vs
//     0.95); at 512 bytes and below the slots win or tie.
//   - processes: a cross-memory copy costs a system call per peer and direction (about 2 us for
//     a 1 KiB allreduce), so the slots win up to their 16 KiB (allreduce at 16 KiB: 1.41-1.45
//     vs 4.23-4.33 us straight, cores near; 2.84-3.07 vs 5.55-5.68 far). Past the slots,
//     staging through node memory (chunks of 128 KiB, 4 in flight) beats straight copies at
//     every size, 2026-11-29 (it lost below 2-4 MiB when first measured): allreduce 32 KiB
//     1.58-1.61 vs 5.42-5.62 us near, 4.22-4.27 vs 6.31-6.36 far; 256 KiB 10.1-10.5 vs
//     22.7-23.1 near, 18.1-18.2 vs 22.8-22.9 far; 1 MiB (far) 77-78 vs 91-93; bcast (far)
//     32 KiB 2.74 vs 3.64, 1 MiB 31.9 vs 67.0; reduce (far) 32 KiB 3.22 vs 5.84, 1 MiB 61.0
//     vs 78.2. 4 ranks (oversubscribed, --quick) agree: allreduce 1 MiB 276 vs 334 us, bcast
//     83 vs 323, reduce 151 vs 217. Chunks of 16, 32, 64, 128 and 256 KiB (far, allreduce 32
//     KiB-4 MiB): 128 and 256 KiB are best and within 5 % of each other (4 MiB: 289-312 vs
//     280-294 us), 16 KiB the worst (576-599). Groups that are not the world stage through
//     their keyed slots' rings (256 KiB each: chunks of 128 KiB, 2 in flight), which beats
//     straight copies there too, 2026-11-29 (2 ranks as a reversed group, far, --quick):
//     allreduce 32 KiB 4.8-4.9 vs 7.6-7.7 us, 128 KiB 11.4-11.8 vs 14.7-14.8, 1 MiB 85.6-85.8
//     vs 92.8-96.1; bcast 1 MiB 51 vs 69; reduce 32 KiB 3.9 vs 6.7, 1 MiB 62 vs 110;
//     allgather 32 KiB blocks 4.1 vs 5.7, 1 MiB 79 vs 95; reduce_scatter_block 32 KiB blocks
//     4.6 vs 6.2, 1 MiB 105 vs 111. The generalized reduce likewise (Figure 5's pair on 4
//     ranks, oversubscribed, `cairn-bench concurrent-reduce --quick`: 64 KiB 25-26 vs 46-48 us
//     straight, 1 MiB 424-433 vs 476-565).
//   - allgather (blocks per rank; the table's size is both blocks): the board beats messages at
//     every size on both engines. Processes: 8 B 0.23-0.29 vs 1.1-1.4 us (recursive doubling),
//     4 KiB 1.0 vs 11-12, 1 MiB 169-174 vs 437-485 (straight beyond the slots; forced straight
//     below them it pays its system calls: 8 B 3.4-4.4 us). Threads: 8 B 0.19-0.36 vs 0.5;
//     straight from 4 KiB blocks in three rounds of four (4 KiB 0.56-0.74 vs 1.0-3.0 us through
//     the slots), 1 MiB 69-78 vs 107-128 by messages. Processes on the world, 2026-11-29:
//     staged through node memory beats straight copies at every size (far: 16 KiB 2.31 vs
//     3.55, 1 MiB 74.9 vs 92.7, 4 MiB 299 vs 421) and the slots from 8 KiB blocks (near: 4 KiB
//     0.45-0.46 vs 0.54 us, 8 KiB 0.59-0.61 vs 0.75, 16 KiB 0.90-0.91 vs 1.31-1.33; far: 4 KiB
//     1.46-1.50 vs 1.31-1.35, 8 KiB 1.75-1.96 vs 1.75-1.94, 16 KiB 2.39-2.45 vs 2.64-3.00).
//     4 ranks on 2 cores (oversubscribed, --quick) disagree below the slots' limit (16 KiB
//     blocks: slots 10.4 us, staged 15.5: its one more wait for the others costs a context
//     switch there, a handoff where each rank has its core) and agree beyond it (128 KiB: 45.5
//     vs 117 straight); the rule follows the 2-rank figures.
//   - reduce_scatter_block (a block per rank): the board beats messages at every size on both
//     engines, through the slots while the input fits one (2 ranks: blocks up to 8 KiB) and
//     straight beyond. Processes: 8 B 0.23-0.61 vs 1.1-1.9 us (recursive halving), 4 KiB
//     1.05-2.75 vs 7.9-12.9, 1 MiB 256 vs 299-1010. Threads: 8 B 0.22 vs 0.56-0.93, 16 KiB
//     1.9-2.0 vs 3.9-4.5; forced straight it pays more below 8 KiB (8 B 0.29-1.2 us).
//     Processes on the world, 2026-11-29: past the slots, staged through node memory beats
//     straight copies at every size (far: 16 KiB blocks 2.81 vs 3.97 us, 64 KiB 6.0 vs 8.7,
//     1 MiB 92.9 vs 111.4; 4 ranks, --quick: 16 KiB 17.5 vs 30.4, 1 MiB 531 vs 681), and the
//     slots win while the input fits one (near: 4 KiB blocks 0.44-0.45 vs 0.50, 8 KiB
//     0.62-0.63 vs 0.67-0.68; far: 4 KiB 1.26-1.27 vs 1.61-1.65, 8 KiB 1.66-1.69 vs 2.11-2.15;
//     4 ranks, 2 KiB blocks 7.4 vs 11.9). Allreduce through the slots against staged up to 16
//     KiB depends on the placement (near: 4 KiB 0.60-0.65 vs 0.49-0.51 staged; far: 1.40-1.41
//     vs 1.98-2.03): the slots stay.
//   - across emulated nodes (4 MPI ranks as 2 x 2, CAIRN_NODES=2, `cairn-bench <collective>
//     --quick` against the table without the hierarchical rules; 4 ranks on 2 cores, so one
//     round each and noisy): by node leaders bcast 64 KiB 38 vs 81 us, 4 MiB 2.4 vs 3.1 ms;
//     reduce 64 KiB 62 vs 82 us, 4 MiB 3.6 vs 4.4 ms; allgather 8 B blocks 11 vs 14 us, 64 KiB
//     blocks 153 vs 197 us, but 4 MiB blocks 19 vs 8 ms (the ring keeps them); allreduce by
//     slices 256 KiB 284-370 vs 434-503 us, 1 MiB a tie, 4 MiB 5.4-6.0 vs 4.4-5.2 ms (the ring
//     keeps them). At 8 B every form ties with flat within the noise of oversubscription; the
//     leaders' few messages across nodes are for real networks, which emulation does not price.
//
// The table is canonical (coll::to_string of each rule, joined by ","): cairn-info prints it
// rule by rule and the test compares the two.
#include "cairn/coll/algorithms.hpp"

namespace cairn::coll {

// The staged collectives' chunking (CAIRN_COLL_CHUNK, CAIRN_COLL_DEPTH override it): bytes per
// chunk and chunks in flight per rank. From the sweep of `cairn-bench allreduce` on 2 MPI ranks
// with shared_memory_staged forced, 1 to 16 MiB: chunks of 32 KiB to 256 KiB and depths of 2 to
// 16 all came within the run-to-run noise (about 15 %) of each other; 128 KiB x 4 was among the
// best at 16 MiB in both rounds.
staging_shape default_staging() { return {131072, 4}; }

std::string_view default_selection_table() {
  return "barrier=shared_memory if !count_check,"
         "barrier=dissemination,"

         "bcast=shared_memory_direct@4k- if !count_check and !processes,"
         "bcast=shared_memory_staged@16385- if !count_check and processes,"
         "bcast=shared_memory if !count_check,"
         "bcast=hierarchical if nodes>1 and nodes<ranks,"
         "bcast=scatter_allgather@512k- if ranks>2,"
         "bcast=binomial,"

         "reduce=shared_memory_direct@8k- if !count_check and !processes,"
         "reduce=shared_memory_staged@16385- if !count_check and processes,"
         "reduce=shared_memory if !count_check,"
         "reduce=hierarchical if nodes>1 and nodes<ranks,"
         "reduce=reduce_scatter_gather@512k- if ranks>2 and count>=ranks,"
         "reduce=binomial,"

         "allreduce=shared_memory_direct@1k- if !count_check and !processes,"
         "allreduce=shared_memory_staged@16385- if !count_check and processes,"
         "allreduce=shared_memory_direct@16385- if !count_check and processes,"
         "allreduce=shared_memory if !count_check,"
         "allreduce=hierarchical_slices@64k-1m if nodes>1 and nodes<ranks and count>=ranks,"
         "allreduce=hierarchical@-1m if nodes>1 and nodes<ranks,"
         "allreduce=ring@256k- if commutative and ranks>2 and count>=ranks,"
         "allreduce=rabenseifner@64k- if ranks>1 and count>=ranks,"
         "allreduce=recursive_doubling,"

         "gather=binomial,"
         "scatter=binomial,"

         "allgather=shared_memory_direct@8k- if !count_check and !processes,"
         "allgather=shared_memory_staged@16k- if !count_check and processes,"
         "allgather=shared_memory if !count_check,"
         "allgather=hierarchical@-256k if nodes>1 and nodes<ranks,"
         "allgather=ring@64k-,"
         "allgather=recursive_doubling if power_of_two,"
         "allgather=bruck,"

         "alltoall=bruck@-256 if ranks>4,"
         "alltoall=pairwise,"

         "reduce_scatter_block=shared_memory_staged@16385- if !count_check and processes,"
         "reduce_scatter_block=shared_memory if !count_check,"
         "reduce_scatter_block=ring@256k- if commutative and ranks>2,"
         "reduce_scatter_block=recursive_halving,"

         "scan=recursive_doubling,"
         "exscan=recursive_doubling,"
         "gatherv=linear,"
         "scatterv=linear,"
         "allgatherv=ring,"
         "alltoallv=pairwise,"
         "reduce_scatter=pairwise,"

         "generalized_reduce=shared_memory_staged@16385- if !count_check and processes and "
         "!balanced,"
         "generalized_reduce=shared_memory if !count_check and !balanced,"
         "generalized_reduce=hierarchical if nodes>1 and nodes<ranks and !balanced,"
         "generalized_reduce=butterfly";
}

}  // namespace cairn::coll
