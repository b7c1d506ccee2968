#include "transport/mpi_transport.hpp"

#include <sched.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <sstream>
#include <vector>

#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {
static_assert(sizeof(MPI_Request) <= sizeof(request_state::engine_data));

MPI_Request& mpi_req(request_state* s) noexcept {
  return *reinterpret_cast<MPI_Request*>(s->engine_data);
}

[[noreturn]] void mpi_fail(const char* call, int rank, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail(call, rank, "MPI error: ", std::string(text, static_cast<std::size_t>(len)));
}

int checked_int_bytes(const char* call, int rank, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    fail(call, rank, "message of ", bytes,
         " bytes exceeds the MPI engine's limit of 2147483647 bytes per message");
  return static_cast<int>(bytes);
}


bool cairn_initialized_mpi = false;
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

void mpi_ensure_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  // One thread per process makes MPI calls (the rank's own thread).
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  cairn_initialized_mpi = true;
  std::atexit(finalize_at_exit);
}

void mpi_world_layout(int& rank, int& size, std::vector<int>& node_of, int& node_count,
                      int& local_size) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size);
  // The node's leader is its lowest world rank; nodes are numbered in order of their leaders.
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<std::size_t>(size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> node_of_leader(static_cast<std::size_t>(size), -1);
  node_count = 0;
  for (int r = 0; r < size; ++r)
    if (leaders[static_cast<std::size_t>(r)] == r) node_of_leader[static_cast<std::size_t>(r)] = node_count++;
  node_of.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    node_of[static_cast<std::size_t>(r)] =
        node_of_leader[static_cast<std::size_t>(leaders[static_cast<std::size_t>(r)])];
}

mpi_transport::mpi_transport(rank_context& ctx, bool oversubscribed)
    : ctx_(ctx), oversubscribed_(oversubscribed) {
  for (auto& c : comms_) {
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  }
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) tag_ub_ = *ub;
}

mpi_transport::~mpi_transport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& c : comms_) MPI_Comm_free(&c);
}

request_state* mpi_transport::isend(rank_context& ctx, const char* call, const void* data,
                                    std::size_t bytes, int dest, int tag, msg_context c) {
  const int n = checked_int_bytes(call, ctx.rank(), bytes);
  request_state* s =
      ctx.acquire(request_state::kind::send, call, dest, tag, c, const_cast<void*>(data), bytes);
  s->st = status{dest, tag, bytes};
  const int rc = MPI_Isend(data, n, MPI_BYTE, dest, tag, comm(c), &mpi_req(s));
  if (rc != MPI_SUCCESS) {
    ctx.release(s);
    mpi_fail(call, ctx.rank(), rc);
  }
  return s;
}

void mpi_transport::send(rank_context& ctx, const char* call, const void* data,
                         std::size_t bytes, int dest, int tag, msg_context c) {
  // Short messages go eagerly, so a blocking MPI_Send returns at once and saves a request;
  // longer ones are waited for in cairn's loop, which keeps the watchdog and abort working.
  if (bytes <= 1024) {
    const int rc = MPI_Send(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm(c));
    if (rc != MPI_SUCCESS) mpi_fail(call, ctx.rank(), rc);
    return;
  }
  ctx.wait(isend(ctx, call, data, bytes, dest, tag, c));
}

namespace {
inline bool matches(const request_state* r, int source, int tag) noexcept {
  return (r->peer == any_source || r->peer == source) && (r->tag == any_tag || r->tag == tag);
}
// A receive posted but not yet matched has no MPI request.
inline bool matched(request_state* r) noexcept { return mpi_req(r) != MPI_REQUEST_NULL; }
}  // namespace

void mpi_transport::unlink_posted(request_state* r) noexcept {
  --posted_count_[static_cast<std::size_t>(r->ctx)];
  if (r->prev) r->prev->next = r->next;
  else posted_head_ = r->next;
  if (r->next) r->next->prev = r->prev;
  else posted_tail_ = r->prev;
  r->prev = r->next = nullptr;
}

void mpi_transport::start(request_state* r, const arrived& m) {
  MPI_Message msg = m.msg;
  r->st = status{m.source, m.tag, m.bytes};
  if (m.bytes > r->capacity) {
    // Consume the message (as the threads engine does) without touching the user's buffer.
    std::vector<unsigned char> sink(m.bytes);
    MPI_Mrecv(sink.data(), static_cast<int>(m.bytes), MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    r->failed = true;
    r->incoming = m.bytes;
    r->done.store(1, std::memory_order_relaxed);
    return;
  }
  const int rc = MPI_Imrecv(r->buf, static_cast<int>(m.bytes), MPI_BYTE, &msg, &mpi_req(r));
  if (rc != MPI_SUCCESS) mpi_fail(r->call, ctx_.rank(), rc);
}

bool mpi_transport::pull(msg_context c) {
  bool any = false;
  for (;;) {
    int flag = 0;
    arrived m{};
    MPI_Status st;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm(c), &flag, &m.msg, &st);
    if (!flag) break;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    m.source = st.MPI_SOURCE;
    m.tag = st.MPI_TAG;
    m.bytes = static_cast<std::size_t>(count);
    m.ctx = c;
    any = true;
    request_state* r = posted_head_;
    while (r && !(r->ctx == c && matches(r, m.source, m.tag))) r = r->next;
    if (r) {
      unlink_posted(r);
      start(r, m);
    } else {
      unexpected_.push_back(m);
    }
  }
  if (any) ctx_.note_progress();
  return any;
}

