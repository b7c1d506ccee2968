#include "transport/threads_transport.hpp"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <new>
#include <ostream>
#include <sstream>

#include "cairn/runtime/error.hpp"
#include "node/copy_bytes.hpp"

namespace cairn::detail {

namespace {
inline bool matches(const request_state* r, int src, int tag, std::uint64_t space,
                    msg_context c) noexcept {
  return r->ctx == c && (r->peer == any_source || r->peer == src) &&
         (r->tag == any_tag || r->tag == tag) && r->space == space;
}
inline bool matches(int source, int tag, std::uint64_t space, msg_context c,
                    const envelope* e) noexcept {
  return c == e->ctx && (source == any_source || source == e->src) &&
         (tag == any_tag || tag == e->tag) && space == e->space;
}
constexpr std::size_t offsetof_payload = 32;  // header bytes before a record's payload
// Payload of the record starting at ring index `idx` (runs on into the following cells).
inline std::byte* record_payload(lane& l, std::uint64_t idx) noexcept {
  return reinterpret_cast<std::byte*>(l.ring.get()) + idx * sizeof(cell) + offsetof_payload;
}
}  // namespace

envelope* new_envelope(int cls) {
  const std::size_t cap = envelope_capacities[cls];
  void* mem = ::operator new (sizeof(envelope) + cap, std::align_val_t{alignof(envelope)});
  auto* e = new (mem) envelope;
  e->capacity = static_cast<std::uint32_t>(cap);
  return e;
}

void free_envelope(envelope* e) noexcept {
  delete[] e->heap;
  e->~envelope();
  ::operator delete (static_cast<void*>(e), std::align_val_t{alignof(envelope)});
}

lane::lane(int s, std::size_t cells)
    : src(s), ncells(cells), ring(std::make_unique<cell[]>(cells)) {}

threads_fabric::threads_fabric(int ranks, bool one_node)
    : ranks_(ranks),
      one_node_(one_node),
      ended_(std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(ranks))),
      // 32 KiB per lane for up to 32 ranks; smaller rings beyond, so that an all-to-all of
      // many ranks stays within memory (256 ranks all to all: 64 Ki lanes of 4 KiB).
      lane_cells_(ranks <= 32    ? 512
                  : ranks <= 128 ? 128
                                 : 64),
      // A record may take at most a quarter of its ring (at most 16 cells = 992 bytes).
      ring_payload_limit_(std::min<std::size_t>(992, (lane_cells_ / 4 - 1) * sizeof(cell) + 32)),
      boxes_(std::make_unique<mailbox[]>(static_cast<std::size_t>(ranks))),
      envelopes_(static_cast<std::size_t>(ranks)),
      lanes_(static_cast<std::size_t>(ranks)),
      region_memory_(static_cast<std::byte*>(::operator new[](
          static_cast<std::size_t>(ranks) * node_regions::region_bytes(), std::align_val_t{128}))) {
  std::vector<std::byte*> bases;
  for (int r = 0; r < ranks; ++r) {
    bases.push_back(region_memory_.get() +
                    static_cast<std::size_t>(r) * node_regions::region_bytes());
    node_regions::format(bases.back());
  }
  regions_ = node_regions(std::move(bases));
}

threads_fabric::~threads_fabric() {
  for (auto& list : envelopes_)
    for (envelope* e : list) free_envelope(e);
  for (auto& list : lanes_)
    for (lane* l : list) delete l;
}

void threads_fabric::help_peer(int r) const noexcept {
  peers_[static_cast<std::size_t>(r)]->help();
}

void threads_fabric::mark_ended(int r) noexcept {
  ended_[static_cast<std::size_t>(r)].store(true, std::memory_order_seq_cst);
  ended_count_.fetch_add(1, std::memory_order_seq_cst);
  wake_all();
}

void threads_fabric::wake_all() noexcept {
  for (int r = 0; r < ranks_; ++r) box(r).park.wake_always();
}

