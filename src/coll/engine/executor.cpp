#include "coll/engine/executor.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <tuple>
#include <vector>

#include "coll/algorithms/planners.hpp"
#include "coll/board/shared_memory_flat.hpp"
#include "coll/board/shared_memory_group.hpp"
#include "coll/engine/coll_rank.hpp"
#include "coll/engine/exec_pool.hpp"
#include "node/copy_bytes.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {

// The signature of a call of the plan with fingerprint `fingerprint` (plan_fingerprint) and
// shape `shape`: the same on every member of a right call. Every message of the call carries
// it (the transport's check word), and a receiver whose own differs raises that the ranks are
// in different calls, so a disagreement on the collective, its algorithm, count or root is
// found by each rank that receives from one that disagrees, at any call, for the cost of a
// compare. Its high half hashes the plan and the root (what decides who sends what to whom),
// its low half the count (signature_structure).
std::uint32_t call_signature(std::uint64_t fingerprint, call_shape shape) noexcept {
  auto mix = [](std::uint64_t h) {
    h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 29)) * 0x94D049BB133111EBull;
    return static_cast<std::uint32_t>(h ^ (h >> 32));
  };
  const std::uint32_t structure =
      mix(fingerprint ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(shape.root)));
  const std::uint32_t count = mix(shape.bytes + 0x9E3779B97F4A7C15ull);
  return (structure & 0xFFFF0000u) | (count >> 16);
}
// The part of a signature that hashes the plan and the root.
std::uint32_t signature_structure(std::uint32_t s) noexcept { return s >> 16; }

// What the count check's messages carry (coll_exec::checking).
constexpr std::uint32_t count_check_signature = 0x636b6368;  // "chck"

struct coll_exec {
  exec_pool<coll_exec>* home = nullptr;  // the pool of its rank
  std::shared_ptr<const coll::schedule> plan;
  std::shared_ptr<const group_members> members;
  const std::byte* in = nullptr;
  std::byte* out = nullptr;
  std::unique_ptr<std::byte[]> temp;
  std::size_t temp_capacity = 0;
  op_binding op;
  int tag = 0;
  // The call's signature (call_signature), carried by every message and compared on arrival.
  std::uint32_t signature = 0;
  call_shape shape;
  // In the count check before the plan (its first steps, up to its verdict): its messages
  // carry count_check_signature instead, the same on every rank, so that ranks whose calls
  // differ still reach the check's verdict, which names both calls.
  bool checking = false;
  std::uint32_t message_signature() const noexcept {
    return checking ? count_check_signature : signature;
  }
  // plan_fingerprint of `plan`, which stays held after the collective completes: the next
  // run of the same plan (the repeated call) skips hashing its name.
  std::uint64_t fingerprint = 0;
  numbered number;  // on its group, held until it completes
  std::size_t next_round = 0;
  std::vector<request_state*> pending;  // this round's unfinished messages
  std::vector<std::uint32_t> pending_step;
  std::string error;
  // It continues a gate (continue_as_schedule): a disagreement the rank's board tails found
  // meanwhile is raised by its wait (board_progress::deferred_error).
  bool after_gate = false;

  std::byte* at(const coll::region& r) const {
    switch (r.slot) {
      case coll::slot::input: return const_cast<std::byte*>(in) + r.offset;
      case coll::slot::output: return out + r.offset;
      case coll::slot::temp: return temp.get() + r.offset;
    }
    return nullptr;
  }
};

coll_exec* exec_of(const request_state* s) { return static_cast<coll_exec*>(s->engine_ptr); }

void recycle(coll_exec* e) {
  // pending/pending_step are empty here (a finished or cancelled collective holds none), and
  // error was cleared or never set. The plan stays (see fingerprint).
  e->members.reset();
  e->op.op.reset();
  e->next_round = 0;
  e->after_gate = false;
  e->home->give(e);
}

