// The flat shared-memory collectives: short barrier, bcast, reduce and allreduce on the
// world, when all ranks share a node (rank_context::node_memory()), blocking, non-blocking and
// persistent.
//
// Board collective number s (counted alike on every rank: collectives on the world match in
// issue order) uses slot s mod K of every rank. Each rank writes its signature and payload
// (its input; for bcast only the root's) into its own slot, publishes s (release), wakes ranks
// that parked, and waits until every rank published s. Then every slot holds its rank's data:
// allreduce and reduce combine the payloads in rank order (so non-commutative operations are
// right, and every rank gets the same bits), bcast copies the root's. A rank completes its
// board collectives in order and publishes the last one in its `done` word.
//
// Eager ranks: a rank whose part needs no other slot (a bcast's root, a reduce's non-roots) or
// only the root's (a bcast's others) finishes once that part is done, without waiting for the
// other ranks; its tail (board_progress) then checks every signature and
// publishes `done`, in order, whenever the rank is in cairn. So the root of a stream of short
// bcasts runs up to K collectives ahead, as with MPI's eager messages, instead of meeting
// every rank each time. A disagreement a tail finds is raised by the rank's next board
// collective, or at the end of its function (board_finish_tails).
//
// Reuse: a rank writes slot s mod K again at s + K only once every rank's `done` reached s, so
// no rank overwrites a slot anyone still reads. The `done` words are read only when the floor
// seen last is too low: about once per K - 1 collectives when the ranks keep in step.
//
// One cache line per rank carries up to 32 payload bytes with its header: an 8-byte allreduce
// on 2 ranks costs one line transfer each way, where messages cost a matching and a copy on
// each side.
//
// Longer bcasts, reduces and allreduces publish their buffers' addresses instead of data and
// move it straight between the buffers (shared_memory_direct.cpp); such a collective finishes
// once every rank's `done` word reached it, since peers use its buffers until then.
// Collectives finish in order, so a park watches the earliest unfinished one's word.
//
// A gate (prepared::gate: a collective that runs by messages where another count would have
// run here) publishes only its signature, marked with its algorithm's fingerprint, and moves
// no data; once every signature agrees its request becomes the schedule (continue_as_schedule),
// numbered by the group's message counter, which every board collective advances too.
#include "coll/board/shared_memory_flat.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cairn/coll/schedule.hpp"
#include "cairn/runtime/error.hpp"
#include "coll/board/board_layout.hpp"
#include "coll/board/shared_memory_direct.hpp"
#include "coll/board/shared_memory_group.hpp"
#include "coll/board/shared_memory_staged.hpp"
#include "coll/engine/coll_rank.hpp"
#include "coll/engine/exec_pool.hpp"
#include "coll/engine/plan_cache.hpp"
#include "node/copy_bytes.hpp"
#include "node/cpu_relax.hpp"
#include "node/prefetch.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {

static_assert(node_board::payload_max == 16384, "board_refusal names the limit");
static_assert(short_allreduce_max == node_board::payload_max,
              "run_short_on_board carries its input in the slot");

// One board collective in flight.
struct board_exec : board_call {
  exec_pool<board_exec>* home = nullptr;  // the pool of its rank
  std::uint64_t seq = 0;
  bool direct = false;   // moves data between the buffers (shared_memory_direct.cpp)
  bool staged = false;   // moves through the staging rings (shared_memory_staged.cpp)
  bool staging = false;  // a staged one whose chunks are moving
  staged_progress chunks;
  bool published = false;
  bool completed =
      false;           // this rank's part is done (for a direct one: if `moved`, peers' may not be)
  bool moved = false;  // a direct one passed the signature check and moved its share
  // Its part needs no other rank's slot, or only the root's (a bcast's): it finishes at once
  // and leaves a tail (board_progress::tail).
  bool eager = false;
  int arrived = 1;  // peers seen, counted from this rank on (this rank itself is 0)
  std::shared_ptr<const group_members> members;  // a gate's group (its schedule runs there)
  numbered msg_number;                           // and the schedule's number on it