threads_transport::threads_transport(std::shared_ptr<threads_fabric> fabric, transport_rank& ctx,
                                     bool oversubscribed)
    : fabric_(std::move(fabric)),
      ctx_(ctx),
      me_(ctx.rank()),
      box_(fabric_->box(me_)),
      // With a core per rank, spinning a few tens of microseconds catches replies without a
      // sleep/wake round trip; with more ranks than cores, spinning only steals the core from
      // the rank we are waiting for, so park almost at once.
      spin_polls_(oversubscribed ? 32 : 4000),
      oversubscribed_(oversubscribed),
      out_(static_cast<std::size_t>(fabric_->ranks()), nullptr),
      in_index_(static_cast<std::size_t>(fabric_->ranks()), -1),
      unexpected_(static_cast<std::size_t>(fabric_->ranks()) * msg_context_count) {
  in_.reserve(static_cast<std::size_t>(fabric_->ranks()));  // never reallocates while in use
}

threads_transport::~threads_transport() = default;

int threads_transport::tag_ub() const { return INT_MAX; }

envelope* threads_transport::alloc_envelope(std::size_t bytes) {
  const int cls = envelope_class(bytes);
  if (!free_[cls]) {  // take back what receivers returned, each to its class
    envelope* back = box_.returned.exchange(nullptr, std::memory_order_acquire);
    while (back) {
      envelope* n = back->next;
      const int k = envelope_class(back->capacity);
      back->next = free_[k];
      free_[k] = back;
      back = n;
    }
  }
  envelope* e = free_[cls];
  if (e) {
    free_[cls] = e->next;
  } else {
    e = new_envelope(cls);
    fabric_->envelopes(me_).push_back(e);
  }
  e->k = envelope::kind::message;
  e->owner = me_;
  e->heap = nullptr;
  e->send_req = nullptr;
  e->announced = nullptr;
  return e;
}

