// The shared-memory collectives on groups: barrier, bcast, reduce, allreduce, allgather,
// reduce_scatter_block and Aspen's generalized reduce on any group of ranks sharing the node
// (rank_context::node_memory()), blocking, non-blocking and persistent, any number in flight on the
// same, different and overlapping groups.
//
// A collective on a group is named by the group's identity and its number on that group (the
// same on every member: collectives on a group match in issue order), so unlike the world's
// slots (shared_memory_flat.cpp) a rank's keyed slots are not used in a fixed order. Every
// member takes a free slot of its own (preferably slot seq mod K), writes its signature and its
// payload if it carries one, publishes the key (release) and rings the doorbells of the group's
// other ranks. Every member then reads every member's slot: it finds it by key (the preferred
// slot first), checks the signature, takes the operands it needs and adds one to the slot's
// acknowledgments; the slot is free again when all members acknowledged. The owner does not
// acknowledge its own slot (one contended addition less per call): it keeps the slot taken in
// a mask of its own (group_board_watch::own_busy) until it has read it. Who carries data and
// who takes it:
//
//   barrier      nobody carries; nobody takes
//   bcast        the root carries its data; the others take it
//   reduce       everyone carries its input; the root takes all, in group order
//   allreduce    everyone carries its input; everyone takes all, in group order
//   allgather    everyone carries its block; everyone takes all, each at its place
//   reduce_scatter_block  everyone carries its input; everyone takes its block of all, in
//                group order
//   generalized  participants (the group's first ranks) carry; receivers take them all, in order
//
// Why every member reads every slot, as on the world: each slot's readers are then the same
// whatever the ranks called, so a call that disagrees (another kind, root, count, receiver
// set) is reported by every rank, and no slot is freed too early or never; with readers chosen
// by role, a rank naming another root waited for a slot nobody wrote. A rank reads its own
// slot too (so an in-place output may be overwritten before its own operand's turn). Receivers
// combine in group order, so every receiver gets the same bits and non-commutative operations
// are right.
//
// A member whose part needs no other member's slot (a bcast's root, a reduce's non-roots, a
// generalized reduce's participants that receive nothing), or only the root's (a bcast's
// others), finishes for its caller once that part is done; the rest (finding, checking and
// acknowledging every other slot) goes on as a tail, advanced whenever the rank is in cairn.
// Its own slot stays taken until then, so a rank has at most one tail per slot. A disagreement
// found by a tail is raised by the rank's next board collective (board_take_deferred).
//
// Staged ones (shared_memory_staged.cpp) carry nothing in the slot: once every signature agrees,
// the members copy through the staging areas of the slots they took, then acknowledge; the
// slot, and so its ring, is free again once every member did.
//
// Longer bcasts, reduces, allreduces and generalized reduces publish their buffers' addresses
// instead of data and move it straight between the buffers (shared_memory_direct.cpp) before
// acknowledging. Their owner gives its slot's last acknowledgment itself, once all members gave
// theirs: peers use its buffers until then, and the slot cannot be taken for another collective
// meanwhile.
//
// A gate (prepared::gate) publishes its signature only, marked with its message algorithm's
// fingerprint, and takes nothing; once all agree, its request becomes the schedule with the
// gate's number on the group (continue_as_schedule).
//
// Waiting: a rank watches its doorbell, rung (seq_cst, then woken) by a writer that published
// and by the last reader of a slot whose owner waits for it (a direct one's owner, and an owner
// with no free slot, which asks for that in group_slot::owner_waits), so one word covers all
// its group collectives in flight.
#include "coll/board/shared_memory_group.hpp"

#include "coll/board/shared_memory_flat.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cairn/coll/schedule.hpp"
#include "cairn/runtime/error.hpp"
#include "coll/board/board_layout.hpp"
#include "coll/board/shared_memory_direct.hpp"
#include "coll/board/shared_memory_staged.hpp"
#include "coll/engine/coll_rank.hpp"
#include "coll/engine/exec_pool.hpp"
#include "node/copy_bytes.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {

// One group collective in flight on this rank.
struct group_exec : board_call {
  exec_pool<group_exec>* home = nullptr;  // the pool of its rank
  std::shared_ptr<const group_members> members;
  int me = 0;  // group rank
  std::uint64_t group = 0, key = 0;
  std::uint32_t seq = 0;
  numbered number;  // a gate's: `seq`, held for its schedule
  // What this rank's slot carries (its input, or a signature only), the shape of a generalized
  // reduce (its participants and receivers; 0 for the others) and the group ranks whose
  // operands it takes, [take_first, take_end).
  bool carries = false;
  std::uint64_t shape = 0;
  int take_first = 0, take_end = 0;
  bool direct = false;  // moves data between the buffers (shared_memory_direct.cpp)
  // Moves data through the members' keyed slots' staging rings (shared_memory_staged.cpp):
  // its chunks' progress, and each member's staging area once all published (empty before).
  bool staged = false;
  staged_progress chunks;
  std::vector<std::byte*> areas;
  // Progress: the slot published (-1: not yet), the next group rank whose slot to find, every
  // slot acknowledged, and (direct) this rank's share moved.
  int slot = -1;
  int next = 0;
  // The last member slot looked for in vain: its world rank and publication count then.
  int unseen_rank = -1;
  std::uint64_t unseen_publications = 0;
  bool acknowledged = false, moved = false;
  // Its part needs no other member's slot, or only the root's (a bcast's non-root): it
  // finishes once that part is done (`leaves_tail`), and the rest of it, reading and
  // acknowledging the other slots, becomes a tail (group_tails). `reported`: a tail whose part
  // already failed.
  bool eager = false, leaves_tail = false, reported = false;

  void bind(const prepared& p, rank_context& ctx) {
    bind_call(p);
    members = p.target.members;
    me = p.target.group_rank;
    group = members->id;
    if (then) [[unlikely]] {
      number = coll_state(ctx).next_seq(group);
      seq = number.seq;
    } else {
      seq = coll_state(ctx).skip_seq(group);
    }
    key = node_board::key_of(group, seq);
    const int n = static_cast<int>(members->world_ranks.size());
    carries = false;
    shape = 0;
    take_first = take_end = 0;
    switch (kind) {
      case board_collective::barrier: break;
      case board_collective::bcast:
        carries = me == root;
        if (me != root) {
          take_first = root;
          take_end = root + 1;
        }
        break;
      case board_collective::reduce:
        carries = true;
        if (me == root) take_end = n;
        break;
      case board_collective::allreduce:
      case board_collective::allgather:
      case board_collective::reduce_scatter_block:
        carries = true;
        take_end = n;
        break;
      case board_collective::reduce_generalized: {
        const std::vector<int>& r = *p.board_receivers;
        carries = me < p.board_participants;
        if (std::binary_search(r.begin(), r.end(), ctx.rank())) take_end = p.board_participants;
        shape = shape_of(p.board_participants, r);
        break;
      }
      case board_collective::none: break;
    }
    if (then) {  // a gate carries and takes nothing: the data moves by messages
      carries = false;
      take_first = take_end = 0;
    }
    staged = !then && path == board_path::staged;
    direct = !then && board_moves_direct(kind, carried(static_cast<std::size_t>(n)), path);
    areas.clear();
    if (direct) keep_first_block();
    // A bcast takes at most the root's slot, a reduce's non-root and a generalized reduce's
    // participant that receives nothing take none.
    eager = !then && !direct && !staged &&
            (kind == board_collective::bcast || (kind == board_collective::reduce && me != root) ||
             (kind == board_collective::reduce_generalized && take_end == 0));
    leaves_tail = reported = false;
    slot = -1;
    next = 0;
    unseen_rank = -1;
    acknowledged = moved = false;
  }

  // The kind the slot publishes (with direct_kind_bit where the data moves straight).
  std::uint32_t signature_kind() const {
    return static_cast<std::uint32_t>(kind) | (direct ? direct_kind_bit : 0) |
           (staged ? staged_kind_bit : 0);
  }

  // A fingerprint of a generalized reduce's participant count and receiver set (never 0).
  static std::uint64_t shape_of(int participants, const std::vector<int>& receivers) {
    std::uint64_t h = 0xCBF29CE484222325ull ^ static_cast<std::uint64_t>(participants);
    for (int w : receivers) h = (h ^ static_cast<std::uint64_t>(w)) * 0x100000001B3ull;
    return h ? h : 1;
  }
};

// Adds one to rank r's doorbell and wakes it (seq_cst: pairs with its park's re-check).
void ring(rank_context& ctx, const node_board& b, int r) {
  b.doorbell(r).fetch_add(1, std::memory_order_seq_cst);
  ctx.tp().wake(r);
}

