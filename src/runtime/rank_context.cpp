#include "runtime/rank_context.hpp"

#include "node/cpu_relax.hpp"
#include "node/node_regions.hpp"
#include "runtime/group_members.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <thread>

namespace cairn::detail {

namespace {
// How long one park may last before the wait loop re-checks abort and the watchdog.
constexpr double park_slice_s = 0.02;
// Seconds every rank must have waited without progress before the run fails as deadlocked
// (longer than any pause of a live run between two arrivals).
constexpr int deadlock_after_s = 3;
const std::string deadlocked =
    "deadlock: every rank has waited " + std::to_string(deadlock_after_s) + " s without progress";

// Each rank's published wait in node memory, where the MPI engine's processes see each other's.
const std::size_t wait_part = node_regions::reserve(
    sizeof(rank_wait), [](std::byte* part) noexcept { new (part) rank_wait; });
}  // namespace

void rank_context::set_transport(std::unique_ptr<transport> t) {
  tp_ = std::move(t);
  node_memory_ = tp_ ? tp_->node_memory() : nullptr;
  if (tp_) tag_ub_ = tp_->tag_ub();
  waits_.clear();
  if (run_->waits) {
    for (int r = 0; r < size(); ++r) waits_.push_back(&run_->waits[static_cast<std::size_t>(r)]);
  } else if (node_memory_ && node_memory_->ranks() == size()) {
    for (std::byte* part : node_memory_->parts(wait_part))
      waits_.push_back(reinterpret_cast<rank_wait*>(part));
  }
  watch_by_notices_ = tp_ && waits_.empty() && size() > 1;
}

double now_s() noexcept {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

int allocate_layer_slot() noexcept {
  static std::atomic<int> next{0};
  const int slot = next.fetch_add(1, std::memory_order_relaxed);
  if (slot >= max_layer_slots) {
    std::fputs("cairn: internal error: more layer state types than max_layer_slots\n", stderr);
    std::abort();
  }
  return slot;
}

rank_context::rank_context(int rank, int size, cairn::engine e, std::shared_ptr<run_state> run,
                           std::shared_ptr<const topology> topo, double watchdog_s)
    : transport_rank(rank, size, &run->aborting),
      engine_(e),
      run_(std::move(run)),
      topo_(std::move(topo)),
      watchdog_s_(watchdog_s) {}

rank_context::~rank_context() = default;

int rank_context::add_layer(void* state, const layer_hooks& hooks) {
  if (layers_.size() >= 32) fail("cairn", rank(), "more than 32 layers registered with a rank");
  layers_.push_back({state, hooks});
  const int id = static_cast<int>(layers_.size()) - 1;
  mark_busy(id);
  return id;
}

void rank_context::advance_layers(bool helper) {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const std::uint32_t bit = 1u << i;
    const layer_entry& l = layers_[i];
    if (!(busy_ & bit) || (helper && !l.hooks.helpers_may_advance)) continue;
    // Cleared only by what the layer reports once it returned: work it found or added
    // meanwhile keeps it busy, and an exception leaves it busy.
    if (!l.hooks.advance(l.state)) busy_ &= ~bit;
  }
}

void rank_context::finish_layers() {
  for (const layer_entry& l : layers_)
    if (l.hooks.finish) l.hooks.finish(l.state);
}

bool rank_context::ready_above() const noexcept {
  for (const layer_entry& l : layers_)
    if (l.hooks.ready && l.hooks.ready(l.state)) return true;
  return false;
}

// The lock protocol (seq_cst throughout): a helper first raises `missed_`, then tries the lock;
// the owner first drops the lock, then looks at `missed_`. Whichever comes second in the single
// total order sees the other, so an arrival is never left unprocessed by both.
bool rank_context::help() noexcept {
  if (outstanding_.load(std::memory_order_relaxed) == 0) return false;
  // A helped rank's sends help their receivers in turn. Rather than recursing (unbounded
  // depth), the thread's outermost help() works through them in a list.
  thread_local bool helping = false;
  thread_local std::vector<rank_context*> later;
  if (helping) {
    if (std::find(later.begin(), later.end(), this) == later.end()) later.push_back(this);
    return false;
  }
  helping = true;
  bool found = help_once();
  while (!later.empty()) {
    rank_context* r = later.back();
    later.pop_back();
    found = r->help_once() || found;
  }
  helping = false;
  return found;
}

bool rank_context::help_once() noexcept {
  missed_.store(1, std::memory_order_seq_cst);
  if (lock_.load(std::memory_order_relaxed) != 0 ||
      lock_.exchange(1, std::memory_order_seq_cst) != 0)
    return false;
  const bool found = advance_locked();
  unlock_owner();
  return found;
}

void rank_context::lock_owner() noexcept {
  for (unsigned spins = 0; lock_.exchange(1, std::memory_order_seq_cst) != 0; ++spins) {
    while (lock_.load(std::memory_order_relaxed) != 0) {
      if ((++spins & 63) == 0)
        sched_yield();  // the helper may have lost its core
      else
        cpu_relax();
    }
  }
}

void rank_context::unlock_owner() noexcept {
  for (;;) {
    lock_.store(0, std::memory_order_seq_cst);
    if (missed_.load(std::memory_order_seq_cst) == 0) return;
    if (lock_.exchange(1, std::memory_order_seq_cst) != 0) return;  // a helper is on it
    advance_locked();
  }
}

bool rank_context::advance_locked() noexcept {
  missed_.store(0, std::memory_order_seq_cst);  // what arrived before this is seen below
  try {
    const bool found = tp_->advance_pending(pending_list());
    if (busy_) advance_layers(true);
    return found;
  } catch (...) {
    // Errors of a collective are kept in its state and raised by its wait(); what escapes
    // here (memory exhaustion) is met again by the rank's own next call.
    return false;
  }
}

void rank_context::make_world_group() {
  std::vector<int> all(static_cast<std::size_t>(size()));
  for (int r = 0; r < size(); ++r) all[static_cast<std::size_t>(r)] = r;
  world_group_ = std::make_shared<const group_members>(std::move(all), *topo_);
}

void rank_context::cancel(request_state* s) {
  if (s->k == request_state::kind::layer) {
    s->ops->cancel(*this, s);
  } else {
    tp_->cancel(s);
  }
  release(s);
}

status rank_context::finish(request_state* s) {
  if (s->k == request_state::kind::layer) {
    const std::exception_ptr err = s->ops->finish(*this, s);
    release(s);
    if (err) std::rethrow_exception(err);
    return status{};
  }
  status st = s->st;
  if (s->failed) {
    const char* call = s->call;
    int src = s->st.source, tag = s->st.tag;
    std::size_t incoming = s->incoming, capacity = s->capacity;
    release(s);
    if (incoming > 0)
      fail(call, rank(), "message of ", incoming, " bytes from rank ", src, " (tag ", tag,
           ") does not fit the receive buffer of ", capacity, " bytes");
    fail(call, rank(), "message from rank ", src, " (tag ", tag,
         ") is larger than the receive buffer of ", capacity, " bytes");
  }
  release(s);
  return st;
}

status rank_context::wait(request_state* s) {
  std::uint64_t spins = 0;
  try {
    while (!test(s)) idle(s, spins);
  } catch (...) {
    // The wait ends by an exception (the run aborts, a peer has ended): withdraw the operation
    // before its buffers go out of scope, or a peer would still read a long send's buffer (or
    // write a receive's) after the caller freed or reused it.
    cancel(s);
    throw;
  }
  return finish(s);
}

status rank_context::probe(int source, int tag, msg_context c) {
  status st;
  std::uint64_t spins = 0;
  while (!tp_->iprobe(source, tag, c, &st)) idle(nullptr, spins);
  return st;
}

void rank_context::idle(request_state* s, std::uint64_t& spins) {
  check_abort();
  // Something moved since the last poll (a pipelined collective's chunk, a message): the next
  // step is likely as close, so spin again before parking.
  if (progress_epoch_ != idle_epoch_) {
    idle_epoch_ = progress_epoch_;
    spins = 0;
  }
  const unsigned spin = tp_->spin_polls();
  if (spins < spin) {
    // PAUSE between polls matters: the two ranks may share one physical core (SMT), where a
    // tight loop of loads slows the very rank it waits for (measured: 3x the latency).
    // Every so often hand the core over: when the peer we wait for shares our core (the
    // scheduler put both there), spinning out the whole budget would delay it by that much
    // on every exchange (measured: ~160 us per message until the threads got separated).
    if ((++spins & 255) == 0)
      sched_yield();
    else
      cpu_relax();
    return;
  }
  // A wait's first park, or progress since the last: the wait is not stuck (yet).
  const double t = now_s();
  const bool fresh = spins == spin || progress_epoch_ != watched_epoch_;
  if (fresh) {
    watched_epoch_ = progress_epoch_;
    watched_since_ = t;
    watched_call_ = s ? s->call : "a collective or channel wait";
    ++wait_episode_;
  } else if (watchdog_s_ > 0 && t - watched_since_ > watchdog_s_) {
    watchdog_fire(t - watched_since_);
  }
  if (!waits_.empty()) {
    rank_wait& mine = *waits_[static_cast<std::size_t>(rank())];
    if (fresh) {
      mine.stuck_since.store(t, std::memory_order_relaxed);
      mine.set_call(watched_call_);
    }
    mine.heartbeat.store(t, std::memory_order_release);
    if (t - watched_since_ >= deadlock_after_s) check_deadlock(t);
  } else if (watch_by_notices_) {
    watch_across_nodes(t);
  }
  check_ended_peers(s);
  tp_->park(s, park_slice_s, spins - spin);
  ++spins;
}

namespace {
// How long a wait must keep needing an ended rank, with no progress, before it fails: on MPI,
// the end's announcement travels on its own communicator and may overtake the rank's last
// messages.
constexpr double ended_grace_s = 0.2;
// A rank whose wait has parked within this long is waiting now (a park lasts at most
// park_slice_s); one that has not may be computing, or not scheduled: it is not counted stuck.
constexpr double waiting_now_s = 0.1;
}  // namespace

void rank_context::check_deadlock(double now) {
  if (now - deadlock_scan_ < 0.25) return;
  // Two looks a quarter second apart must agree: every rank that has not ended parked again
  // since the first (so none is busy inside a step) and its wait is the same stuck one.
  const double first = deadlock_scan_;
  deadlock_scan_ = now;
  bool same = deadlock_seen_.size() == static_cast<std::size_t>(size());
  deadlock_seen_.resize(static_cast<std::size_t>(size()), -1);
  bool stuck = true;
  std::string who;
  for (int r = 0; r < size(); ++r) {
    if (r != rank() && tp_->has_ended(r)) {
      if (r < 16) who += "; rank " + std::to_string(r) + "'s function has returned";
      continue;
    }
    const rank_wait& w = *waits_[static_cast<std::size_t>(r)];
    const double beat = w.heartbeat.load(std::memory_order_acquire);
    const double since = w.stuck_since.load(std::memory_order_relaxed);
    double& seen = deadlock_seen_[static_cast<std::size_t>(r)];
    same = same && since == seen && beat > first;
    seen = since;
    // r is computing or not scheduled (no recent park), or its wait moved lately.
    stuck = stuck && beat >= 0 && now - beat <= waiting_now_s && now - since >= deadlock_after_s;
    if (r < 16 && stuck) who += "; rank " + std::to_string(r) + " waits in " + w.call_name();
  }
  if (!stuck || !same) {
    if (!stuck) deadlock_seen_.clear();  // start over with two fresh looks
    return;
  }
  if (size() > 16) who += "; ...";
  // The first rank to see it reports it (the others may see it at the same time), before it
  // fails the run: on MPI that ends every process at once.
  std::uint32_t none = 0;
  if (!waits_[0]->reported.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) {
    // Another process reported it and is ending the job: leave the last word to it.
    if (engine_ == cairn::engine::mpi) std::this_thread::sleep_for(std::chrono::seconds(2));
    fail_deadlocked("", false);
  }
  fail_deadlocked(who, true);
}

void rank_context::fail_deadlocked(const std::string& who, bool report) {
  if (!report) {
    run_->fail(rank(), deadlocked);
    throw run_aborted{};
  }
  std::ostringstream os;
  os << "cairn: " << deadlocked
     << " (none can move on: mismatched sends and receives, collectives "
        "called differently, or redistributions planned differently)"
     << who << "\nrank " << rank() << "'s pending operations:\n"
     << describe_pending();
  const std::string text = os.str();
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  run_->fail(rank(), deadlocked);
  throw run_aborted{};
}

namespace {
// The watcher's question and a rank's answer (watch_across_nodes), as notices.
struct watch_query {
  std::uint32_t round;
};
struct watch_reply {
  std::uint32_t round;
  std::uint64_t episode;  // the same number in two rounds: no progress in between
  double stuck_s;         // how long the wait has had no progress
  char call[notice_bytes - 24];
};
static_assert(sizeof(watch_reply) == notice_bytes);
// Between the end of one round and the start of the next.
constexpr double watch_pause_s = 0.25;
}  // namespace

void rank_context::watch_across_nodes(double now) {
  // Every waiting rank answers: it is waiting now, in the wait numbered wait_episode_.
  int from = -1;
  std::array<std::byte, notice_bytes> in;
  while (tp_->poll_notice(notice_kind::query, &from, in.data())) {
    watch_query q;
    std::memcpy(&q, in.data(), sizeof q);
    watch_reply a{q.round, wait_episode_, now - watched_since_, {}};
    std::strncpy(a.call, watched_call_, sizeof a.call - 1);
    tp_->send_notice(from, notice_kind::answer, &a, sizeof a);
  }
  if (now - watched_since_ < deadlock_after_s) return;
  int watcher = 0;
  while (watcher < rank() && tp_->has_ended(watcher)) ++watcher;
  if (watcher != rank()) return;
  const auto n = static_cast<std::size_t>(size());
  watch_answers_.resize(n);
  watch_prior_.resize(n, ~std::uint64_t{0});
  while (tp_->poll_notice(notice_kind::answer, &from, in.data())) {
    watch_reply a;
    std::memcpy(&a, in.data(), sizeof a);
    a.call[sizeof a.call - 1] = '\0';
    watch_answers_[static_cast<std::size_t>(from)] = {a.round, a.episode, a.stuck_s, a.call};
  }
  const auto asked = [&](int r) { return r != rank() && !tp_->has_ended(r); };
  if (!watch_open_) {
    if (now < watch_next_) return;
    watch_open_ = true;
    const watch_query q{++watch_round_};
    for (int r = 0; r < size(); ++r)
      if (asked(r)) tp_->send_notice(r, notice_kind::query, &q, sizeof q);
    return;
  }
  for (int r = 0; r < size(); ++r)
    if (asked(r) && watch_answers_[static_cast<std::size_t>(r)].round != watch_round_)
      return;  // the round is still open: r computes, or its answer is on its way
  watch_open_ = false;
  watch_next_ = now + watch_pause_s;
  // Every rank answered from a wait. Two full rounds that find each in the same wait without
  // progress (each answered the later round after the watcher had every answer to the
  // earlier one) span a moment where all were stuck at once, and none has moved since.
  bool stuck = true;
  std::string who;
  for (int r = 0; r < size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r != rank() && tp_->has_ended(r)) {
      if (r < 16) who += "; rank " + std::to_string(r) + "'s function has returned";
      continue;
    }
    const watch_answer& a =
        r == rank() ? watch_answer{watch_round_, wait_episode_, now - watched_since_, watched_call_}
                    : watch_answers_[i];
    stuck = stuck && a.stuck_s >= deadlock_after_s && a.episode == watch_prior_[i];
    watch_prior_[i] = a.episode;
    if (r < 16) who += "; rank " + std::to_string(r) + " waits in " + a.call;
  }
  if (stuck) fail_deadlocked(size() > 16 ? who + "; ..." : who, true);
}

