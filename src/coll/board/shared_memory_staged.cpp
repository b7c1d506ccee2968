// The staged board collectives: bcast, reduce, allreduce, allgather and reduce_scatter_block,
// copied through node memory in pipelined chunks. Run by the world's board protocol
// (shared_memory_flat.cpp: slots, signatures, `done` words) or a group's
// (shared_memory_group.cpp: keyed slots); this file moves the data once every rank published and
// agrees.
//
// Each rank owns staging areas in its node region (node_staging): rings of `depth` chunk slots
// with three counters. The world's staged collectives take turns on one area per rank, their
// counters running on across collectives (`base`); a group collective uses the areas of the keyed
// slots its members published it in, counters from 0, which are free again once every member
// acknowledged the slot. Chunk k of a collective uses ring slot k mod depth of every rank. In a
// reduction, segment q of chunk k is rank q's to combine: a reduce's or allreduce's chunk is split
// evenly over the n ranks and laid out in the slot like the buffer; a reduce-scatter's chunk k is
// chunk k of every rank's block, q's at the q-th place of the slot.
//
//   stage    rank p copies the segments q != p of its input's chunk k into its slot
//   reduce   rank p combines segment p of chunk k in rank order (its own input, the others'
//            staged copies) into its slot's segment p, and into its output if it receives (a
//            reduce-scatter's: its output only, as nobody else reads it)
//   copy     a receiving rank copies every other segment of chunk k from its owner's slot
//
// A bcast's root stages whole chunks that the others copy out; in an allgather every rank
// stages chunk k of its block and copies chunk k of every other block out. Each step publishes
// a counter (node_staging: staged, reduced, copied) that the other ranks' next steps wait for,
// so ranks work on different chunks at once: while one reduces chunk k, another stages k + 1
// (the pipeline), and each chunk's bytes stay in the caches between the steps. A rank writes a
// slot again only once every rank copied out (released) the chunk that used it before, and it
// combined its own segment of that chunk (a short last chunk's segments lie elsewhere): the
// counters count chunks across all staged collectives, so a slot's first use in a collective
// waits for every rank to have released the collective before it.
//
// Compared with straight cross-memory copies (shared_memory_direct.cpp), every byte is copied
// once more, but by plain loads and stores in shared memory rather than a system call that pins
// each page: faster on this machine from the board's slot limit up to the crossover the
// selection table names (src/coll/engine/selection_table.cpp). Peers read only the ring, never
// this rank's buffers, so the collective finishes on a rank as soon as its own part is done.
#include "coll/board/shared_memory_staged.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cairn/runtime/error.hpp"
#include "coll/board/board_layout.hpp"
#include "node/copy_bytes.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : fallback;
}

// One staged collective's steps on this rank: its chunks, slots and counters.
struct staged_run {
  rank_context& ctx;
  const staging_members& m;
  const board_call& e;
  staged_progress& p;
  int n, me;
  std::size_t elem, count;
  // The ranks whose inputs are combined, the first ones (a generalized reduce's participants;
  // else all n).
  int contributors = is(board_collective::reduce_generalized) ? e.participants : n;
  // True if this rank has a copy step: its output takes chunks from other ranks' slots (a
  // reduction's also its own combined segment). A reduce-scatter's output is its own segment
  // alone, which its reduce step writes.
  bool receives = [this] {
    switch (e.kind) {
      case board_collective::bcast: return me != e.root;
      case board_collective::reduce: return me == e.root;
      case board_collective::reduce_scatter_block: return false;  // its own segment only
      case board_collective::reduce_generalized:
        return std::binary_search(e.receivers->begin(), e.receivers->end(),
                                  m.world[static_cast<std::size_t>(me)]);
      default: return true;
    }
  }();

  bool is(board_collective k) const { return e.kind == k; }
  // A reduction: ranks combine segments (reduce, allreduce, reduce_scatter_block, generalized
  // reduce).
  bool reduces() const { return !is(board_collective::bcast) && !is(board_collective::allgather); }
  // True if this rank copies its input's chunks into its ring (not a bcast's others, nor a
  // generalized reduce's receivers that do not participate).
  bool stages() const { return is(board_collective::bcast) ? me == e.root : me < contributors; }
  // True if ranks other than this one read its combined segments from its ring.
  bool others_read() const {
    switch (e.kind) {
      case board_collective::reduce: return me != e.root;
      case board_collective::reduce_generalized: return e.receivers->size() > (receives ? 1u : 0u);
      default: return true;
    }
  }