  void bind(const prepared& p, rank_context& ctx) {
    bind_call(p);
    coll_rank& cs = coll_state(ctx);
    seq = ++cs.board.started;
    // Every board collective takes the group's message number too, so that a gate's schedule
    // (which needs one) and the board collectives of ranks that disagree with it leave every
    // rank's numbering alike.
    if (then) [[unlikely]] {
      msg_number = cs.next_seq(p.target.members->id);
      members = p.target.members;
    } else {
      cs.skip_seq(p.target.members->id);
    }
    staged = !then && path == board_path::staged;
    direct =
        !then && board_moves_direct(kind, carried(ctx.world_group()->world_ranks.size()), path);
    if (direct) keep_first_block();
    eager = !then && !direct && !staged &&
            (kind == board_collective::bcast ||
             (kind == board_collective::reduce && ctx.rank() != root));
    published = completed = moved = staging = false;
    arrived = 1;
  }
  board_signature signature() const {
    return {static_cast<std::uint32_t>(kind) | (staged ? staged_kind_bit : 0) |
                (direct ? direct_kind_bit : 0),
            bytes, root, algorithm};
  }
};

static_assert(std::size(board_progress{}.tails) == node_board::slots,
              "a rank has at most one tail per slot");

constexpr std::size_t prefetched_payload_max = 128;  // publish(): the next slot's lines
// Polls of a peer's slot before run_short_on_board hands its wait to the general loop.
constexpr unsigned short_spin_polls = 64;

// True if every rank completed collective `upto`; else the first rank that did not, in
// `laggard`.
bool all_completed(rank_context& ctx, const node_board& b, std::uint64_t upto, int& laggard) {
  auto& st = coll_state(ctx).board;
  if (st.all_completed >= upto) return true;
  std::uint64_t floor = std::numeric_limits<std::uint64_t>::max();
  for (int r = 0; r < b.ranks(); ++r) {
    const std::uint64_t d = b.done(r).load(std::memory_order_acquire);
    if (d < upto) {
      laggard = r;
      return false;
    }
    floor = std::min(floor, d);
  }
  st.all_completed = floor;
  return true;
}

// True if every rank completed collective seq - K (the slot's previous user).
bool slot_free(rank_context& ctx, const node_board& b, std::uint64_t seq, int& laggard) {
  return seq <= node_board::slots || all_completed(ctx, b, seq - node_board::slots, laggard);
}

// Publishes this rank's slot `mine` of collective `seq`, whose header and payload (`bytes` of
// input, or the buffers) are written: peers may read it from now on.
void announce(rank_context& ctx, const node_board& b, board_slot& mine, std::uint64_t seq,
              std::size_t bytes) {
  const int me = ctx.rank();
  // seq_cst: a parked rank announced that it sleeps, then re-checks the word it waits for
  // (rank_context::board_ready); wake() reads the announcement after this store.
  mine.seq.store(seq, std::memory_order_seq_cst);
  // The next slot was last read by the peers, whose cores hold its lines: asked for now, while
  // the peers read this one, rather than by the next publication's stores, which would each
  // wait for the peers' copies to be invalidated. Measured on 2 ranks: 10-17 % off allreduces
  // of 8-128 bytes on threads, up to 5 % on MPI; asking for the lines of 256 bytes to 1 KiB
  // added 3-15 %, so only short ones ask (for the lines this collective's size took).
  if (bytes <= prefetched_payload_max) {
    const auto* next = reinterpret_cast<const char*>(&b.slot(me, seq + 1));
    for (std::size_t at = 0; at < sizeof(board_slot) + bytes; at += 64)
      prefetch_for_write(next + at);
  }
  for (int r = 0; r < b.ranks(); ++r)
    if (r != me) ctx.tp().wake(r);
}

void publish(rank_context& ctx, const node_board& b, const board_exec& e) {
  const int me = ctx.rank();
  board_slot& mine = b.slot(me, e.seq);
  mine.kind = e.signature().kind;
  mine.root = e.root;
  mine.bytes = e.bytes;
  mine.algorithm = e.algorithm;
  const bool carries =  // a staged one's data moves through the staging rings
      !e.then && !e.staged &&
      (e.kind == board_collective::allreduce || e.kind == board_collective::reduce ||
       e.kind == board_collective::allgather || e.kind == board_collective::reduce_scatter_block ||
       (e.kind == board_collective::bcast && me == e.root));
  if (e.direct) {
    publish_buffers(node_board::payload(mine), e);
  } else if (carries && e.bytes) {
    copy_bytes(node_board::payload(mine), e.in, e.carried(static_cast<std::size_t>(b.ranks())));
  }
  announce(ctx, b, mine, e.seq, e.bytes);
}