void threads_transport::give_back(envelope* e) noexcept {
  if (e->owner == me_) {
    envelope*& head = free_[envelope_class(e->capacity)];
    e->next = head;
    head = e;
    return;
  }
  // Back to the pool of the rank that allocated it, so a one-way stream does not make the
  // receiver's pool grow without bound.
  std::atomic<envelope*>& head = fabric_->box(e->owner).returned;
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

lane* threads_transport::out_lane(int dest) {
  lane*& l = out_[static_cast<std::size_t>(dest)];
  if (!l) {
    l = new lane(me_, fabric_->lane_cells());
    fabric_->lanes(me_).push_back(l);
    envelope* e = alloc_envelope(0);
    e->k = envelope::kind::new_lane;
    e->src = me_;
    e->announced = l;
    push(dest, e);  // before any message of the lane: the inbox keeps a sender's order
  }
  return l;
}

bool threads_transport::ring_put(lane& l, std::uint64_t seq, int tag, std::uint64_t space,
                                 std::uint32_t check_word, msg_context c, const void* data,
                                 std::size_t bytes) noexcept {
  const std::uint64_t need = record_cells(bytes);
  std::uint64_t pos = l.tail;
  std::uint64_t idx = pos & (l.ncells - 1);
  const std::uint64_t pad = idx + need > l.ncells ? l.ncells - idx : 0;  // records never wrap
  if (pos + pad + need - l.head_seen > l.ncells) {
    l.head_seen = l.head.load(std::memory_order_acquire);
    if (pos + pad + need - l.head_seen > l.ncells) return false;
  }
  if (pad) {
    cell& k = l.ring[idx];  // it runs to the ring's end
    k.skip = 1;
    k.stamp.store(pos + 1, std::memory_order_release);
    pos += pad;
    idx = 0;
  }
  cell& k = l.ring[idx];
  k.seq = static_cast<std::uint32_t>(seq);
  k.size = static_cast<std::uint16_t>(bytes);
  k.space = space;
  k.tag = tag;
  k.check_word = check_word;
  k.ctx = static_cast<std::uint8_t>(c);
  k.skip = 0;
  if (bytes) copy_bytes(record_payload(l, idx), data, bytes);
  // seq_cst: pairs with the receiver's announcement that it parks (see parker).
  k.stamp.store(pos + 1, std::memory_order_seq_cst);
  l.tail = pos + need;
  return true;
}

request_state* threads_transport::isend(transport_rank& ctx, const char* call, const void* data,
                                        std::size_t bytes, int dest, int tag, std::uint64_t space,
                                        std::uint32_t check_word, msg_context c) {
  lane* l = out_lane(dest);
  const std::uint64_t seq = l->next_seq++;
  if (bytes <= fabric_->ring_payload_limit() &&
      ring_put(*l, seq, tag, space, check_word, c, data, bytes)) {
    fabric_->box(dest).park.wake();
    fabric_->help(dest);
    return nullptr;
  }
  envelope* e = alloc_envelope(bytes <= threads_eager_limit ? bytes : 0);
  e->src = me_;
  e->tag = tag;
  e->space = space;
  e->check_word = check_word;
  e->ctx = c;
  e->size = bytes;
  e->seq = seq;
  if (bytes <= threads_eager_limit) {
    if (bytes) copy_bytes(e->payload(), data, bytes);
    e->data = e->payload();
    push(dest, e);
    fabric_->help(dest);
    return nullptr;
  }
  request_state* s =
      ctx.acquire(request_state::kind::send, call, dest, tag, c, const_cast<void*>(data), bytes);
  s->st = status{dest, tag, bytes};
  s->engine_ptr = e;
  e->data = static_cast<const std::byte*>(data);
  e->send_req = s;
  e->handoff.store(0, std::memory_order_relaxed);
  push(dest, e);
  fabric_->help(dest);  // the receiver copies from `data` as it matches
  return s;
}

request_state* threads_transport::send(transport_rank& ctx, const char* call, const void* data,
                                       std::size_t bytes, int dest, int tag, std::uint64_t space,
                                       std::uint32_t check_word, msg_context c) {
  return isend(ctx, call, data, bytes, dest, tag, space, check_word, c);
}

void threads_transport::irecv(transport_rank&, request_state* r) {
  poll();
  if (const unexpected_match m = find_unexpected(r->peer, r->tag, r->space, r->ctx); m.e) {
    take_unexpected(m);
    deliver(m.e, r);
    return;
  }
  r->prev = posted_tail_;
  r->next = nullptr;
  if (posted_tail_)
    posted_tail_->next = r;
  else
    posted_head_ = r;
  posted_tail_ = r;
}

bool threads_transport::drain_inbox() {
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
    if (e->k == envelope::kind::new_lane) {
      in_index_[static_cast<std::size_t>(e->src)] = static_cast<int>(in_.size());
      in_.push_back(in_lane{e->announced, 0, 0, nullptr, nullptr});
      give_back(e);
      continue;
    }
    in_lane& in = in_[static_cast<std::size_t>(in_index_[static_cast<std::size_t>(e->src)])];
    e->next = nullptr;
    if (in.held_tail)
      in.held_tail->next = e;
    else
      in.held_head = e;
    in.held_tail = e;
  }
  return true;
}

request_state* threads_transport::match_posted(int src, int tag, std::uint64_t space,
                                               msg_context c) noexcept {
  request_state* r = posted_head_;
  while (r && !matches(r, src, tag, space, c)) r = r->next;
  if (!r) return nullptr;
  if (r->prev)
    r->prev->next = r->next;
  else
    posted_head_ = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else
    posted_tail_ = r->prev;
  return r;
}