  // Elements of chunk k (of a reduce-scatter: of each block).
  std::size_t chunk_count(std::uint64_t k) const {
    return std::min(p.chunk_elems, count - static_cast<std::size_t>(k) * p.chunk_elems);
  }
  static std::size_t seg_first(std::size_t m, int q, int n) {
    return m * static_cast<std::size_t>(q) / static_cast<std::size_t>(n);
  }
  // Where chunk k starts in a buffer of the call's count (an allgather's block, a bcast's or
  // a reduction's buffer, a reduce-scatter's output).
  std::size_t buffer_offset(std::uint64_t k) const {
    return static_cast<std::size_t>(k) * p.chunk_elems * elem;
  }
  std::byte* slot(int r, std::uint64_t k) const {
    return node_staging::ring(m.areas[static_cast<std::size_t>(r)]) +
           static_cast<std::size_t>(k % p.depth) * p.slot_bytes;
  }
  std::atomic<std::uint64_t>& word(int r, node_staging::counter c) const {
    return node_staging::word(m.areas[static_cast<std::size_t>(r)], c);
  }

  // Segment q of chunk k, the part rank q combines: where it lies in the input and in a ring
  // slot, and its bytes. A reduce-scatter's is chunk k of block q, at q's place in the slot;
  // a reduce's or allreduce's the q-th of n even parts of the chunk, laid out like it.
  struct segment {
    std::size_t in_at, ring_at, bytes;
  };
  segment segment_of(std::uint64_t k, int q) const {
    const std::size_t m = chunk_count(k);
    if (is(board_collective::reduce_scatter_block)) {
      const auto qs = static_cast<std::size_t>(q);
      return {qs * e.bytes + buffer_offset(k), qs * p.chunk_elems * elem, m * elem};
    }
    const std::size_t first = seg_first(m, q, n) * elem;
    return {buffer_offset(k) + first, first, seg_first(m, q + 1, n) * elem - first};
  }