// True once every rank published e.seq; starts after this rank so that ranks poll different
// lines.
bool all_arrived(const node_board& b, board_exec& e, int me) {
  const int n = b.ranks();
  for (; e.arrived < n; ++e.arrived)
    if (b.slot((me + e.arrived) % n, e.seq).seq.load(std::memory_order_acquire) != e.seq)
      return false;
  return true;
}

bool same_signature(const board_slot& theirs, const board_signature& mine) noexcept {
  return theirs.kind == mine.kind && theirs.bytes == mine.bytes && theirs.root == mine.root &&
         theirs.algorithm == mine.algorithm;
}

// Empty if rank q's slot of collective `seq` holds the signature `mine`; else the error.
std::string disagreement_with(const node_board& b, int q, std::uint64_t seq,
                              const board_signature& mine) {
  const board_slot& theirs = b.slot(q, seq);
  if (same_signature(theirs, mine)) [[likely]]
    return {};
  return board_disagreement(q, {theirs.kind, theirs.bytes, theirs.root, theirs.algorithm}, mine,
                            seq, 0);
}

// The first slot of collective `seq` whose signature differs from `mine`, as an error; empty
// if all agree (every slot holds `seq`).
std::string first_disagreement(const node_board& b, std::uint64_t seq,
                               const board_signature& mine) {
  for (int q = 0; q < b.ranks(); ++q)
    if (std::string why = disagreement_with(b, q, seq, mine); !why.empty()) return why;
  return {};
}

// out = in_0 op in_1 op ... op in_(n-1), in rank order (non-commutative operations are right,
// and every rank gets the same bits), from every rank's slot of collective `seq`.
void reduce_slots(const node_board& b, std::uint64_t seq, std::byte* out, const op_binding& op,
                  std::size_t bytes) {
  copy_bytes(out, node_board::payload(b.slot(0, seq)), bytes);
  for (int q = 1; q < b.ranks(); ++q)
    op.combine(op.op.get(), node_board::payload(b.slot(q, seq)), out, bytes / op.elem, false);
}

// Publishes that this rank completed collective `seq` (and all before it).
void publish_done(rank_context& ctx, const node_board& b, std::uint64_t seq) {
  coll_state(ctx).board.completed = seq;
  // seq_cst, then wake: a rank may park waiting for this word (slot_free).
  b.done(ctx.rank()).store(seq, std::memory_order_seq_cst);
  for (int r = 0; r < b.ranks(); ++r)
    if (r != ctx.rank()) ctx.tp().wake(r);
  ctx.note_progress();
}

// Completes the rank's tails in order as far as the other ranks' slots allow: each once every
// rank published its collective, checking every signature. True when none is left; else
// `wait` receives the slot awaited.
bool drain_tails(rank_context& ctx, const node_board& b, board_wait& wait) {
  auto& st = coll_state(ctx).board;
  const int n = b.ranks(), me = ctx.rank();
  while (st.has_tails()) {
    auto& t = st.tails[st.tails_first % node_board::slots];
    for (; t.arrived < n; ++t.arrived) {
      const int q = (me + t.arrived) % n;
      const board_slot& s = b.slot(q, t.seq);
      if (s.seq.load(std::memory_order_acquire) != t.seq) {
        wait = {&s.seq, t.seq, q, board_name(static_cast<board_collective>(t.kind))};
        return false;
      }
    }
    if (!t.reported && st.deferred_error.empty()) {
      std::string why = first_disagreement(b, t.seq, {t.kind, t.bytes, t.root, t.algorithm});
      if (!why.empty())
        st.deferred_error =
            board_late(std::move(why), static_cast<board_collective>(t.kind), t.seq);
    }
    ++st.tails_first;
    publish_done(ctx, b, t.seq);
  }
  return true;
}

