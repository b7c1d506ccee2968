#include "transport/threads_transport.hpp"

#include <climits>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <sstream>

#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {
inline bool matches(const request_state* r, const envelope* e) noexcept {
  return r->ctx == e->ctx && (r->peer == any_source || r->peer == e->src) &&
         (r->tag == any_tag || r->tag == e->tag);
}
inline bool matches(int source, int tag, msg_context c, const envelope* e) noexcept {
  return c == e->ctx && (source == any_source || source == e->src) &&
         (tag == any_tag || tag == e->tag);
}
}  // namespace

threads_fabric::threads_fabric(int ranks)
    : ranks_(ranks),
      boxes_(std::make_unique<mailbox[]>(static_cast<std::size_t>(ranks))),
      allocated_(static_cast<std::size_t>(ranks)) {}

threads_fabric::~threads_fabric() {
  for (auto& list : allocated_)
    for (envelope* e : list) {
      delete[] e->heap;
      delete e;
    }
}

void threads_fabric::wake_all() noexcept {
  for (int r = 0; r < ranks_; ++r) box(r).park.wake_always();
}

threads_transport::threads_transport(std::shared_ptr<threads_fabric> fabric, rank_context& ctx,
                                     bool oversubscribed)
    : fabric_(std::move(fabric)),
      ctx_(ctx),
      me_(ctx.rank()),
      box_(fabric_->box(me_)),
      // With a core per rank, spinning a few tens of microseconds catches replies without a
      // sleep/wake round trip; with more ranks than cores, spinning only steals the core from
      // the rank we are waiting for, so park almost at once.
      spin_polls_(oversubscribed ? 32 : 4000) {}

threads_transport::~threads_transport() = default;

int threads_transport::tag_ub() const { return INT_MAX; }

envelope* threads_transport::alloc_envelope() {
  if (!free_) free_ = box_.returned.exchange(nullptr, std::memory_order_acquire);
  envelope* e = free_;
  if (e) {
    free_ = e->next;
  } else {
    e = new envelope;
    fabric_->allocated(me_).push_back(e);
  }
  e->heap = nullptr;
  return e;
}

void threads_transport::give_back(envelope* e) noexcept {
  // Envelopes return to the pool of the rank that allocated them (always the sender), so a
  // one-way stream does not make the receiver's pool grow without bound.
  std::atomic<envelope*>& head = fabric_->box(e->src).returned;
  e->next = head.load(std::memory_order_relaxed);
  while (!head.compare_exchange_weak(e->next, e, std::memory_order_release,
                                     std::memory_order_relaxed)) {
  }
}

void threads_transport::push(int dest, envelope* e) noexcept {
  mailbox& box = fabric_->box(dest);
  e->next = box.inbox.load(std::memory_order_relaxed);
  while (!box.inbox.compare_exchange_weak(e->next, e, std::memory_order_seq_cst,
                                          std::memory_order_relaxed)) {
  }
  box.park.wake();
}

request_state* threads_transport::isend(rank_context& ctx, const char* call, const void* data,
                                        std::size_t bytes, int dest, int tag, msg_context c) {
  envelope* e = alloc_envelope();
  e->src = me_;
  e->tag = tag;
  e->ctx = c;
  e->size = bytes;
  if (bytes <= threads_eager_limit) {
    if (bytes) std::memcpy(e->payload, data, bytes);
    e->data = e->payload;
    e->send_req = nullptr;
    push(dest, e);
    return nullptr;
  }
  request_state* s = ctx.acquire(request_state::kind::send, call, dest, tag, c,
                                 const_cast<void*>(data), bytes);
  s->st = status{dest, tag, bytes};
  s->engine_ptr = e;
  e->data = static_cast<const std::byte*>(data);
  e->send_req = s;
  e->handoff.store(0, std::memory_order_relaxed);
  push(dest, e);
  return s;
}

void threads_transport::send(rank_context& ctx, const char* call, const void* data,
                             std::size_t bytes, int dest, int tag, msg_context c) {
  if (request_state* s = isend(ctx, call, data, bytes, dest, tag, c)) ctx.wait(s);
}

void threads_transport::irecv(rank_context&, request_state* r) {
  drain();
  envelope* prev = nullptr;
  for (envelope* e = unexpected_head_; e; prev = e, e = e->next) {
    if (!matches(r, e)) continue;
    if (prev) prev->next = e->next;
    else unexpected_head_ = e->next;
    if (unexpected_tail_ == e) unexpected_tail_ = prev;
    --unexpected_count_;
    deliver(e, r);
    return;
  }
  r->prev = posted_tail_;
  r->next = nullptr;
  if (posted_tail_) posted_tail_->next = r;
  else posted_head_ = r;
  posted_tail_ = r;
}