  void publish(node_staging::counter c, std::uint64_t chunks) {
    // seq_cst, then wake: a parked rank re-checks the word it waits for, or its doorbell
    // (board_ready).
    word(me, c).store(p.base + chunks, std::memory_order_seq_cst);
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      const int w = m.world[static_cast<std::size_t>(r)];
      if (m.bells) m.bells->doorbell(w).fetch_add(1, std::memory_order_seq_cst);
      ctx.tp().wake(w);
    }
    ctx.note_progress();
  }
  // r if rank r's counter c is below p.base + chunks, else -1.
  int below(int r, node_staging::counter c, std::uint64_t chunks) const {
    return word(r, c).load(std::memory_order_acquire) < p.base + chunks ? r : -1;
  }
  // The first rank other than this one whose counter c is below p.base + chunks, or -1;
  // starts after this rank so that ranks poll different lines.
  int lagging(node_staging::counter c, std::uint64_t chunks) const {
    for (int i = 1; i < n; ++i)
      if (const int r = below((me + i) % n, c, chunks); r >= 0) return r;
    return -1;
  }
  // The counter value at which every rank released slot (k mod depth)'s previous chunk.
  std::uint64_t released_before(std::uint64_t k) const { return k < p.depth ? 0 : k - p.depth + 1; }

  // Copies this rank's input chunk k into its slot: all of it for a bcast's root or an
  // allgather, else every segment but its own.
  void stage(std::uint64_t k) {
    std::byte* to = slot(me, k);
    if (!reduces()) {
      copy_bytes(to, e.in + buffer_offset(k), chunk_count(k));
      return;
    }
    if (!is(board_collective::reduce_scatter_block)) {
      // The other segments lie before and after this rank's, laid out in the slot as in the
      // buffer: two copies, whatever the number of ranks.
      const segment g = segment_of(k, me);
      const std::size_t at = buffer_offset(k), end = chunk_count(k) * elem;
      copy_bytes(to, e.in + at, g.ring_at);
      copy_bytes(to + g.ring_at + g.bytes, e.in + at + g.ring_at + g.bytes,
                 end - g.ring_at - g.bytes);
      return;
    }
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      const segment g = segment_of(k, q);
      copy_bytes(to + g.ring_at, e.in + g.in_at, g.bytes);
    }
  }

  // Combines segment `me` of chunk k, in rank order.
  void reduce(std::uint64_t k) {
    const segment g = segment_of(k, me);
    if (!g.bytes) return;
    const std::size_t cnt = g.bytes / elem;
    std::byte* ring = slot(me, k) + g.ring_at;
    const bool scatter = is(board_collective::reduce_scatter_block);
    // Where this rank's result goes: a reduce-scatter's output chunk, else the chunk's
    // segment of the output (if it receives).
    std::byte* result = scatter ? e.out + buffer_offset(k) : receives ? e.out + g.in_at : nullptr;
    // Combined in the output where this rank receives one and the output is not the input
    // (the input's segment is read as an operand after the first), else in the ring. An
    // in-place reduce-scatter's output is its input's block 0, staged before this (for rank 0,
    // its first operand: combined where it lies).
    const bool in_out = scatter || (receives && e.out != e.in);
    std::byte* acc = in_out ? result : ring;
    for (int q = 0; q < contributors; ++q) {
      const std::byte* operand = q == me ? e.in + g.in_at : slot(q, k) + g.ring_at;
      if (q != 0)
        e.op.combine(e.op.op.get(), operand, acc, cnt, false);  // acc = acc op operand
      else if (operand != acc)
        copy_bytes(acc, operand, g.bytes);
    }
    if (scatter) return;  // nobody reads its segment of the ring
    if (others_read() && acc != ring) copy_bytes(ring, acc, g.bytes);
    if (receives && acc != result) copy_bytes(result, acc, g.bytes);
  }

  // Copies chunk k's other segments from their owners' slots: a bcast's whole chunk from the
  // root's, an allgather's chunk of every block from its rank's (and of its own from its
  // input, unless in place).
  void copy_out(std::uint64_t k) {
    const std::size_t at = buffer_offset(k);
    if (is(board_collective::bcast)) {
      copy_bytes(e.out + at, slot(e.root, k), chunk_count(k));
      return;
    }
    if (is(board_collective::allgather)) {
      for (int q = 0; q < n; ++q) {
        std::byte* to = e.out + static_cast<std::size_t>(q) * e.bytes + at;
        const std::byte* from = q == me ? e.in + at : slot(q, k);
        if (to != from) copy_bytes(to, from, chunk_count(k));
      }
      return;
    }
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      const segment g = segment_of(k, q);
      copy_bytes(e.out + g.in_at, slot(q, k) + g.ring_at, g.bytes);
    }
  }

  // One pass over the three steps; true if any moved. `wait` receives what the first step
  // that could not move waits for.
  bool pass(board_wait& wait) {
    const bool combines = reduces();
    bool moved = false;
    auto blocked = [&](int r, node_staging::counter c, std::uint64_t chunks) {
      if (!wait.word)
        wait = {&word(r, c), p.base + chunks, m.world[static_cast<std::size_t>(r)], e.call};
    };
    // A reduce's or allreduce's rank also writes its own segment of chunk k into slot k mod
    // depth (its combined result): staging chunk k + depth there waits for that too, as a short
    // last chunk lays its segments out differently and could overlap it.
    if (stages() && p.staged < p.chunks && (!combines || p.staged < p.reduced + p.depth)) {
      const std::uint64_t need = released_before(p.staged);
      if (const int r = lagging(node_staging::copied, need); r < 0) {
        stage(p.staged);
        publish(node_staging::staged, ++p.staged);
        moved = true;
      } else {
        blocked(r, node_staging::copied, need);
      }
    }
    // A generalized reduce's member that does not participate stages nothing: its combine
    // steps wait for the participants alone, and its result's ring slot for its release.
    if (combines && !stages() && p.staged < p.chunks) {
      publish(node_staging::staged, p.staged = p.chunks);
      moved = true;
    }
    if (combines && p.reduced < p.staged) {
      const std::uint64_t need = released_before(p.reduced);
      const int free = stages() ? -1 : lagging(node_staging::copied, need);
      if (const int r = free < 0 ? lagging(node_staging::staged, p.reduced + 1) : -1;
          free < 0 && r < 0) {
        reduce(p.reduced);
        publish(node_staging::reduced, ++p.reduced);
        if (!receives) publish(node_staging::copied, p.copied = p.reduced);
        moved = true;
      } else if (free >= 0) {
        blocked(free, node_staging::copied, need);
      } else {
        blocked(r, node_staging::staged, p.reduced + 1);
      }
    }
    if (receives && p.copied < p.chunks) {
      // A reduction's chunk after this rank reduced its own segment of it (and every other
      // rank its); a bcast's once the root staged it, an allgather's once every other rank
      // did (its own block's chunk comes from its input).
      const bool ready = !combines || p.copied < p.reduced;
      const auto c = combines ? node_staging::reduced : node_staging::staged;
      const int r = !ready                        ? -2
                    : is(board_collective::bcast) ? below(e.root, c, p.copied + 1)
                                                  : lagging(c, p.copied + 1);
      if (r == -1) {
        copy_out(p.copied);
        publish(node_staging::copied, ++p.copied);
        moved = true;
      } else if (r >= 0) {
        blocked(r, c, p.copied + 1);
      }
    }
    return moved;
  }

  bool finished() const {
    if (is(board_collective::bcast))
      return me == e.root ? p.staged == p.chunks : p.copied == p.chunks;
    if (is(board_collective::allgather)) return p.staged == p.chunks && p.copied == p.chunks;
    return p.copied == p.chunks && p.reduced == p.chunks;
  }
};

}  // namespace