// True if this rank's slot `at` may hold a new collective: its last one's readers all
// acknowledged it and this rank finished reading it.
bool keyed_slot_free(const node_board& b, const group_board_watch& g, int me_w, std::size_t at) {
  const group_slot& s = b.keyed(me_w, at);
  return !(g.own_busy >> at & 1) && (s.key.load(std::memory_order_relaxed) == 0 ||
                                     s.acks.load(std::memory_order_seq_cst) >= s.readers);
}

// Takes a free slot of this rank and publishes e in it; false if all are still being read
// (then the reader that frees one rings this rank).
bool publish(rank_context& ctx, const node_board& b, group_exec& e) {
  const int me_w = ctx.rank();
  const std::size_t k = node_board::group_slots;
  const auto n = static_cast<std::uint32_t>(e.members->world_ranks.size());
  group_board_watch& g = coll_state(ctx).group_board;
  const auto first_free = [&] {  // preferably slot seq mod K; k if none
    std::size_t i = 0;
    while (i < k && !keyed_slot_free(b, g, me_w, (e.seq + i) % k)) ++i;
    return i;
  };
  std::size_t i = first_free();
  if (i == k && !g.asked_ring) {
    // seq_cst, then look again: a reader's acknowledgment (seq_cst) either is seen here or
    // sees the request and rings.
    for (std::size_t at = 0; at < k; ++at)
      b.keyed(me_w, at).owner_waits.store(1, std::memory_order_seq_cst);
    g.asked_ring = true;
    i = first_free();
  }
  if (i == k) return false;
  if (g.asked_ring) {
    for (std::size_t at = 0; at < k; ++at)
      b.keyed(me_w, at).owner_waits.store(0, std::memory_order_relaxed);
    g.asked_ring = false;
  }
  const std::size_t at = (e.seq + i) % k;
  group_slot& s = b.keyed(me_w, at);
  // Every reader of the slot's last use is done with it, and searchers for other keys read
  // no more than the key: the header may be rewritten in place, the key published last.
  s.group = e.group;
  s.seq = e.seq;
  s.kind = e.signature_kind();
  s.root = e.root;
  // A direct one's owner gives the last acknowledgment itself, once the others gave theirs;
  // otherwise the owner does not acknowledge its own slot (own_busy keeps it taken).
  s.readers = e.direct ? n + 1 : n - 1;
  if (!e.direct) g.own_busy |= 1u << at;
  s.bytes = e.bytes;
  s.shape = e.shape;
  s.algorithm = e.algorithm;
  s.acks.store(0, std::memory_order_relaxed);
  if (e.staged) {  // its staging area's counters start again (read after the key)
    node_staging::reset(coll_state(ctx).staging_view()->group_area(me_w, at));
  } else if (e.direct) {
    publish_buffers(node_board::payload(s), e);
  } else if (e.carries && e.bytes) {
    copy_bytes(node_board::payload(s), e.in, e.carried(n));
  }
  // Release stores (the owner alone writes its count): the rings' seq_cst additions below
  // order them before any peer's park re-check, and a peer that reads the count or the key
  // reads the header after them. Fenced here too, the publication would wait for its lines'
  // transfers twice more before the first ring.
  s.key.store(e.key, std::memory_order_release);
  std::atomic<std::uint64_t>& published = b.publications(me_w);
  published.store(published.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  e.slot = static_cast<int>(at);
  for (int w : e.members->world_ranks)
    if (w != me_w) ring(ctx, b, w);
  return true;
}

// Which of world rank w's keyed slots holds e's collective, or -1 while w has not published it.
int find_index(const node_board& b, int w, const group_exec& e) {
  const std::size_t k = node_board::group_slots;
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t at = (e.seq + i) % k;
    group_slot& s = b.keyed(w, at);
    if (s.key.load(std::memory_order_acquire) == e.key && s.group == e.group && s.seq == e.seq)
      return static_cast<int>(at);
  }
  return -1;
}

// World rank w's slot holding e's collective, or null while w has not published it.
group_slot* find(const node_board& b, int w, const group_exec& e) {
  const int at = find_index(b, w, e);
  return at < 0 ? nullptr : &b.keyed(w, static_cast<std::size_t>(at));
}

