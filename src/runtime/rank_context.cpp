#include "runtime/rank_context.hpp"

#include "coll/executor.hpp"
#include "coll/shared_memory_flat.hpp"
#include "coll/shared_memory_group.hpp"
#include "runtime/group_members.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace cairn::detail {

namespace {
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

constexpr std::size_t slab_states = 256;
// How long one park may last before the wait loop re-checks abort and the watchdog.
constexpr double park_slice_s = 0.02;
}  // namespace

double now_s() noexcept {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

const char* to_string(msg_context c) noexcept {
  switch (c) {
    case msg_context::user: return "user";
    case msg_context::coll: return "coll";
    case msg_context::msg: return "msg";
    case msg_context::array: return "array";
  }
  return "?";
}

rank_context::rank_context(int rank, int size, cairn::engine e, std::shared_ptr<run_state> run,
                           std::shared_ptr<const topology> topo, double watchdog_s)
    : rank_(rank),
      size_(size),
      engine_(e),
      run_(std::move(run)),
      topo_(std::move(topo)),
      watchdog_s_(watchdog_s) {}

rank_context::~rank_context() = default;

request_state* rank_context::acquire(request_state::kind k, const char* call, int peer, int tag,
                                     msg_context c, void* buf, std::size_t capacity) {
  if (pool_.empty()) {
    auto slab = std::make_unique<request_state[]>(slab_states);
    pool_.reserve(pool_.size() + slab_states);
    for (std::size_t i = slab_states; i-- > 0;) pool_.push_back(&slab[i]);
    slabs_.push_back(std::move(slab));
  }
  request_state* s = pool_.back();
  pool_.pop_back();
  s->done.store(0, std::memory_order_relaxed);
  s->k = k;
  s->ctx = c;
  s->failed = false;
  s->call = call;
  s->peer = peer;
  s->tag = tag;
  s->buf = buf;
  s->capacity = capacity;
  s->incoming = 0;
  s->st = status{};
  s->prev = s->next = nullptr;
  s->engine_ptr = nullptr;
  s->phase = 0;
  s->slot = 0;
  s->active_prev = nullptr;
  if (helped_) outstanding_.fetch_add(1, std::memory_order_relaxed);
  s->active_next = active_;
  if (active_) active_->active_prev = s;
  active_ = s;
  return s;
}

void rank_context::switch_seq(std::uint64_t id) {
  last_seq_ = &coll_seq_[id];  // map elements never move
  last_seq_id_ = id;
}

void rank_context::release(request_state* s) noexcept {
  if (s->active_prev)
    s->active_prev->active_next = s->active_next;
  else
    active_ = s->active_next;
  if (s->active_next) s->active_next->active_prev = s->active_prev;
  if (helped_) outstanding_.fetch_sub(1, std::memory_order_relaxed);
  pool_.push_back(s);
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
    const bool found = tp_->advance_pending(active_);
    if (has_colls()) advance_colls();
    return found;
  } catch (...) {
    // Errors of a collective are kept in its state and raised by its wait(); what escapes
    // here (memory exhaustion) is met again by the rank's own next call.
    return false;
  }
}

void rank_context::advance_colls() {
  // Before the checks: a ring after this load keeps a park from sleeping (board_ready).
  if (group_board_.pending) group_board_.seen = group_board_.bell->load(std::memory_order_seq_cst);
  if (board_.has_tails()) board_advance_tails(*this);
  if (group_board_.tails) group_board_advance_tails(*this);
  for (std::size_t i = 0; i < colls_.size();) {
    if (coll_advance(*this, colls_[i])) {
      colls_[i] = colls_.back();
      colls_.pop_back();
    } else {
      ++i;
    }
  }
}

void rank_context::make_world_group() {
  std::vector<int> all(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) all[static_cast<std::size_t>(r)] = r;
  world_group_ = std::make_shared<const group_members>(std::move(all));
}

void rank_context::cancel(request_state* s) {
  if (s->k == request_state::kind::schedule) {
    for (std::size_t i = 0; i < colls_.size(); ++i)
      if (colls_[i] == s) {
        colls_[i] = colls_.back();
        colls_.pop_back();
        break;
      }
    coll_cancel(*this, s);
  } else {
    tp_->cancel(s);
  }
  release(s);
}

status rank_context::finish(request_state* s) {
  if (s->k == request_state::kind::schedule) {
    std::string err;
    const bool ok = coll_finish(s, err);
    const char* call = s->call;
    release(s);
    if (!ok) fail(call, rank_, err);
    return status{};
  }
  status st = s->st;
  if (s->failed) {
    const char* call = s->call;
    int src = s->st.source, tag = s->st.tag;
    std::size_t incoming = s->incoming, capacity = s->capacity;
    release(s);
    if (incoming > 0)
      fail(call, rank_, "message of ", incoming, " bytes from rank ", src, " (tag ", tag,
           ") does not fit the receive buffer of ", capacity, " bytes");
    fail(call, rank_, "message from rank ", src, " (tag ", tag,
         ") is larger than the receive buffer of ", capacity, " bytes");
  }
  release(s);
  return st;
}

status rank_context::wait(request_state* s) {
  std::uint64_t spins = 0;
  while (!test(s)) idle(s, spins);
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
  if (watchdog_s_ > 0) {
    const double t = now_s();
    if (spins == spin || progress_epoch_ != watched_epoch_) {
      watched_epoch_ = progress_epoch_;
      watched_since_ = t;
    } else if (t - watched_since_ > watchdog_s_) {
      watchdog_fire(t - watched_since_);
    }
  }
  tp_->park(s, park_slice_s, spins - spin);
  ++spins;
}

std::string rank_context::describe_pending() const {
  std::ostringstream os;
  int n = 0;
  for (const request_state* s = active_; s; s = s->active_next, ++n) {
    if (s->k == request_state::kind::schedule) {
      os << "  " << s->call << ": " << coll_describe(s) << "\n";
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
  if (board_wait_.word)
    os << "  " << board_wait_.call << ": shared-memory collective #" << board_wait_.value
       << " on the world, waiting for rank " << board_wait_.peer << "\n";
  if (group_board_.pending)
    os << "  " << group_board_.pending
       << " shared-memory collective(s) on groups (listed above if non-blocking; "
       << group_board_.tails
       << " returned to their caller, still reading the other members' slots)\n";
  if (n == 0) os << "  (no pending point-to-point operation)\n";
  if (tp_) tp_->describe(os);
  return os.str();
}

void rank_context::watchdog_fire(double idle_s) {
  std::ostringstream os;
  os << "cairn watchdog: rank " << rank_ << " made no progress for " << idle_s
     << " s (CAIRN_WATCHDOG_S=" << watchdog_s_ << "); pending operations:\n"
     << describe_pending();
  const std::string text = os.str();
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  run_->fail(rank_, "watchdog: no progress for " + std::to_string(idle_s) + " s");
  throw run_aborted{};
}

}  // namespace cairn::detail