coll::staging_shape staging_config(const char* call, int rank) {
  static const coll::staging_shape shape = [] {
    const coll::staging_shape d = coll::default_staging();
    return coll::staging_shape{env_size("CAIRN_COLL_CHUNK", d.chunk),
                               env_size("CAIRN_COLL_DEPTH", d.depth)};
  }();
  if (shape.chunk < 64 || shape.depth < 2 || shape.chunk * shape.depth > node_staging::ring_bytes)
    fail(call, rank, "staged collectives: CAIRN_COLL_CHUNK=", shape.chunk,
         " bytes x CAIRN_COLL_DEPTH=", shape.depth,
         " must be at least 64 bytes x 2 and at most the staging ring's ", node_staging::ring_bytes,
         " bytes");
  return shape;
}

staged_progress begin_staged(rank_context& ctx, const board_call& e, std::uint64_t base, int ranks,
                             std::size_t ring_bytes) {
  const coll::staging_shape shape = staging_config(e.call, ctx.rank());
  const bool bytewise = e.kind == board_collective::bcast || e.kind == board_collective::allgather;
  const std::size_t elem = bytewise ? 1 : e.op.elem;
  // A reduce-scatter's slot holds chunk k of every rank's block.
  const std::size_t blocks =
      e.kind == board_collective::reduce_scatter_block ? static_cast<std::size_t>(ranks) : 1;
  staged_progress p;
  p.base = base;
  p.elem = elem;
  // At most half the ring per chunk: a keyed slot's ring may be smaller than the chunking.
  const std::size_t chunk = std::min(shape.chunk, ring_bytes / 2);
  p.chunk_elems = std::max<std::size_t>(1, chunk / (elem * blocks));
  p.slot_bytes = p.chunk_elems * elem * blocks;
  p.depth = std::min(shape.depth, ring_bytes / p.slot_bytes);
  if (p.depth < 2)
    fail(e.call, ctx.rank(), "staged collectives: a chunk of ", p.slot_bytes,
         " bytes (elements of ", elem, " bytes", blocks > 1 ? ", one of each rank's block" : "",
         ") leaves room for fewer than 2 in the staging ring of ", ring_bytes, " bytes");
  const std::size_t count = e.bytes / elem;
  p.chunks = (count + p.chunk_elems - 1) / p.chunk_elems;
  return p;
}

bool advance_staged(rank_context& ctx, const staging_members& m, int me, const board_call& e,
                    staged_progress& p, board_wait& wait) {
  staged_run run{ctx, m, e, p, static_cast<int>(m.areas.size()), me, p.elem, e.bytes / p.elem};
  for (;;) {
    if (run.finished()) break;
    wait = {};
    if (!run.pass(wait)) return false;
  }
  // Every counter at the end of this collective: the next one's first chunks wait for it.
  const std::uint64_t end = p.chunks;
  for (auto c : {node_staging::staged, node_staging::reduced, node_staging::copied})
    if (run.word(me, c).load(std::memory_order_relaxed) != p.base + end) run.publish(c, end);
  return true;
}

}  // namespace cairn::detail