void rank_context::check_ended_peers(const request_state* s) {
  const int ended = tp_->ended_ranks();
  if (ended == 0) return;
  const auto gone = [&](int r) { return r >= 0 && r != rank() && tp_->has_ended(r); };
  // The first operation that can no longer complete: a receive from (or a send waiting for)
  // an ended rank, a receive from any source once every other rank ended, or a layer's wait
  // on an ended rank's word in node memory.
  request_state* doomed = nullptr;
  int peer = -1;
  const char* call = nullptr;
  for (request_state* p = pending_list(); p && !doomed; p = p->active_next) {
    // Complete but not yet reaped (a send the ended rank received before it returned, waited
    // for after another request): nothing to wait for.
    if (p->k == request_state::kind::layer || p->done.load(std::memory_order_acquire)) continue;
    if (gone(p->peer) || (p->k == request_state::kind::recv && p->peer == any_source &&
                          ended >= size() - 1 && p->ctx != msg_context::msg)) {
      doomed = p;
      peer = p->peer;
      call = p->call;
    }
  }
  if (!doomed)
    for (const layer_entry& l : layers_) {
      const char* layer_call = "";
      const int r = l.hooks.awaited_rank ? l.hooks.awaited_rank(l.state, &layer_call) : -1;
      if (gone(r)) {
        peer = r;
        call = layer_call;
        break;
      }
    }
  if (peer == -1 && !doomed) {
    ended_wait_since_ = -1;
    return;
  }
  // The grace runs from the last progress: a collective still receiving from ranks that
  // returned after sending (each receive matched in turn) is not stuck on any of them.
  const double t = now_s();
  if (ended_wait_since_ < 0 || progress_epoch_ != ended_epoch_) {
    ended_wait_since_ = t;
    ended_epoch_ = progress_epoch_;
  }
  if (t - ended_wait_since_ < ended_grace_s) return;
  // MPI marks a request done only when tested: the ended rank may have matched it already.
  if (doomed && tp_->test(doomed)) return;
  // Tags of cairn's own contexts are internal numbers: only a user's tag is worth printing.
  const auto which = [](const request_state* p) {
    std::string t = " (";
    if (p->ctx == msg_context::user)
      t += "tag " + (p->tag == any_tag ? std::string("any") : std::to_string(p->tag)) + ", ";
    return t + "context " + to_string(p->ctx) + ")";
  };
  std::string what;
  if (!doomed)
    what = "the word it waits for in node memory will never be written";
  else if (doomed->k == request_state::kind::send)
    what = "a send to rank " + std::to_string(peer) + which(doomed) + " will never be received";
  else if (doomed->peer == any_source)
    what = "a receive from any source" + which(doomed) +
           " will never be matched: every other rank's function has returned";
  else
    what = "a receive from rank " + std::to_string(peer) + which(doomed) + " will never be matched";
  if (s && s->k == request_state::kind::layer) call = s->call;  // what the user called
  if (peer == any_source) fail(call, rank(), what);
  fail(call, rank(), "rank ", peer,
       "'s function has returned while this rank waits for it: ", what);
}