// find() for a slot this rank waits for: while w has published nothing since the last look
// in vain, one load instead of a look at each of its keyed slots.
group_slot* await_slot(const node_board& b, int w, group_exec& e) {
  const std::uint64_t c = b.publications(w).load(std::memory_order_acquire);
  if (w == e.unseen_rank && c == e.unseen_publications) return nullptr;
  group_slot* s = find(b, w, e);
  if (!s) {
    e.unseen_rank = w;
    e.unseen_publications = c;
  } else {
    e.unseen_rank = -1;  // so that unseen_rank names the member a failed step waits for
  }
  return s;
}

// Checks the signature in group rank q's slot s against this rank's call.
void check(group_exec& e, int q, const group_slot& s) {
  if (!e.error.empty()) return;
  const int w = e.members->world_ranks[static_cast<std::size_t>(q)];
  const std::size_t n = e.members->world_ranks.size();
  if (s.kind != e.signature_kind() || s.bytes != e.bytes || s.root != e.root ||
      s.algorithm != e.algorithm)
    e.error = board_disagreement(w, {s.kind, s.bytes, s.root, s.algorithm},
                                 {e.signature_kind(), e.bytes, e.root, e.algorithm}, e.seq, n);
  else if (s.shape != e.shape)
    e.error = "ranks disagree on the call: rank " + std::to_string(w) +
              " passed other participants or receivers to the generalized reduce than this rank "
              "(shared-memory collective #" +
              std::to_string(e.seq) + " on a group of " + std::to_string(n) + " ranks)";
}

// Moves a direct collective's share between the members' buffers (signatures all checked and
// equal).
void move(rank_context& ctx, const node_board& b, group_exec& e) {
  const std::size_t n = e.members->world_ranks.size();
  auto& bufs = coll_state(ctx).member_buffers;
  bufs.resize(n);
  for (std::size_t q = 0; q < n; ++q)
    bufs[q] = published_buffers(node_board::payload(*find(b, e.members->world_ranks[q], e)));
  e.error = move_direct(ctx, e, e.members->world_ranks, e.me, bufs);
  e.moved = true;
}

// Moves a staged collective's chunks through the members' staging areas (signatures all
// checked and equal) as far as they go; true once this rank's part is done.
bool move_staged(rank_context& ctx, const node_board& b, group_exec& e) {
  const std::vector<int>& world = e.members->world_ranks;
  if (e.areas.empty()) {
    const node_staging& st = *coll_state(ctx).staging_view();
    for (int w : world)
      e.areas.push_back(st.group_area(w, static_cast<std::size_t>(find_index(b, w, e))));
    e.chunks =
        begin_staged(ctx, e, 0, static_cast<int>(world.size()), node_staging::group_ring_bytes);
  }
  board_wait wait;  // unused: a group collective's members watch their doorbells
  return advance_staged(ctx, {e.areas, world, &b}, e.me, e, e.chunks, wait);
}

// Takes group rank q's operand from its slot s (signatures all checked and equal).
void take(group_exec& e, int q, group_slot& s) {
  if (e.direct || e.staged || !e.bytes || q < e.take_first || q >= e.take_end) return;
  const std::byte* operand = node_board::payload(s);
  if (e.kind == board_collective::allgather) {  // block q at its place
    copy_bytes(e.out + static_cast<std::size_t>(q) * e.bytes, operand, e.bytes);
    return;
  }
  if (e.kind == board_collective::reduce_scatter_block)  // this rank's block of input q
    operand += static_cast<std::size_t>(e.me) * e.bytes;
  if (e.kind == board_collective::bcast || q == e.take_first)
    copy_bytes(e.out, operand, e.bytes);
  else
    e.op.combine(e.op.op.get(), operand, e.out, e.bytes / e.op.elem,
                 false);  // out = out op operand
}