// Moves this rank's share of direct collective e once every slot holds e.seq and agrees; its
// peers use this rank's buffers until every `done` reached e.seq.
void move_share(rank_context& ctx, const node_board& b, board_exec& e) {
  auto& bufs = coll_state(ctx).member_buffers;
  bufs.resize(static_cast<std::size_t>(b.ranks()));
  for (int q = 0; q < b.ranks(); ++q)
    bufs[static_cast<std::size_t>(q)] = published_buffers(node_board::payload(b.slot(q, e.seq)));
  e.error = move_direct(ctx, e, ctx.world_group()->world_ranks, ctx.rank(), bufs);
  e.moved = true;
}

// Every slot holds e.seq: checks the signatures (every rank reads all of them, so a mismatch
// is reported on every rank, and nobody waits), writes the output, completes. A staged one
// only starts moving its chunks (e.staging; move_staged completes it).
void complete(rank_context& ctx, const node_board& b, board_exec& e) {
  const int n = b.ranks(), me = ctx.rank();
  if (e.error.empty()) e.error = first_disagreement(b, e.seq, e.signature());
  const bool moves_here = e.error.empty() && !e.then;  // a gate's data moves by messages
  if (moves_here && e.staged && e.bytes) {
    e.chunks =
        begin_staged(ctx, e, coll_state(ctx).board.staged_chunks, n, node_staging::ring_bytes);
    e.staging = true;
    return;
  }
  if (moves_here && e.direct) {
    move_share(ctx, b, e);
  } else if (moves_here && e.bytes) {
    if (e.kind == board_collective::bcast) {
      if (me != e.root) copy_bytes(e.out, node_board::payload(b.slot(e.root, e.seq)), e.bytes);
    } else if (e.kind == board_collective::allgather) {
      // Block q at its place; this rank's too (in place: the same bytes).
      for (int q = 0; q < n; ++q)
        copy_bytes(e.out + static_cast<std::size_t>(q) * e.bytes,
                   node_board::payload(b.slot(q, e.seq)), e.bytes);
    } else if (e.kind == board_collective::reduce_scatter_block) {
      // This rank's block of every input, in rank order (each slot holds a whole input).
      const std::size_t at = static_cast<std::size_t>(me) * e.bytes;
      copy_bytes(e.out, node_board::payload(b.slot(0, e.seq)) + at, e.bytes);
      for (int q = 1; q < n; ++q)
        e.op.combine(e.op.op.get(), node_board::payload(b.slot(q, e.seq)) + at, e.out,
                     e.bytes / e.op.elem, false);
    } else if (e.kind == board_collective::allreduce ||
               (e.kind == board_collective::reduce && me == e.root)) {
      reduce_slots(b, e.seq, e.out, e.op, e.bytes);
    }
  }
  publish_done(ctx, b, e.seq);
}

// Moves a staged collective's chunks on; true once this rank's part is done (and completed).
bool move_staged(rank_context& ctx, const node_board& b, board_exec& e, board_wait& wait) {
  coll_rank& cs = coll_state(ctx);
  const staging_members world{cs.staging_view()->areas(), ctx.world_group()->world_ranks};
  if (!advance_staged(ctx, world, ctx.rank(), e, e.chunks, wait)) return false;
  cs.board.staged_chunks = e.chunks.base + e.chunks.chunks;
  e.staging = false;
  publish_done(ctx, b, e.seq);
  return true;
}

// An eager collective's part: a bcast's non-root takes the root's data once the root's slot
// holds it and agrees; then the collective finishes, leaving its tail. False while the root
// has not published.
bool finish_eager(rank_context& ctx, const node_board& b, board_exec& e, board_wait& wait) {
  coll_rank& cs = coll_state(ctx);
  auto& st = cs.board;
  if (e.kind == board_collective::bcast && ctx.rank() != e.root) {
    board_slot& r = b.slot(e.root, e.seq);
    if (r.seq.load(std::memory_order_acquire) != e.seq) {
      wait = {&r.seq, e.seq, e.root, e.call};
      return false;
    }
    e.error = disagreement_with(b, e.root, e.seq, e.signature());
    if (e.error.empty() && e.bytes) copy_bytes(e.out, node_board::payload(r), e.bytes);
  }
  auto& t = st.tails[st.tails_end++ % node_board::slots];
  t = {e.seq,  e.bytes, e.algorithm,     static_cast<std::uint32_t>(e.kind),
       e.root, 1,       !e.error.empty()};
  cs.tail_added();
  st.finished = e.seq;
  e.completed = true;
  return true;
}