std::string rank_context::describe_pending() const {
  std::ostringstream os;
  int n = 0;
  for (const request_state* s = pending_list(); s; s = s->active_next, ++n) {
    if (s->k == request_state::kind::layer) {
      os << "  " << s->call << ": " << s->ops->describe(s) << "\n";
      continue;
    }
    os << "  " << s->call << (s->k == request_state::kind::send ? " to rank " : " from ");
    if (s->k == request_state::kind::recv && s->peer == any_source)
      os << "any source";
    else
      os << (s->k == request_state::kind::recv ? "rank " : "") << s->peer;
    os << ", tag ";
    if (s->tag == any_tag)
      os << "any";
    else
      os << s->tag;
    os << ", " << s->capacity << " bytes, context " << to_string(s->ctx) << "\n";
  }
  for (const layer_entry& l : layers_)
    if (l.hooks.describe) l.hooks.describe(l.state, os);
  if (n == 0) os << "  (no pending point-to-point operation)\n";
  if (tp_) tp_->describe(os);
  return os.str();
}

void rank_context::watchdog_fire(double idle_s) {
  std::ostringstream os;
  os << "cairn watchdog: rank " << rank() << " made no progress for " << idle_s
     << " s (CAIRN_WATCHDOG_S=" << watchdog_s_ << "); pending operations:\n"
     << describe_pending();
  const std::string text = os.str();
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  run_->fail(rank(), "watchdog: no progress for " + std::to_string(idle_s) + " s");
  throw run_aborted{};
}

}  // namespace cairn::detail