// The count check's signature records (start.cpp's runs_checked): the minimum and the maximum over
// the ranks folded in so far, ordered by (bytes, root, plan), ties by rank.
struct signature {
  std::uint64_t bytes, root, plan, rank;
  auto key() const { return std::tie(bytes, root, plan); }
};
struct signature_record {
  signature min, max;
};
static_assert(sizeof(signature_record) == coll::signature_record_bytes);

// Runs a signature step; false when the verdict is that the ranks' calls differ (e.error set).
bool signature_step(coll_exec& e, const coll::step& st) {
  signature_record to;
  std::memcpy(&to, e.at(st.to), sizeof to);
  if (st.kind == coll::step_kind::signature) {
    const signature mine{st.bytes, static_cast<std::uint64_t>(static_cast<std::int64_t>(st.peer)),
                         plan_fingerprint(e.plan->name),
                         static_cast<std::uint64_t>(e.plan->group_rank)};
    to = {mine, mine};
  } else if (st.kind == coll::step_kind::signature_combine) {
    signature_record from;
    std::memcpy(&from, e.at(st.from), sizeof from);
    if (from.min.key() < to.min.key() ||
        (from.min.key() == to.min.key() && from.min.rank < to.min.rank))
      to.min = from.min;
    if (from.max.key() > to.max.key() ||
        (from.max.key() == to.max.key() && from.max.rank < to.max.rank))
      to.max = from.max;
  } else if (to.min.key() != to.max.key()) {  // signature_verify
    auto world = [&](std::uint64_t r) {
      return e.members->world_ranks[static_cast<std::size_t>(r)];
    };
    auto root = [](std::uint64_t r) { return static_cast<std::int64_t>(r); };
    std::ostringstream os;
    os << "ranks disagree on the call: rank " << world(to.min.rank) << " passes " << to.min.bytes
       << " bytes";
    if (root(to.min.root) >= 0) os << " with root " << root(to.min.root);
    os << ", rank " << world(to.max.rank) << " passes " << to.max.bytes << " bytes";
    if (root(to.max.root) >= 0) os << " with root " << root(to.max.root);
    if (to.min.plan != to.max.plan) os << " (and chose another algorithm)";
    os << "; nothing was transferred (" << e.plan->name << ")";
    e.error = os.str();
    return false;
  }
  std::memcpy(e.at(st.to), &to, sizeof to);
  return true;
}

// The error of a message from world rank `source` that carries another call's signature
// `theirs`: of another collective, algorithm or root, or else of another count.
std::string other_call_error(const coll_exec& e, int source, std::uint32_t theirs) {
  const bool structure = signature_structure(theirs) != signature_structure(e.signature);
  std::ostringstream os;
  os << "rank " << source << " sent a message of another call to this rank's " << e.plan->name
     << " (collective #" << e.number.seq << " on a group of " << e.members->world_ranks.size()
     << " ranks): ";
  if (structure)
    os << "the ranks disagree on the collective, its algorithm or root";
  else
    os << "the ranks pass different counts";
  os << " (this rank ";
  if (e.shape.bytes)
    os << "passes " << e.shape.bytes << " bytes per rank";
  else
    os << "runs it";
  if (e.shape.root >= 0) os << " with root " << e.shape.root;
  os << "; do all ranks pass the same count and root?)";
  return os.str();
}

}  // namespace

std::uint64_t plan_fingerprint(const std::string& name) noexcept {  // FNV-1a
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h ? h : 1;  // 0 means "on the board" in a slot
}

namespace {
// A running collective's state for `plan` on `members`, numbered `number` there.
coll_exec* bind_exec(rank_context& ctx, std::shared_ptr<const group_members> members,
                     std::shared_ptr<const coll::schedule> plan, const void* in, void* out,
                     op_binding op, numbered number, call_shape shape) {
  coll_exec* e = ctx.layer<exec_pool<coll_exec>>().take();
  if (e->plan != plan) {
    e->fingerprint = plan_fingerprint(plan->name);
    e->plan = std::move(plan);
  }
  e->shape = shape;
  e->signature = call_signature(e->fingerprint, shape);
  e->checking = !e->plan->steps.empty() && e->plan->steps[0].kind == coll::step_kind::signature;
  e->members = std::move(members);
  e->in = static_cast<const std::byte*>(in);
  e->out = static_cast<std::byte*>(out);
  if (e->plan->temp_bytes > e->temp_capacity) {
    e->temp = std::make_unique<std::byte[]>(e->plan->temp_bytes);
    e->temp_capacity = e->plan->temp_bytes;
  }
  e->op = std::move(op);
  e->tag = coll_tag(number.seq);
  e->number = number;
  return e;
}
}  // namespace

