// The direct board collectives: bcast, reduce, allreduce, the generalized reduce, allgather and
// reduce_scatter_block longer than a slot's payload (or forced: shared_memory_direct), run by the
// node board's protocol (shared_memory_flat.cpp on the world, shared_memory_group.cpp on groups)
// with the slots carrying each rank's buffer addresses instead of its data.
//
// Once every member published, each moves its share straight between the members' buffers —
// plain copies on the threads engine, cross-memory reads and writes (one system call per peer
// and direction, node/cross_memory.hpp) on the MPI engine:
//
//   bcast      each non-root copies the root's buffer into its own
//   reduce     member q combines element segment q of every input, in group order, and writes
//              it into the root's output
//   allreduce  the same, written into every member's output
//   generalized (Aspen's reduce, on the group P ∪ R whose first ranks are the participants)
//              member q combines segment q of the participants' inputs and writes it into
//              every receiver's output: all members share the work, also the receivers that
//              contribute nothing
//   allgather  each member copies every other member's block from its input into its own
//              output
//   reduce_scatter_block  member q combines block q of every input, in group order, into its
//              own output (an in-place call publishes a copy of its first block, which its
//              output overwrites while member 0 may still read it)
//
// so a reduction's bytes cross between ranks twice (read in, written out) with no message, no
// matching and no staging through the slots, and every member reduces 1/n of the data. Member
// q alone touches segment q anywhere, and reads all of it before writing any: in-place calls
// (output = input) are safe. The boards complete a member only once every member finished
// moving (the world's `done` words, a group slot's acknowledgments), as buffers are in use
// until then. Since a count that differs across ranks is caught by the slots' signatures
// before anything moves, the board serves these collectives at every size where the engine
// allows it, and counts on either side of the payload limit cannot put ranks on different
// algorithms.
#include "coll/board/shared_memory_direct.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "coll/board/board_layout.hpp"
#include "coll/engine/coll_rank.hpp"
#include "node/copy_bytes.hpp"
#include "node/cross_memory.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {

std::byte* at_least(std::vector<std::byte>& v, std::size_t bytes) {
  if (v.size() < bytes) v.resize(bytes);
  return v.data();
}

// Copies `bytes` between this rank's `local` and another world rank w's `remote` (a write if
// `write`); 0 or an errno.
int copy_peer(rank_context& ctx, int w, std::byte* local, std::uint64_t remote, std::size_t bytes,
              bool write) {
  if (!bytes) return 0;
  auto* r = reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(remote));
  if (ctx.engine() == cairn::engine::threads) {
    if (write)
      copy_bytes(r, local, bytes);
    else
      copy_bytes(local, r, bytes);
    return 0;
  }
  return cross_memory_copy(ctx.tp().peer_pid(w), local, r, bytes, write);
}

std::string copy_error(int w, int err, bool write) {
  return std::string("could not ") + (write ? "write into" : "read from") + " rank " +
         std::to_string(w) + "'s buffer (cross-memory copy: " + std::strerror(err) + ")";
}