bool threads_transport::advance(in_lane& in) {
  lane& l = *in.l;
  const std::uint64_t mask = l.ncells - 1;
  const std::uint64_t start = in.head;
  bool delivered = false, looked_for_gap = false;
  for (;;) {
    const std::uint64_t idx = in.head & mask;
    cell& k = l.ring[idx];
    const bool ready = k.stamp.load(std::memory_order_acquire) == in.head + 1;
    if (ready && k.skip) {
      in.head += l.ncells - idx;
      continue;
    }
    if (ready && k.seq == static_cast<std::uint32_t>(in.expect)) {
      const auto c = static_cast<msg_context>(k.ctx);
      const std::byte* payload = record_payload(l, idx);
      if (request_state* r = match_posted(l.src, k.tag, k.space, c)) {
        if (k.size > r->capacity) {
          r->failed = true;
          r->incoming = k.size;
        } else if (k.size) {
          copy_bytes(r->buf, payload, k.size);
        }
        r->st = status{l.src, k.tag, k.size};
        r->check_word = k.check_word;
        r->done.store(1, std::memory_order_release);
      } else {
        envelope* e = alloc_envelope(k.size);
        e->src = l.src;
        e->tag = k.tag;
        e->space = k.space;
        e->check_word = k.check_word;
        e->ctx = c;
        e->size = k.size;
        if (k.size) copy_bytes(e->payload(), payload, k.size);
        e->data = e->payload();
        keep_unexpected(e);
      }
      // Continuation cells held payload bytes where a later record's stamp may go: clear them
      // so that stale bytes can never look like a published record.
      const std::uint64_t cells = record_cells(k.size);
      for (std::uint64_t j = 1; j < cells; ++j)
        l.ring[idx + j].stamp.store(0, std::memory_order_relaxed);
      in.head += cells;
      ++in.expect;
      delivered = true;
      continue;
    }
    if (in.held_head && in.held_head->seq == in.expect) {
      envelope* e = in.held_head;
      in.held_head = e->next;
      if (!in.held_head) in.held_tail = nullptr;
      ++in.expect;
      deliver_envelope(e);
      delivered = true;
      continue;
    }
    if (ready && !looked_for_gap) {
      // The ring is ahead: the message in between went through the inbox (it was published
      // before this record, so it is there now).
      looked_for_gap = true;
      drain_inbox();
      continue;
    }
    break;
  }
  if (in.head != start) l.head.store(in.head, std::memory_order_release);
  return delivered;
}

bool threads_transport::poll() {
  bool any = drain_inbox();
  for (std::size_t i = 0; i < in_.size(); ++i) any = advance(in_[i]) || any;
  if (any) ctx_.note_progress();
  return any;
}

bool threads_transport::ring_ready() const noexcept {
  for (const in_lane& in : in_) {
    if (in.held_head && in.held_head->seq == in.expect) return true;
    if (in.l->ring[in.head & (in.l->ncells - 1)].stamp.load(std::memory_order_seq_cst) ==
        in.head + 1)
      return true;
  }
  return false;
}

void threads_transport::keep_unexpected(envelope* e) noexcept {
  envelope_queue& q = unexpected_[queue_of(e->src, e->ctx)];
  e->next = nullptr;
  e->arrival = ++arrivals_;
  if (q.tail)
    q.tail->next = e;
  else
    q.head = e;
  q.tail = e;
  ++unexpected_count_;
  ++unexpected_tags_[tag_key(e->ctx, e->tag)];
}

threads_transport::unexpected_match threads_transport::find_unexpected(
    int source, int tag, std::uint64_t space, msg_context c) const noexcept {
  unexpected_match best;
  if (!unexpected_count_) return best;
  if (tag != any_tag && !unexpected_tags_.contains(tag_key(c, tag))) return best;
  const auto scan = [&](const envelope_queue& q) {
    envelope* prev = nullptr;
    for (envelope* e = q.head; e; prev = e, e = e->next)
      if (matches(source, tag, space, c, e)) {
        if (!best.e || e->arrival < best.e->arrival) best = {e, prev};
        return;
      }
  };
  if (source != any_source) {
    scan(unexpected_[queue_of(source, c)]);
  } else {
    for (std::size_t q = queue_of(0, c); q < unexpected_.size(); q += msg_context_count)
      scan(unexpected_[q]);
  }
  return best;
}

void threads_transport::take_unexpected(const unexpected_match& m) noexcept {
  envelope_queue& q = unexpected_[queue_of(m.e->src, m.e->ctx)];
  if (m.prev)
    m.prev->next = m.e->next;
  else
    q.head = m.e->next;
  if (q.tail == m.e) q.tail = m.prev;
  --unexpected_count_;
  const auto t = unexpected_tags_.find(tag_key(m.e->ctx, m.e->tag));
  if (--t->second == 0) unexpected_tags_.erase(t);
}

void threads_transport::deliver_envelope(envelope* e) {
  if (request_state* r = match_posted(e->src, e->tag, e->space, e->ctx))
    deliver(e, r);
  else
    keep_unexpected(e);
}