request start_schedule(coll_target t, const char* call, std::shared_ptr<const coll::schedule> plan,
                       const void* in, void* out, op_binding op, numbered number,
                       call_shape shape) {
  rank_context& ctx = *t.ctx;
  rank_entry guard(ctx);
  coll_exec* e =
      bind_exec(ctx, std::move(t.members), std::move(plan), in, out, std::move(op), number, shape);
  request_state* s =
      ctx.acquire(request_state::kind::layer, call, -1, e->tag, msg_context::coll, nullptr, 0);
  s->engine_ptr = e;
  coll_state(ctx).add(s);
  coll_state(ctx).advance();  // the first round goes out at once
  return request(&ctx, s);
}

bool continue_as_schedule(rank_context& ctx, request_state* s, board_call& gate,
                          std::shared_ptr<const group_members> members, numbered number) {
  coll_exec* e = bind_exec(ctx, std::move(members), std::move(gate.then), gate.in, gate.out,
                           std::move(gate.op), number, {gate.bytes, gate.root});
  e->after_gate = true;
  s->phase = 0;
  s->tag = e->tag;
  s->engine_ptr = e;
  return coll_advance(ctx, s);
}

bool coll_advance(rank_context& ctx, request_state* s) {
  if (s->phase == board_phase) return board_advance(ctx, s);
  if (s->phase == group_board_phase) return group_board_advance(ctx, s);
  coll_exec& e = *exec_of(s);
  transport& tp = ctx.tp();
  for (;;) {
    for (request_state* p : e.pending)
      if (!tp.test(p)) return false;
    for (std::size_t i = 0; i < e.pending.size(); ++i) {
      request_state* p = e.pending[i];
      const coll::step& st = e.plan->steps[e.pending_step[i]];
      if (e.error.empty() && p->k == request_state::kind::recv) {
        if (p->check_word != e.message_signature()) {
          e.error = other_call_error(e, p->st.source, p->check_word);
          // Ranks that run different plans or roots could wait on for messages no peer sends:
          // the rank ends here, and its peers that wait for it learn that it failed. Counts
          // alone differ: it runs on (below), as after a message of the wrong size.
          if (signature_structure(p->check_word) != signature_structure(e.signature))
            e.next_round = e.plan->rounds();
        } else if (p->failed || p->st.bytes != st.bytes) {
          std::ostringstream os;
          os << "rank " << p->st.source << " sent " << (p->failed ? p->incoming : p->st.bytes)
             << " bytes where this rank expected " << st.bytes << " (" << e.plan->name
             << "; do all ranks pass the same count and root?)";
          e.error = os.str();
        }
      }
      ctx.release(p);
    }
    e.pending.clear();
    e.pending_step.clear();
    // After an error in a call whose ranks run the same plan (counts that differ), the
    // schedule still runs to its end, so that peers waiting for this rank's later messages
    // are not left hanging; the error is raised by wait().
    if (e.next_round == e.plan->rounds()) {
      if (e.after_gate) [[unlikely]]
        board_take_deferred(ctx, e.error);
      e.number.release();
      s->done.store(1, std::memory_order_release);  // request::ready() may look from outside
      ctx.note_progress();
      return true;
    }
    const auto [first, last] = e.plan->round(e.next_round++);
    bool verdict_failed = false;
    for (std::size_t i = first; e.error.empty() && i < last; ++i) {  // local steps first
      // (skipped after an error: scratch may hold bytes that never arrived)
      const coll::step& st = e.plan->steps[i];
      if (st.kind >= coll::step_kind::signature) {  // the count check's kinds come last
        verdict_failed = !signature_step(e, st);
        if (st.kind == coll::step_kind::signature_verify) e.checking = false;
      } else if (st.kind == coll::step_kind::copy) {
        std::byte* from = e.at(st.from);
        std::byte* to = e.at(st.to);
        // Scratch and user buffers may overlap only in place; distinct buffers avoid memmove's
        // slow case (see copy_bytes).
        if (from == to || !st.bytes) continue;
        if (to + st.bytes <= from || from + st.bytes <= to)
          copy_bytes(to, from, st.bytes);
        else
          std::memmove(to, from, st.bytes);
      } else if (st.kind == coll::step_kind::reduce && st.bytes) {
        e.op.combine(e.op.op.get(), e.at(st.from), e.at(st.to), st.bytes / e.op.elem,
                     st.from_is_left);
      }
    }
    if (verdict_failed) {  // every rank reached the same verdict: all end here, nothing sent
      e.next_round = e.plan->rounds();
      continue;
    }
    // Receives are posted before the round's sends go out, so that a peer's message finds
    // its receive waiting (MPI: matched on arrival, no unexpected-queue copy).
    auto peer_of = [&](const coll::step& st) {
      return st.peer >= 0 ? e.members->world_ranks[static_cast<std::size_t>(st.peer)] : -1;
    };
    for (std::size_t i = first; i < last; ++i) {
      const coll::step& st = e.plan->steps[i];
      if (st.kind != coll::step_kind::recv) continue;
      request_state* p = ctx.acquire(request_state::kind::recv, s->call, peer_of(st), e.tag,
                                     msg_context::coll, e.at(st.to), st.bytes);
      p->space = e.members->id;
      tp.irecv(ctx, p);
      e.pending.push_back(p);
      e.pending_step.push_back(static_cast<std::uint32_t>(i));
    }
    for (std::size_t i = first; i < last; ++i) {
      const coll::step& st = e.plan->steps[i];
      if (st.kind != coll::step_kind::send) continue;
      if (request_state* p = tp.isend(ctx, s->call, e.at(st.from), st.bytes, peer_of(st), e.tag,
                                      e.members->id, e.message_signature(), msg_context::coll)) {
        e.pending.push_back(p);
        e.pending_step.push_back(static_cast<std::uint32_t>(i));
      }
    }
  }
}