// Moves e on as far as it goes; true when this rank is done with it. Every slot is found and
// its signature checked before any output is written: a disagreement writes nothing.
bool step(rank_context& ctx, const node_board& b, group_exec& e) {
  if (e.slot < 0 && !publish(ctx, b, e)) return false;
  if (e.eager) {  // its part: at most the root's slot, which must agree
    if (e.take_end > e.take_first) {
      const int q = e.take_first;
      group_slot* s = await_slot(b, e.members->world_ranks[static_cast<std::size_t>(q)], e);
      if (!s) return false;
      check(e, q, *s);
      if (e.error.empty()) take(e, q, *s);
      e.take_first = e.take_end = 0;
    }
    e.eager = false;
    e.leaves_tail = true;
    return true;
  }
  const int n = static_cast<int>(e.members->world_ranks.size());
  for (; e.next < n; ++e.next) {
    const group_slot* s =
        await_slot(b, e.members->world_ranks[static_cast<std::size_t>(e.next)], e);
    if (!s) return false;
    check(e, e.next, *s);
  }
  if (!e.acknowledged) {
    if (e.staged && e.error.empty() && e.bytes && !move_staged(ctx, b, e)) return false;
    if (e.direct && e.error.empty()) move(ctx, b, e);
    for (int q = 0; q < n; ++q) {
      const int w = e.members->world_ranks[static_cast<std::size_t>(q)];
      group_slot& s = *find(b, w, e);  // still there: not acknowledged yet
      if (e.error.empty()) take(e, q, s);
      if (w == ctx.rank() && !e.direct) continue;  // its own: own_busy, cleared below
      // The last reader frees the slot or, for a direct one, lets its owner free it (the owner
      // may rewrite the header at once: read before acknowledging). It rings the owner of a
      // direct one, which waits for that, and an owner waiting for a free slot.
      const bool direct_slot = !s.algorithm && (s.kind & direct_kind_bit);
      const std::uint32_t last = s.readers - (direct_slot ? 1 : 0);
      if (s.acks.fetch_add(1, std::memory_order_seq_cst) + 1 == last && w != ctx.rank() &&
          (direct_slot || s.owner_waits.load(std::memory_order_seq_cst) != 0))
        ring(ctx, b, w);
    }
    if (!e.direct) coll_state(ctx).group_board.own_busy &= ~(1u << e.slot);
    e.acknowledged = true;
    ctx.note_progress();
  }
  if (e.direct) {  // free this rank's slot once nobody uses its buffers any more
    group_slot& mine = b.keyed(ctx.rank(), static_cast<std::size_t>(e.slot));
    if (e.moved && mine.acks.load(std::memory_order_acquire) < mine.readers - 1) return false;
    mine.acks.fetch_add(1, std::memory_order_acq_rel);
    ctx.note_progress();
  }
  return true;
}

// Counts a group collective unfinished on this rank (its doorbell is then watched).
void begin(rank_context& ctx, const node_board& b) {
  auto& g = coll_state(ctx).group_board;
  g.bell = &b.doorbell(ctx.rank());
  ++g.pending;
}

group_exec* exec_of(const request_state* s) { return static_cast<group_exec*>(s->engine_ptr); }

// A rank's group tails: at most one per keyed slot, as each holds its own slot until it
// acknowledged it.
struct group_tails {
  group_exec items[node_board::group_slots];
  bool used[node_board::group_slots] = {};
};

// Continues e's collective as a tail, moved out of e (which keeps only its error, for its
// caller).
void hand_to_tail(rank_context& ctx, group_exec& e) {
  coll_rank& cs = coll_state(ctx);
  auto& g = cs.group_board;
  if (!g.tail_store) g.tail_store = std::make_shared<group_tails>();
  auto& store = *static_cast<group_tails*>(g.tail_store.get());
  for (std::size_t i = 0; i < node_board::group_slots; ++i) {
    if (store.used[i]) continue;
    group_exec& t = store.items[i];
    t = std::move(e);
    t.reported = !t.error.empty();
    e.error = std::move(t.error);
    t.error.clear();
    t.leaves_tail = false;
    store.used[i] = true;
    ++g.tails;
    ++g.pending;  // its doorbell stays watched
    cs.tail_added();
    return;
  }
  throw error("cairn: internal error: more group tails than keyed slots");
}

void recycle(group_exec* e) {
  e->number.release();  // a gate that failed: its schedule never ran
  e->op.op.reset();
  e->members.reset();
  e->error.clear();
  e->then.reset();
  e->receivers.reset();
  e->areas.clear();
  e->home->give(e);
}

}  // namespace