// Moves e on as far as it goes; true when complete. `wait` receives what it waits for.
bool step(rank_context& ctx, const node_board& b, board_exec& e, board_wait& wait) {
  const int me = ctx.rank();
  auto& st = coll_state(ctx).board;
  board_wait tail_wait;
  const bool tails_done = !st.has_tails() || drain_tails(ctx, b, tail_wait);
  if (!e.published) {
    int laggard = 0;
    if (!slot_free(ctx, b, e.seq, laggard)) {
      wait = laggard == me
                 ? tail_wait
                 : board_wait{&b.done(laggard), e.seq - node_board::slots, laggard, e.call};
      return false;
    }
    publish(ctx, b, e);
    e.published = true;
  }
  if (e.eager) {
    if (st.finished + 1 != e.seq) {  // this rank's earlier ones first
      wait = {};
      return false;
    }
    return finish_eager(ctx, b, e, wait);
  }
  if (!e.completed) {
    if (!all_arrived(b, e, me)) {
      const int q = (me + e.arrived) % b.ranks();
      wait = {&b.slot(q, e.seq).seq, e.seq, q, e.call};
      return false;
    }
    if (st.completed + 1 != e.seq) {  // this rank's earlier ones first
      wait = tails_done ? board_wait{} : tail_wait;
      return false;
    }
    if (!e.staging) complete(ctx, b, e);
    if (e.staging && !move_staged(ctx, b, e, wait)) return false;
    e.completed = true;
  }
  if (st.finished + 1 != e.seq) {  // an earlier direct one waits for its peers
    wait = {};
    return false;
  }
  int laggard = 0;
  if (e.moved && !all_completed(ctx, b, e.seq, laggard)) {  // peers still use this rank's buffers
    wait = {&b.done(laggard), e.seq, laggard, e.call};
    return false;
  }
  st.finished = e.seq;
  return true;
}

board_exec* exec_of(const request_state* s) { return static_cast<board_exec*>(s->engine_ptr); }

void recycle(board_exec* e) {
  e->msg_number.release();  // a gate that failed: its schedule never ran
  e->op.op.reset();
  e->error.clear();
  e->then.reset();
  e->members.reset();
  e->home->give(e);
}

}  // namespace

void board_call::bind_gate(const prepared& p) {
  then = p.plan;
  algorithm = plan_fingerprint(then->name);
}

const char* board_name(board_collective k) {
  switch (k) {
    case board_collective::barrier: return "barrier";
    case board_collective::bcast: return "bcast";
    case board_collective::reduce: return "reduce";
    case board_collective::allreduce: return "allreduce";
    case board_collective::reduce_generalized: return "generalized reduce";
    case board_collective::allgather: return "allgather";
    case board_collective::reduce_scatter_block: return "reduce_scatter_block";
    case board_collective::none: break;
  }
  return "?";
}

std::string board_disagreement(int q, const board_signature& theirs, const board_signature& mine,
                               std::uint64_t seq, std::size_t group_size) {
  std::ostringstream os;
  auto say = [&](const board_signature& s, const board_signature& other) {
    os << board_name(static_cast<board_collective>(s.kind & 0xff)) << " with " << s.bytes
       << " bytes";
    if (s.root >= 0) os << " and root " << s.root;
    if (s.kind & staged_kind_bit) os << " staged through node memory";
    if (s.kind & direct_kind_bit) os << " straight between the buffers";
    if (s.algorithm)
      os << " by messages"
         << (other.algorithm && other.algorithm != s.algorithm ? " (another algorithm)" : "");
  };
  os << "ranks disagree on the call: rank " << q << " called ";
  say(theirs, mine);
  os << ", this rank ";
  say(mine, theirs);
  os << " (shared-memory collective #" << seq;
  if (group_size) os << " on a group of " << group_size << " ranks";
  os << "; do all ranks pass the same count and root?)";
  return os.str();
}