bool coll_finish(request_state* s, std::string& error) {
  if (s->phase == board_phase) return board_finish(s, error);
  if (s->phase == group_board_phase) return group_board_finish(s, error);
  return finish_pooled<coll_exec>(s, error, recycle);
}

void coll_cancel(rank_context& ctx, request_state* s) {
  if (s->phase == board_phase) return board_cancel(ctx, s);
  if (s->phase == group_board_phase) return group_board_cancel(ctx, s);
  coll_exec* e = exec_of(s);
  for (request_state* p : e->pending) {
    ctx.tp().cancel(p);
    ctx.release(p);
  }
  e->pending.clear();
  e->pending_step.clear();
  e->error.clear();
  e->number.release();
  recycle(e);
  s->engine_ptr = nullptr;
}

request_state* coll_holding(const std::vector<request_state*>& running, const numbered& n) {
  for (request_state* s : running)
    if (s->phase != board_phase && s->phase != group_board_phase) {
      const numbered& held = exec_of(s)->number;
      if (held.numbers == n.numbers && ((held.seq ^ n.seq) & n.numbers->mask) == 0) return s;
    }
  return nullptr;
}

std::string coll_describe(const request_state* s) {
  if (s->phase == board_phase) return board_describe(s);
  if (s->phase == group_board_phase) return group_board_describe(s);
  const coll_exec* e = exec_of(s);
  std::ostringstream os;
  os << e->plan->name << " on a group of " << e->members->world_ranks.size()
     << " ranks (this rank is " << e->plan->group_rank << "), round " << e->next_round << " of "
     << e->plan->rounds() << ", " << e->pending.size() << " message(s) pending, tag " << e->tag;
  return os.str();
}

}  // namespace cairn::detail
