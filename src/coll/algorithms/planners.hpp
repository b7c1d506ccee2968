#pragma once
// Schedule planners, one algorithm per file (src/coll/algorithms/<collective>_<algorithm>.cpp).
// Each is a pure function of the group size p, this rank's group rank and the message size.

#include <cstddef>
#include <span>
#include <vector>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/schedule.hpp"

namespace cairn::coll {

/// Bytes of a signature record of the count check: (bytes, root, plan hash, rank) for the
/// minimum and for the maximum.
inline constexpr std::size_t signature_record_bytes = 64;

/// The count check that CAIRN_COLL_CHECK=1 puts before every collective with one size on all
/// ranks: a dissemination allreduce (ceil(log2 p) rounds of 64-byte messages) of the minimum
/// and maximum signature (`bytes`, `root`, plan) over the group, then a verdict every rank
/// reaches alike: on a difference all fail, naming two ranks and their sizes, and nothing of
/// the collective itself runs (no truncation, no hang).
schedule plan_count_check_dissemination(int p, int me, std::size_t bytes, int root);

/// Dissemination barrier: ceil(log2 p) rounds of zero-byte messages.
schedule plan_barrier_dissemination(int p, int me);

/// Binomial-tree broadcast of `bytes` from group rank `root` (sends after the one receive all
/// go in one round).
schedule plan_bcast_binomial(int p, int me, int root, std::size_t bytes);

/// Binomial-tree reduce to `root`. With a non-commutative operation the tree is rooted at
/// rank 0 (each subtree is a contiguous rank range, so operands stay in rank order) and the
/// result is forwarded to `root`.
schedule plan_reduce_binomial(int p, int me, int root, std::size_t bytes, bool commutative);

/// Recursive-doubling (butterfly) allreduce. Non-powers of two fold first: with a commutative
/// operation as in Aspen (section 2.1: ranks beyond the largest power of two p' send to
/// rank - p', which take part in the butterfly and send the result back), otherwise adjacent
/// pairs (2i, 2i+1) fold so that operands stay in rank order. 2 + floor(log2 p) rounds of
/// messages when p is not a power of two, log2 p when it is.
schedule plan_allreduce_recursive_doubling(int p, int me, std::size_t bytes, std::size_t elem,
                                           bool commutative);

/// Ring allreduce (reduce-scatter ring then allgather ring, 2(p-1) rounds, each rank sends
/// about 2 bytes (p-1)/p): bandwidth-optimal for long vectors. Commutative operations only.
schedule plan_allreduce_ring(int p, int me, std::size_t bytes, std::size_t elem);

/// Binomial-tree gather of one `block` of bytes per rank to `root`, into the root's output in
/// group-rank order. The tree is the broadcast's, rooted at `root`: a subtree is a contiguous
/// range of ranks relative to the root, which an inner rank collects in scratch and forwards
/// as one message (leaves send from the input). On the root, children's ranges land in the
/// output directly except the one range that wraps past the last rank, which goes through
/// scratch and is copied into place in two pieces. The root receives ceil(log2 p) messages;
/// the longest chain of forwarded messages is the tree's height, floor(log2 p).
schedule plan_gather_binomial(int p, int me, int root, std::size_t block);

/// Binomial-tree scatter of `root`'s input (one `block` of bytes per rank, in group-rank
/// order): the gather tree backwards. Inner ranks receive their subtree's range in scratch,
/// keep the first block and forward the rest, largest subtree first; the root sends straight
/// from its input, assembling only the one range that wraps past the last rank in scratch.
schedule plan_scatter_binomial(int p, int me, int root, std::size_t block);

/// Ring allgather of one `block` per rank into the output in rank order: p - 1 steps, each
/// passing the last block received to the right neighbour. Bandwidth-optimal, latency p - 1.
schedule plan_allgather_ring(int p, int me, std::size_t block);

/// Bruck allgather (Bruck et al. 1997, the concatenation algorithm), any p: ceil(log2 p)
/// steps; in the step with distance d a rank sends the min(d, p - d) blocks it has to rank
/// me - d and receives as many from me + d. Blocks are kept in scratch rotated by the rank's
/// own position (rank 0 works in the output directly) and rotated into place at the end.
schedule plan_allgather_bruck(int p, int me, std::size_t block);

/// Pairwise-exchange alltoall: block j of the input goes to rank j, block i of the output
/// comes from rank i (`block` bytes each). The own block is copied locally; then p - 1 steps,
/// in step k sending to (me + k) % p and receiving from (me - k + p) % p.
schedule plan_alltoall_pairwise(int p, int me, std::size_t block);

/// Ring reduce-scatter of p blocks of `block` bytes: rank i gets block i reduced over all
/// ranks, in its output. p - 1 steps; the partial of block b starts at rank b + 1 and passes
/// right through every rank, which folds in its own input block, ending at rank b (each rank
/// sends (p - 1) blocks). The order of operands follows the ring, not the ranks: commutative
/// operations only. `in_place`: the output is the input's first block (MPI_IN_PLACE), so the
/// last partial goes through scratch (one block more on 2 ranks).
schedule plan_reduce_scatter_block_ring(int p, int me, std::size_t block, bool in_place = false);

/// Recursive-halving reduce-scatter of p blocks of `block` bytes, operands in rank order (any
/// associative operation). Non-powers of two fold first in adjacent pairs (2i hands its whole
/// input to 2i + 1, as in the ordered allreduce fold, and gets its block back at the end).
/// Then log2 p' steps with distances 1, 2, 4, ... (increasing, so that every partial covers a
/// contiguous range of ranks): each sends half of what it still holds to its partner and folds
/// in the partner's half of the other. The blocks sit in scratch in bit-reversed order of their
/// core rank, so that both halves are contiguous. Rounds of messages: log2 p for powers of
/// two, else floor(log2 p) + 2; each core rank sends about p blocks. Scratch: p blocks (the
/// accumulator) plus the largest half received (p blocks on ranks that take a fold).
schedule plan_reduce_scatter_block_recursive_halving(int p, int me, std::size_t block);

/// Inclusive scan by recursive doubling (Hillis-Steele): ceil(log2 p) rounds; in round k rank
/// i sends its partial to i + 2^k and folds in the partial of i - 2^k as the left operand, so
/// that operands stay in rank order.
schedule plan_scan_recursive_doubling(int p, int me, std::size_t bytes);

/// Exclusive scan by recursive doubling: the scan's rounds, with the exclusive partial (the
/// result, in the output) kept next to the inclusive one (sent, in scratch). Rank 0 never
/// writes its output.
schedule plan_exscan_recursive_doubling(int p, int me, std::size_t bytes);

/// Scatter + allgather broadcast (van de Geijn): the root scatters ceil(bytes / p)-byte chunks
/// (binomial) and the ranks allgather them (ring). About 2 bytes moved per rank instead of
/// log2 p x bytes: for long messages. Uneven sizes go through a padded copy in scratch.
schedule plan_bcast_scatter_allgather(int p, int me, int root, std::size_t bytes);

/// Reduce as reduce-scatter (ring for commutative operations on more than 2 ranks, else
/// recursive halving) then a binomial gather of the reduced blocks to the root (Rabenseifner);
/// the count % p elements left over are reduced by a binomial tree. For long vectors.
schedule plan_reduce_scatter_gather(int p, int me, int root, std::size_t bytes, std::size_t elem,
                                    bool commutative);

/// Rabenseifner's allreduce: reduce-scatter by recursive halving (any operation, rank order)
/// then allgather by recursive doubling, plus a recursive-doubling allreduce of the count % p
/// elements left over.
schedule plan_allreduce_rabenseifner(int p, int me, std::size_t bytes, std::size_t elem,
                                     bool commutative);

/// Recursive-doubling allgather: log2 p exchanges of doubling size for a power of two. Other
/// p fold first (rank r >= p' hands its block to r - p' and gets the result back at the end),
/// 2 + floor(log2 p) rounds of messages.
schedule plan_allgather_recursive_doubling(int p, int me, std::size_t block);

/// Bruck alltoall (Bruck et al. 1997): rotate, then ceil(log2 p) steps where the blocks whose
/// index has bit k set travel k ranks on in one packed message, then rotate back. Latency-
/// optimal for short blocks; each block travels up to log2 p times.
schedule plan_alltoall_bruck(int p, int me, std::size_t block);

/// The in-place form of `plan` for a plan that would overwrite input it still reads (the
/// caller's one buffer is both): the first `in_bytes` of the output are copied to scratch (after
/// the plan's own) in the plan's first round, before any step, and the plan reads its input
/// there (a plan that never reads its input or never writes its output is returned as it is).
/// Same name and rounds. Used where the algorithm reads input after writing output
/// (pairwise alltoall, exscan); the others run in place unchanged (see start.cpp).
schedule plan_in_place_copy(const schedule& plan, std::size_t in_bytes);

/// Linear gatherv: every rank sends its `send_bytes` (even zero) to the root, which receives
/// rank r's block of recv_bytes[r] at recv_offsets[r] of its output (all sizes in bytes).
schedule plan_gatherv_linear(int p, int me, int root, std::size_t send_bytes,
                             const std::vector<std::size_t>& recv_bytes,
                             const std::vector<std::size_t>& recv_offsets);

/// Linear scatterv: the root sends send_bytes[r] from send_offsets[r] of its input to rank r,
/// which receives `recv_bytes` into its output.
schedule plan_scatterv_linear(int p, int me, int root, const std::vector<std::size_t>& send_bytes,
                              const std::vector<std::size_t>& send_offsets, std::size_t recv_bytes);

/// Ring allgatherv: rank r's block of bytes[r] goes to offsets[r] of every output; p - 1 steps.
schedule plan_allgatherv_ring(int p, int me, const std::vector<std::size_t>& bytes,
                              const std::vector<std::size_t>& offsets);

/// Pairwise alltoallv: in step k rank me sends send_bytes[to] from send_offsets[to] to
/// to = me + k and receives recv_bytes[from] at recv_offsets[from] from from = me - k.
schedule plan_alltoallv_pairwise(int p, int me, const std::vector<std::size_t>& send_bytes,
                                 const std::vector<std::size_t>& send_offsets,
                                 const std::vector<std::size_t>& recv_bytes,
                                 const std::vector<std::size_t>& recv_offsets);

/// Pairwise reduce-scatter with per-rank block sizes (`bytes[r]`, blocks packed in rank order
/// in the input): every rank sends block r to rank r and receives its own block from everyone
/// in one round, then folds them in rank order (any associative operation). Scratch: p - 1
/// blocks.
schedule plan_reduce_scatter_pairwise(int p, int me, const std::vector<std::size_t>& bytes);

// The hierarchical algorithms (Aspen section 3.1; Open MPI's han): inside each node, then among
// one leader per node, then inside each node again. `node_of[r]` is group rank r's node (equal
// values share one); the group size is node_of.size(). Nodes are ordered by their first group
// rank; a node leads with its first rank (a rooted collective's root leads its own node). Parts
// inside a node are binomial trees; `across` is the algorithm among the leaders. Operands stay
// in group order when every node holds consecutive group ranks (else commutative operations
// only: src/coll/engine/start.cpp refuses the rest).

/// The flat allreduce `a` (ring, rabenseifner, else recursive_doubling): what the hierarchical
/// allreduces run across nodes.
schedule plan_allreduce_flat(allreduce_algorithm a, int p, int me, std::size_t bytes,
                             std::size_t elem, bool commutative);

/// Allreduce: binomial reduce to each node's leader, `across` (recursive_doubling, ring or
/// rabenseifner) among the leaders in place, binomial bcast inside each node.
schedule plan_allreduce_hierarchical(std::span<const int> node_of, int me, std::size_t bytes,
                                     std::size_t elem, bool commutative,
                                     allreduce_algorithm across);

/// Allreduce for long vectors on nodes of equal size q: reduce-scatter inside each node
/// (pairwise, slice r to local rank r), `across` among the ranks of the same local index on every
/// node (each slice reduced across nodes by its own rank, all links busy), allgather inside each
/// node (ring). Each rank sends about 2 bytes (q-1)/q inside its node and 1/q of the vector
/// across nodes per step of `across`.
schedule plan_allreduce_hierarchical_slices(std::span<const int> node_of, int me, std::size_t bytes,
                                            std::size_t elem, bool commutative,
                                            allreduce_algorithm across);

/// Allgather of one `block` per rank: binomial gather to each node's leader, ring allgatherv
/// among the leaders (nodes may hold different counts), binomial bcast of everything inside each
/// node. Where the nodes' ranks are not consecutive the blocks travel in node order through
/// scratch and are copied into group order at the end.
schedule plan_allgather_hierarchical(std::span<const int> node_of, int me, std::size_t block);

/// Bcast from group rank `root`: `across` (binomial or scatter_allgather) among the leaders,
/// then binomial inside each node.
schedule plan_bcast_hierarchical(std::span<const int> node_of, int me, int root, std::size_t bytes,
                                 bcast_algorithm across);

/// Reduce to group rank `root`: binomial inside each node to its leader (partials in scratch),
/// then `across` (binomial or reduce_scatter_gather) among the leaders to the root.
schedule plan_reduce_hierarchical(std::span<const int> node_of, int me, int root, std::size_t bytes,
                                  std::size_t elem, bool commutative, reduce_algorithm across);

}  // namespace cairn::coll