const char* board_algorithm_name(board_path path) {
  switch (path) {
    case board_path::automatic: break;
    case board_path::direct: return "shared_memory_direct";
    case board_path::staged: return "shared_memory_staged";
  }
  return "shared_memory";
}

const char* board_refusal(const coll_target& t, board_collective kind, std::size_t bytes,
                          board_path path) {
  if (path != board_path::automatic && !t.ctx->node_memory()) return "needs all ranks on one node";
  if (path == board_path::direct) {
    if (kind == board_collective::barrier) return "moves no data";
    if (!t.ctx->reaches_peer_memory())
      return "needs ranks that can copy from each other (threads; MPI with CAIRN_CMA)";
    return nullptr;
  }
  if (path == board_path::staged) {
    if (kind == board_collective::barrier) return "moves no data";
    return nullptr;
  }
  const std::size_t carried = board_carried(kind, bytes, t.members->world_ranks.size());
  if (carried > node_board::payload_max) {
    if (!board_moves_direct(kind, carried)) return "needs at most 16384 bytes per rank";
    if (t.ctx->node_memory() && !t.ctx->reaches_peer_memory())
      return "needs at most 16384 bytes per rank where processes cannot copy from each other "
             "(CAIRN_CMA)";
  }
  if (!t.ctx->node_memory()) return "needs all ranks on one node";
  return nullptr;
}

bool board_on_world(const coll_target& t) {
  const auto& world = t.ctx->world_group();
  return t.members == world || t.members->world_ranks == world->world_ranks;
}

namespace {
// Moves the rank's blocking board collective `e` (bound, entered) to its end, then raises its
// error or one a tail found.
void run_to_end(rank_context& ctx, coll_rank& cs, const node_board& b, board_exec& e) {
  {
    board_wait wait;
    std::uint64_t spins = 0;
    struct clear_watch {  // however the wait ends (abort, watchdog)
      coll_rank& cs;
      ~clear_watch() { cs.watch_board({}); }
    } clear{cs};
    for (unsigned polls = 1; !step(ctx, b, e, wait); ++polls) {
      // The rest of the rank moves meanwhile (its earlier collectives may be what this waits for).
      if (!wait.word || (polls & 63) == 0) ctx.progress();
      if (wait.word) cs.watch_board(wait);  // else the earlier collective's own (board_advance)
      ctx.idle(nullptr, spins);
    }
  }
  board_take_deferred(ctx, e.error);  // advances the tails (e's own, earlier ones) and watches them
  if (!e.error.empty()) fail(e.call, ctx.rank(), e.error);
}
}  // namespace

void run_on_board(const prepared& p) {
  rank_context& ctx = *p.target.ctx;
  rank_entry guard(ctx);
  coll_rank& cs = coll_state(ctx);
  board_exec e;
  e.bind(p, ctx);
  run_to_end(ctx, cs, *cs.board_view(), e);
}