void threads_transport::deliver(envelope* e, request_state* r) noexcept {
  const bool fits = e->size <= r->capacity;
  if (!e->send_req) {
    if (fits && e->size) copy_bytes(r->buf, e->data, e->size);
  } else {
    int expected = 0;
    if (e->handoff.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      if (fits) copy_bytes(r->buf, e->data, e->size);
      const int owner = e->src;
      e->send_req->done.store(1, std::memory_order_seq_cst);  // the sender may reuse it now
      fabric_->box(owner).park.wake();
      fabric_->help(owner);  // its collective's next round may now go
    } else {                 // the sender unwound and left a copy
      if (fits) copy_bytes(r->buf, e->heap, e->size);
      delete[] e->heap;
      e->heap = nullptr;
    }
  }
  if (!fits) {
    r->failed = true;
    r->incoming = e->size;
  }
  r->st = status{e->src, e->tag, e->size};
  r->check_word = e->check_word;
  r->done.store(1, std::memory_order_release);
  give_back(e);
  ctx_.note_progress();
}

bool threads_transport::iprobe(int source, int tag, msg_context c, status* st) {
  poll();
  return iprobe_polled(source, tag, c, st);
}

bool threads_transport::iprobe_polled(int source, int tag, msg_context c, status* st) {
  const envelope* e = find_unexpected(source, tag, 0, c).e;
  if (e) *st = status{e->src, e->tag, e->size};
  return e != nullptr;
}

void threads_transport::park(request_state* s, double max_s, std::uint64_t round) {
  if (oversubscribed_ && round < yield_rounds) {
    // More ranks than cores: the rank we wait for probably needs this core. Yielding hands it
    // over at once; a futex sleep would add a wake-up (tens of microseconds) per message.
    sched_yield();
    return;
  }
  const std::uint32_t ticket = box_.park.prepare();
  if (box_.inbox.load(std::memory_order_seq_cst) || ring_ready() ||
      (s && s->done.load(std::memory_order_seq_cst)) || ctx_.ready_above() || ctx_.aborting()) {
    box_.park.cancel();
    return;
  }
  box_.park.sleep(ticket, max_s);
}

void threads_transport::cancel(request_state* s) {
  if (s->done.load(std::memory_order_acquire)) return;
  if (keyed(s->ctx)) fabric_->mark_withdrawn();
  if (s->k == request_state::kind::recv) {
    if (s->prev)
      s->prev->next = s->next;
    else if (posted_head_ == s)
      posted_head_ = s->next;
    if (s->next)
      s->next->prev = s->prev;
    else if (posted_tail_ == s)
      posted_tail_ = s->prev;
    return;
  }
  // A long send whose buffer is about to disappear: leave a copy for the receiver.
  envelope* e = static_cast<envelope*>(s->engine_ptr);
  auto* copy = new std::byte[e->size];
  copy_bytes(copy, e->data, e->size);
  e->heap = copy;
  int expected = 0;
  if (e->handoff.compare_exchange_strong(expected, 2, std::memory_order_acq_rel)) return;
  // The receiver is copying right now; it finishes without waiting for anyone. It never looks
  // at the copy: take it back, or whoever frees the envelope would free it a second time.
  while (!s->done.load(std::memory_order_acquire)) {
  }
  e->heap = nullptr;
  delete[] copy;
}

std::string threads_transport::finish(transport_rank& ctx) {
  poll();
  if (!unexpected_count_) return {};
  const envelope* first = nullptr;  // the earliest arrived, and the earliest keyed one
  const envelope* first_keyed = nullptr;
  for (const envelope_queue& q : unexpected_) {
    const envelope* e = q.head;
    if (!e) continue;
    if (!first || e->arrival < first->arrival) first = e;
    if (keyed(e->ctx) && (!first_keyed || e->arrival < first_keyed->arrival)) first_keyed = e;
  }
  auto seen = [](const envelope* e) { return unreceived_message{e->src, e->tag, e->size, e->ctx}; };
  return report_unreceived(ctx.rank(), unexpected_count_, seen(first),
                           first_keyed ? std::optional(seen(first_keyed)) : std::nullopt,
                           fabric_->withdrawn());
}

void threads_transport::describe(std::ostream& os) const {
  os << "  " << unexpected_count_ << " arrived message(s) not yet received, " << in_.size()
     << " incoming lane(s)\n";
}

}  // namespace cairn::detail