bool threads_transport::drain() {
  if (!box_.inbox.load(std::memory_order_relaxed)) return false;
  envelope* chain = box_.inbox.exchange(nullptr, std::memory_order_acquire);
  // The inbox is a stack: reverse it into arrival order.
  envelope* fifo = nullptr;
  while (chain) {
    envelope* n = chain->next;
    chain->next = fifo;
    fifo = chain;
    chain = n;
  }
  while (fifo) {
    envelope* e = fifo;
    fifo = fifo->next;
    request_state* r = posted_head_;
    while (r && !matches(r, e)) r = r->next;
    if (r) {
      if (r->prev) r->prev->next = r->next;
      else posted_head_ = r->next;
      if (r->next) r->next->prev = r->prev;
      else posted_tail_ = r->prev;
      deliver(e, r);
    } else {
      e->next = nullptr;
      if (unexpected_tail_) unexpected_tail_->next = e;
      else unexpected_head_ = e;
      unexpected_tail_ = e;
      ++unexpected_count_;
    }
  }
  ctx_.note_progress();
  return true;
}

void threads_transport::deliver(envelope* e, request_state* r) noexcept {
  const bool fits = e->size <= r->capacity;
  if (!e->send_req) {
    if (fits && e->size) std::memcpy(r->buf, e->data, e->size);
  } else {
    int expected = 0;
    if (e->handoff.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      if (fits) std::memcpy(r->buf, e->data, e->size);
      const int owner = e->src;
      e->send_req->done.store(1, std::memory_order_seq_cst);  // the sender may reuse it now
      fabric_->box(owner).park.wake();
    } else {  // the sender unwound and left a copy
      if (fits) std::memcpy(r->buf, e->heap, e->size);
      delete[] e->heap;
      e->heap = nullptr;
    }
  }
  if (!fits) {
    r->failed = true;
    r->incoming = e->size;
  }
  r->st = status{e->src, e->tag, e->size};
  r->done.store(1, std::memory_order_release);
  give_back(e);
  ctx_.note_progress();
}

bool threads_transport::iprobe(int source, int tag, msg_context c, status* st) {
  drain();
  for (envelope* e = unexpected_head_; e; e = e->next)
    if (matches(source, tag, c, e)) {
      *st = status{e->src, e->tag, e->size};
      return true;
    }
  return false;
}

void threads_transport::park(request_state* s, double max_s) {
  const std::uint32_t ticket = box_.park.prepare();
  if (box_.inbox.load(std::memory_order_seq_cst) ||
      (s && s->done.load(std::memory_order_seq_cst)) ||
      ctx_.run().aborting.load(std::memory_order_seq_cst)) {
    box_.park.cancel();
    return;
  }
  box_.park.sleep(ticket, max_s);
}

void threads_transport::cancel(request_state* s) {
  if (s->done.load(std::memory_order_acquire)) return;
  if (s->k == request_state::kind::recv) {
    if (s->prev) s->prev->next = s->next;
    else if (posted_head_ == s) posted_head_ = s->next;
    if (s->next) s->next->prev = s->prev;
    else if (posted_tail_ == s) posted_tail_ = s->prev;
    return;
  }
  // A long send whose buffer is about to disappear: leave a copy for the receiver.
  envelope* e = static_cast<envelope*>(s->engine_ptr);
  auto* copy = new std::byte[e->size];
  std::memcpy(copy, e->data, e->size);
  e->heap = copy;
  int expected = 0;
  if (e->handoff.compare_exchange_strong(expected, 2, std::memory_order_acq_rel)) return;
  // The receiver is copying right now; it finishes without waiting for anyone.
  while (!s->done.load(std::memory_order_acquire)) {
  }
  delete[] copy;
}

void threads_transport::finish(rank_context& ctx) {
  drain();
  if (!unexpected_count_) return;
  const envelope* e = unexpected_head_;
  std::ostringstream os;
  os << "cairn: rank " << ctx.rank() << ": warning: " << unexpected_count_
     << " message(s) sent to this rank were never received (first: from rank " << e->src
     << ", tag " << e->tag << ", " << e->size << " bytes, context " << to_string(e->ctx)
     << ")\n";
  std::fputs(os.str().c_str(), stderr);
}

void threads_transport::describe(std::ostream& os) const {
  os << "  " << unexpected_count_ << " arrived message(s) not yet received\n";
}

}  // namespace cairn::detail