bool run_short_on_board(const coll_target& t, const char* call, board_collective kind,
                        board_path path, const void* in, void* out, std::size_t bytes,
                        const op_binding& op) {
  rank_context& ctx = *t.ctx;
  rank_entry guard(ctx);
  coll_rank& cs = coll_state(ctx);
  board_progress& st = cs.board;
  // Nothing before it on the board: no earlier collective to finish first, no tail to
  // complete, no disagreement to raise.
  if (st.started != st.finished || st.has_tails() || !st.deferred_error.empty() ||
      cs.group_board.tails) [[unlikely]]
    return false;
  const node_board& b = *cs.board_view();
  const std::uint64_t seq = st.finished + 1;
  int laggard = 0;
  if (!slot_free(ctx, b, seq, laggard)) [[unlikely]]
    return false;
  // From here on it is board collective `seq`, as bind() numbers it.
  st.started = seq;
  cs.skip_seq(t.members->id);
  const int me = ctx.rank(), n = b.ranks();
  const bool direct = board_moves_direct(kind, bytes, path);
  // The state bind() would have given it, for the general loop and move_direct.
  auto bind = [&](board_exec& e) {
    e.in = static_cast<const std::byte*>(in);
    e.out = static_cast<std::byte*>(out);
    e.op = op;
    e.kind = kind;
    e.bytes = bytes;
    e.call = call;
    e.path = path;
    e.seq = seq;
    e.direct = direct;
    e.published = true;
  };
  const board_signature sig{static_cast<std::uint32_t>(kind) | (direct ? direct_kind_bit : 0),
                            bytes, -1, 0};
  board_slot& mine = b.slot(me, seq);
  mine.kind = sig.kind;
  mine.root = sig.root;
  mine.bytes = sig.bytes;
  mine.algorithm = sig.algorithm;
  if (direct) {
    publish_buffers(node_board::payload(mine), in, out);
  } else if (bytes) {
    copy_bytes(node_board::payload(mine), in, bytes);
  }
  announce(ctx, b, mine, seq, bytes);
  // The peers' slots, read as all_arrived reads them. A peer not there within a few polls
  // leaves the wait to run_to_end, which keeps the rank progressing, parks and watches.
  int arrived = 1;
  for (unsigned polls = 0; arrived < n;) {
    if (b.slot((me + arrived) % n, seq).seq.load(std::memory_order_acquire) == seq) {
      ++arrived;
    } else if (++polls == short_spin_polls) [[unlikely]] {
      board_exec e;
      bind(e);
      e.arrived = arrived;
      run_to_end(ctx, cs, b, e);
      return true;
    } else {
      cpu_relax();
    }
  }
  bool agree = true;
  for (int q = 0; q < n; ++q) agree = agree && same_signature(b.slot(q, seq), sig);
  if (direct && agree) {
    board_exec e;
    bind(e);
    move_share(ctx, b, e);
    e.completed = true;
    publish_done(ctx, b, seq);
    for (unsigned polls = 0; !all_completed(ctx, b, seq, laggard); cpu_relax())
      if (++polls == short_spin_polls) [[unlikely]] {
        run_to_end(ctx, cs, b, e);
        return true;
      }
    st.finished = seq;
    if (!e.error.empty()) [[unlikely]]
      fail(call, ctx.rank(), e.error);
    return true;
  }
  if (agree && bytes) [[likely]]
    reduce_slots(b, seq, static_cast<std::byte*>(out), op, bytes);
  publish_done(ctx, b, seq);
  st.finished = seq;
  if (!agree) [[unlikely]]
    fail(call, ctx.rank(), first_disagreement(b, seq, sig));
  return true;
}

void describe_board_plan(prepared& p) {
  // Cached per rank as the schedules are: a plan is a function of (collective, size, rank).
  struct key {
    board_collective kind;
    board_path path;
    int size, rank;
    bool operator==(const key&) const = default;
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept {
      return ((static_cast<std::size_t>(k.kind) * 4 + static_cast<std::size_t>(k.path)) *
              0x9E3779B97F4A7C15ull) ^
             (static_cast<std::size_t>(k.size) << 20) ^ static_cast<std::size_t>(k.rank);
    }
  };
  struct plans {  // per rank (rank_context::layer)
    explicit plans(rank_context&) {}
    bounded_cache<key, std::shared_ptr<const coll::schedule>, key_hash, 1024> cache;
  };
  auto& cache = p.target.ctx->layer<plans>().cache;
  const key k{p.board, p.path, static_cast<int>(p.target.members->world_ranks.size()),
              p.target.group_rank};
  p.plan = cache.get(k, [&] {
    const bool generalized = k.kind == board_collective::reduce_generalized;
    return std::make_shared<const coll::schedule>(
        std::string(generalized ? "reduce_generalized" : board_name(k.kind)) + "/" +
            board_algorithm_name(k.path),
        k.size, k.rank);
  });
}

request start_on_board(const prepared& p) {
  rank_context& ctx = *p.target.ctx;
  rank_entry guard(ctx);
  board_exec* e = ctx.layer<exec_pool<board_exec>>().take();
  e->bind(p, ctx);
  return board_request(ctx, p.call, board_phase, e);
}

request board_request(rank_context& ctx, const char* call, std::uint8_t phase, void* exec) {
  request_state* s =
      ctx.acquire(request_state::kind::layer, call, -1, 0, msg_context::coll, nullptr, 0);
  s->phase = phase;
  s->engine_ptr = exec;
  coll_state(ctx).add(s);
  coll_state(ctx).advance();
  return request(&ctx, s);
}