// Reduce, allreduce, the generalized reduce and reduce_scatter_block: this member's segment of
// every input (of the participants'), combined in group order, into the root's output (reduce),
// every output (allreduce), the receivers' (generalized) or its own (reduce_scatter_block).
std::string reduce_segment(rank_context& ctx, const board_call& e, std::span<const int> members,
                           int me, std::span<const direct_buffers> bufs) {
  // A reduce-scatter's segments are its blocks, and its output holds its own segment only.
  const bool scatter = e.kind == board_collective::reduce_scatter_block;
  const std::size_t n = members.size(), elem = e.op.elem, count = e.carried(n) / elem;
  const std::size_t first = count * static_cast<std::size_t>(me) / n,
                    last = count * static_cast<std::size_t>(me + 1) / n;
  const std::size_t off = first * elem, seg = (last - first) * elem, out_off = scatter ? 0 : off;
  if (!seg) return {};
  const bool threads = ctx.engine() == cairn::engine::threads;
  const bool generalized = e.kind == board_collective::reduce_generalized;
  const std::size_t operands = generalized ? static_cast<std::size_t>(e.participants) : n;
  // Whether group rank q receives the result.
  auto receives = [&](std::size_t q) {
    if (scatter) return static_cast<int>(q) == me;
    if (generalized)
      return std::binary_search(e.receivers->begin(), e.receivers->end(), members[q]);
    return e.kind == board_collective::allreduce || static_cast<int>(q) == e.root;
  };
  // Accumulate in this rank's own output where it receives one and it is not its input.
  const bool own_out = receives(static_cast<std::size_t>(me)) && e.out != e.in;
  std::byte* acc = own_out ? e.out + out_off : at_least(coll_state(ctx).accumulator, seg);
  for (std::size_t q = 0; q < operands; ++q) {
    const int w = members[q];
    // A reduce-scatter's first block is read where its owner published it (direct_buffers).
    const std::uint64_t remote = scatter && off == 0 ? bufs[q].out : bufs[q].in + off;
    const std::byte* operand = nullptr;
    if (static_cast<int>(q) == me) {
      operand = e.in + off;
    } else if (threads) {
      operand = reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(remote));
    } else {
      std::byte* to =
          q == 0 ? acc
                 : at_least(coll_state(ctx).peer_segment, seg);  // the first operand lands in place
      if (const int err = copy_peer(ctx, w, to, remote, seg, false))
        return copy_error(w, err, false);
      operand = to;
    }
    if (q == 0) {
      if (operand != acc) copy_bytes(acc, operand, seg);
    } else {
      e.op.combine(e.op.op.get(), operand, acc, seg / elem, false);  // acc = acc op operand
    }
  }
  // Write the segment out, starting after this rank so that writers spread over the outputs.
  for (std::size_t i = 1; i <= n; ++i) {
    const std::size_t q = (static_cast<std::size_t>(me) + i) % n;
    if (!receives(q)) continue;
    const int w = members[q];
    if (static_cast<int>(q) == me) {
      if (acc != e.out + out_off) copy_bytes(e.out + out_off, acc, seg);
    } else if (const int err = copy_peer(ctx, w, acc, bufs[q].out + off, seg, true)) {
      return copy_error(w, err, true);
    }
  }
  return {};
}

// Allgather: every other member's block, read straight from its input into this rank's output
// at the member's place, starting after this rank so that readers spread over the inputs. Peers
// only read this rank's input (in place: its block of the output, which no peer writes).
std::string gather_blocks(rank_context& ctx, const board_call& e, std::span<const int> members,
                          int me, std::span<const direct_buffers> bufs) {
  const std::size_t n = members.size(), block = e.bytes;
  std::byte* mine = e.out + static_cast<std::size_t>(me) * block;
  if (mine != e.in) copy_bytes(mine, e.in, block);
  for (std::size_t i = 1; i < n; ++i) {
    const std::size_t q = (static_cast<std::size_t>(me) + i) % n;
    if (const int err = copy_peer(ctx, members[q], e.out + q * block, bufs[q].in, block, false))
      return copy_error(members[q], err, false);
  }
  return {};
}

}  // namespace

bool board_moves_direct(board_collective kind, std::size_t bytes) noexcept {
  // Every board collective but the barrier moves data.
  return bytes > node_board::payload_max && kind != board_collective::barrier &&
         kind != board_collective::none;
}

std::string move_direct(rank_context& ctx, const board_call& e, std::span<const int> members,
                        int me, std::span<const direct_buffers> bufs) {
  if (e.kind == board_collective::allgather) return gather_blocks(ctx, e, members, me, bufs);
  if (e.kind != board_collective::bcast) return reduce_segment(ctx, e, members, me, bufs);
  if (me == e.root) return {};
  const int w = members[static_cast<std::size_t>(e.root)];
  if (const int err =
          copy_peer(ctx, w, e.out, bufs[static_cast<std::size_t>(e.root)].in, e.bytes, false))
    return copy_error(w, err, false);
  return {};
}

}  // namespace cairn::detail