void mpi_transport::pull_posted() {
  for (int c = 0; c < msg_context_count; ++c)
    if (posted_count_[static_cast<std::size_t>(c)]) pull(static_cast<msg_context>(c));
}

void mpi_transport::irecv(rank_context& ctx, request_state* s) {
  checked_int_bytes(s->call, ctx.rank(), s->capacity);
  mpi_req(s) = MPI_REQUEST_NULL;
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it)
    if (it->ctx == s->ctx && matches(s, it->source, it->tag)) {
      const arrived m = *it;
      unexpected_.erase(it);
      start(s, m);
      return;
    }
  s->prev = posted_tail_;
  s->next = nullptr;
  if (posted_tail_) posted_tail_->next = s;
  else posted_head_ = s;
  posted_tail_ = s;
  ++posted_count_[static_cast<std::size_t>(s->ctx)];
  pull(s->ctx);
}

bool mpi_transport::poll() {
  bool any = false;
  for (int c = 0; c < msg_context_count; ++c) any = pull(static_cast<msg_context>(c)) || any;
  return any;
}

bool mpi_transport::test(request_state* s) {
  if (s->done.load(std::memory_order_relaxed)) return true;
  // Whatever is waited for, posted receives must get matched: a peer's long send (and so
  // possibly this very operation) may depend on it.
  if (posted_head_) pull_posted();
  if (s->k == request_state::kind::recv && !matched(s)) {
    if (s->done.load(std::memory_order_relaxed)) return true;
    if (!matched(s)) return false;
  }
  int flag = 0;
  const int rc = MPI_Test(&mpi_req(s), &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) mpi_fail(s->call, ctx_.rank(), rc);
  if (!flag) return false;
  s->done.store(1, std::memory_order_relaxed);
  ctx_.note_progress();
  return true;
}

bool mpi_transport::iprobe(int source, int tag, msg_context c, status* out) {
  auto find = [&](std::size_t from) -> bool {
    for (std::size_t i = from; i < unexpected_.size(); ++i) {
      const arrived& m = unexpected_[i];
      if (m.ctx == c && (source == any_source || source == m.source) &&
          (tag == any_tag || tag == m.tag)) {
        *out = status{m.source, m.tag, m.bytes};
        return true;
      }
    }
    return false;
  };
  if (find(0)) return true;
  const std::size_t before = unexpected_.size();
  pull(c);
  return find(before);
}

void mpi_transport::park(request_state*, double) {
  // MPI can only progress when called; with more ranks than cores, yield the core instead.
  if (oversubscribed_) sched_yield();
}

void mpi_transport::cancel(request_state* s) {
  if (s->done.load(std::memory_order_relaxed)) return;
  if (s->k == request_state::kind::recv) {
    if (!matched(s)) {
      unlink_posted(s);
      return;
    }
    // Matched: the sender is committed, so this completes; the buffer is still alive.
    MPI_Wait(&mpi_req(s), MPI_STATUS_IGNORE);
    return;
  }
  // MPI cannot withdraw a send; let it finish on its own (see the note in request.hpp).
  MPI_Request_free(&mpi_req(s));
}

void mpi_transport::finish(rank_context& ctx) {
  // Every rank reached the end: whatever is still unmatched was never received.
  MPI_Barrier(comms_[0]);
  poll();
  if (unexpected_.empty()) return;
  const arrived& m = unexpected_.front();
  std::ostringstream os;
  os << "cairn: rank " << ctx.rank() << ": warning: " << unexpected_.size()
     << " message(s) sent to this rank were never received (first: from rank " << m.source
     << ", tag " << m.tag << ", " << m.bytes << " bytes, context " << to_string(m.ctx) << ")\n";
  std::fputs(os.str().c_str(), stderr);
  for (arrived& a : unexpected_) {  // drain them so that MPI_Comm_free does not wait
    std::vector<unsigned char> sink(a.bytes);
    MPI_Mrecv(sink.data(), static_cast<int>(a.bytes), MPI_BYTE, &a.msg, MPI_STATUS_IGNORE);
  }
  unexpected_.clear();
}

void mpi_transport::describe(std::ostream& os) const {
  os << "  " << unexpected_.size() << " arrived message(s) not yet received\n";
}

}  // namespace cairn::detail