bool board_advance(rank_context& ctx, request_state* s) {
  board_exec& e = *exec_of(s);
  board_wait wait;
  if (!step(ctx, board_of(ctx), e, wait)) {
    // The earliest unfinished one is what the rank waits for (they finish in order): a park
    // re-checks its word, so a peer's wake cannot slip in between.
    if (e.seq == coll_state(ctx).board.finished + 1) coll_state(ctx).watch_board(wait);
    return false;
  }
  coll_state(ctx).watch_board({});
  if (e.then && e.error.empty()) {  // a gate passed: its schedule takes over the request
    const bool done =
        continue_as_schedule(ctx, s, e, std::move(e.members), std::exchange(e.msg_number, {}));
    recycle(&e);
    return done;
  }
  return complete_board_request(ctx, s, e.error);
}

bool complete_board_request(rank_context& ctx, request_state* s, std::string& error) {
  board_take_deferred(ctx, error);  // raised by this request's wait
  s->done.store(1, std::memory_order_release);
  return true;
}

void board_advance_tails(rank_context& ctx) {
  const node_board& b = board_of(ctx);
  auto& st = coll_state(ctx).board;
  board_wait wait;
  const bool drained = drain_tails(ctx, b, wait);
  // With no collective on the world's board in flight, the tails are what a park watches.
  if (st.started == st.finished) coll_state(ctx).watch_board(drained ? board_wait{} : wait);
}

void board_finish_tails(rank_context& ctx) {
  coll_rank& cs = coll_state(ctx);
  auto& st = cs.board;
  auto& g = cs.group_board;
  if (!st.has_tails() && !g.tails && st.deferred_error.empty()) return;
  rank_entry guard(ctx);
  std::uint64_t spins = 0;
  for (;;) {
    ctx.progress();  // advances both kinds of tails and watches what they wait for
    if (!st.has_tails() && !g.tails) break;
    ctx.idle(nullptr, spins);
  }
  cs.watch_board({});
  std::string why;
  board_take_deferred(ctx, why);
  if (!why.empty()) fail("launch", ctx.rank(), why);
}

void board_take_deferred(rank_context& ctx, std::string& error) {
  coll_rank& cs = coll_state(ctx);
  if (cs.board.has_tails()) board_advance_tails(ctx);  // those whose calls are all visible
  if (cs.group_board.tails) group_board_advance_tails(ctx);
  auto& late = cs.board.deferred_error;
  if (late.empty() || !error.empty()) [[likely]]
    return;
  error = std::move(late);
  late.clear();
}

std::string board_late(std::string why, board_collective kind, std::uint64_t seq) {
  return why + "; found once every rank's call was visible, after this rank's " + board_name(kind) +
         " #" + std::to_string(seq) + " had returned (its part needed no other rank's data)";
}

bool board_finish(request_state* s, std::string& error) {
  return finish_pooled<board_exec>(s, error, recycle);
}

void board_cancel(rank_context& ctx, request_state* s) {
  // A published slot cannot be taken back: unwinding ends the run, which is what peers see.
  coll_state(ctx).watch_board({});
  recycle(exec_of(s));
  s->engine_ptr = nullptr;
}

std::string board_describe(const request_state* s) {
  const board_exec& e = *exec_of(s);
  std::ostringstream os;
  os << "shared-memory " << board_name(e.kind) << " #" << e.seq << " on the world, ";
  if (e.then) os << "checking the signatures before " << e.then->name << ", ";
  if (e.staging)
    os << "staged: " << e.chunks.staged << " chunk(s) staged, " << e.chunks.reduced << " reduced, "
       << e.chunks.copied << " copied out of " << e.chunks.chunks;
  else if (e.completed)
    os << (e.moved ? "moved its share, waiting for the others to move theirs"
                   : "completed, waiting for earlier ones");
  else if (e.published)
    os << "published, " << e.arrived << " rank(s) seen from this one on";
  else
    os << "waiting for its slot to be free";
  return os.str();
}

}  // namespace cairn::detail