void run_on_group_board(const prepared& p) {
  rank_context& ctx = *p.target.ctx;
  rank_entry guard(ctx);
  const node_board& b = board_of(ctx);
  group_exec e;
  e.bind(p, ctx);
  begin(ctx, b);
  struct end_watch {  // however the wait ends (abort, watchdog)
    rank_context& ctx;
    ~end_watch() {
      --coll_state(ctx).group_board.pending;
      coll_state(ctx).group_board.awaited = -1;
    }
  } end{ctx};
  auto& watch = coll_state(ctx).group_board;
  std::uint64_t spins = 0;
  for (unsigned polls = 0;; ++polls) {
    // The rest of the rank moves meanwhile (its other collectives may be what this waits for):
    // whenever the doorbell rang since the last check, and every so often.
    if (polls && (watch.bell->load(std::memory_order_seq_cst) != watch.seen || (polls & 63) == 0))
      ctx.progress();
    watch.seen = watch.bell->load(std::memory_order_seq_cst);  // before the checks
    if (step(ctx, b, e)) break;
    // A member whose slot is missing (if that is what the step waits for): a wait on it fails
    // once its function has returned.
    watch.awaited = e.slot >= 0 && !e.acknowledged ? e.unseen_rank : -1;
    watch.awaited_call = p.call;
    ctx.idle(nullptr, spins);
  }
  if (e.leaves_tail) hand_to_tail(ctx, e);
  board_take_deferred(ctx, e.error);  // tails done at once if every member's call is visible
  if (!e.error.empty()) fail(p.call, ctx.rank(), e.error);
}

request start_on_group_board(const prepared& p) {
  rank_context& ctx = *p.target.ctx;
  rank_entry guard(ctx);
  group_exec* e = ctx.layer<exec_pool<group_exec>>().take();
  e->bind(p, ctx);
  begin(ctx, board_of(ctx));
  return board_request(ctx, p.call, group_board_phase, e);
}

bool group_board_advance(rank_context& ctx, request_state* s) {
  group_exec& e = *exec_of(s);
  if (!step(ctx, board_of(ctx), e)) return false;
  if (e.leaves_tail) hand_to_tail(ctx, e);
  --coll_state(ctx).group_board.pending;
  if (e.then && e.error.empty()) {  // a gate passed: its schedule takes over the request
    // (numbered as the gate on the group)
    const bool done =
        continue_as_schedule(ctx, s, e, std::move(e.members), std::exchange(e.number, {}));
    recycle(&e);
    return done;
  }
  return complete_board_request(ctx, s, e.error);
}

void group_board_advance_tails(rank_context& ctx) {
  auto& g = coll_state(ctx).group_board;
  if (!g.tails) return;
  const node_board& b = board_of(ctx);
  auto& store = *static_cast<group_tails*>(g.tail_store.get());
  auto& deferred = coll_state(ctx).board.deferred_error;
  for (std::size_t i = 0; i < node_board::group_slots; ++i) {
    if (!store.used[i] || !step(ctx, b, store.items[i])) continue;
    group_exec& t = store.items[i];
    if (!t.reported && !t.error.empty() && deferred.empty())
      deferred = board_late(std::move(t.error), t.kind, t.seq);
    t.error.clear();
    t.op.op.reset();
    t.members.reset();
    store.used[i] = false;
    --g.tails;
    --g.pending;
  }
}

bool group_board_finish(request_state* s, std::string& error) {
  return finish_pooled<group_exec>(s, error, recycle);
}

void group_board_cancel(rank_context& ctx, request_state* s) {
  // A published slot cannot be taken back: unwinding ends the run, which is what peers see.
  if (!s->done.load(std::memory_order_relaxed)) --coll_state(ctx).group_board.pending;
  recycle(exec_of(s));
  s->engine_ptr = nullptr;
}

std::string group_board_describe(const request_state* s) {
  const group_exec& e = *exec_of(s);
  std::ostringstream os;
  os << "shared-memory " << board_name(e.kind) << " #" << e.seq << " on a group of "
     << e.members->world_ranks.size() << " ranks (this rank is " << e.me << "), ";
  if (e.then) os << "checking the signatures before " << e.then->name << ", ";
  if (e.slot < 0)
    os << "waiting for a free slot";
  else if (e.next < static_cast<int>(e.members->world_ranks.size()))
    os << "waiting for rank " << e.members->world_ranks[static_cast<std::size_t>(e.next)]
       << " to publish";
  else if (e.acknowledged && e.moved)
    os << "moved its share, waiting for the others to move theirs";
  else if (e.staged && !e.areas.empty() && !e.acknowledged)
    os << "staged: " << e.chunks.staged << " chunk(s) staged, " << e.chunks.reduced << " reduced, "
       << e.chunks.copied << " copied of " << e.chunks.chunks;
  else
    os << "done";
  return os.str();
}

}  // namespace cairn::detail
