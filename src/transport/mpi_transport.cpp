#include "transport/mpi_transport.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/runtime/error.hpp"
#include "node/copy_bytes.hpp"
#include "node/cross_memory.hpp"

namespace cairn::detail {

namespace {
static_assert(2 * sizeof(MPI_Request) <= sizeof(request_state::engine_data));

// A send's one or two MPI requests (direct message; header and payload), or the payload
// request of a long receive.
MPI_Request* mpi_reqs(request_state* s) noexcept {
  return reinterpret_cast<MPI_Request*>(s->engine_data);
}

[[noreturn]] void mpi_fail(const char* call, int rank, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail(call, rank, "MPI error: ", std::string(text, static_cast<std::size_t>(len)));
}

// A count MPI takes: callers pass at most chunk_bytes.
int int_count(std::size_t bytes) noexcept {
  assert(bytes <= mpi_transport::chunk_bytes);
  return static_cast<int>(bytes);
}

bool cairn_initialized_mpi = false;
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// The world rank whose function runs in this process (mpi_note_run), -1 outside, and how many
// runs are under way (a launch inside an open mpi_session: the session's rank stays noted).
std::atomic<int> running_rank{-1};
std::atomic<int> running_runs{0};

// exit() from inside a rank's function (or an open mpi_session): the other processes may wait for
// this one, and MPI_Finalize (at exit) would wait for them; the job ends here with the exit status.
void abort_on_exit(int status, void*) {
  const int rank = running_rank.load();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (rank < 0 || !initialized || finalized) return;
  const std::string text =
      "cairn: rank " + std::to_string(rank) + " called exit(" + std::to_string(status) +
      ") while running cairn (a launch function or an open mpi_session): ending the MPI job\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
}
}  // namespace

void mpi_note_run(int rank) {
  static const bool registered = [] { return on_exit(abort_on_exit, nullptr) == 0; }();
  (void)registered;
  if (rank >= 0) {
    running_runs.fetch_add(1);
    running_rank.store(rank);
  } else if (running_runs.fetch_sub(1) == 1) {
    running_rank.store(-1);
  }
}

namespace {
constexpr int mpi_levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                              MPI_THREAD_MULTIPLE};
constexpr const char* level_names[] = {"single", "funneled", "serialized", "multiple"};

// cairn's index (0 single .. 3 multiple) of an MPI thread level.
int level_index(int mpi_level) {
  int i = 0;
  while (i < 3 && mpi_levels[i + 1] <= mpi_level) ++i;
  return i;
}
}  // namespace

std::string mpi_ensure_initialized(int level, bool progress_thread) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    // Ask for no more than the run needs: above single, Open MPI 4.1 takes a lock per call
    // (0.10 -> 0.15 us one way for 8 bytes).
    MPI_Init_thread(nullptr, nullptr, mpi_levels[level], &provided);
    cairn_initialized_mpi = true;
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  const int got = level_index(provided);
  if (progress_thread && got < 3)
    return std::string(
               "the progress thread (progress mode 'thread') needs MPI_THREAD_MULTIPLE; this MPI "
               "provides thread level ") +
           level_names[got] + (initialized ? " (MPI was initialized before cairn::launch)" : "");
  if (!initialized && got < level)
    return std::string("asked MPI for thread level ") + level_names[level] +
           " (--cairn-mpi-thread-level, CAIRN_MPI_THREAD_LEVEL or "
           "launch_options::mpi_thread_level); it provides " +
           level_names[got];
  return {};
}

bool mpi_active() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int mpi_thread_level_provided() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int provided = 0;
  MPI_Query_thread(&provided);
  return level_index(provided);
}

void mpi_world_layout(MPI_Comm comm, int& rank, int& size, std::vector<int>& node_of,
                      int& node_count, int& local_size) {
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size);
  // The node's leader is its lowest world rank; nodes are numbered in order of their leaders.
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<std::size_t>(size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  std::vector<int> node_of_leader(static_cast<std::size_t>(size), -1);
  node_count = 0;
  for (int r = 0; r < size; ++r)
    if (leaders[static_cast<std::size_t>(r)] == r)
      node_of_leader[static_cast<std::size_t>(r)] = node_count++;
  node_of.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    node_of[static_cast<std::size_t>(r)] =
        node_of_leader[static_cast<std::size_t>(leaders[static_cast<std::size_t>(r)])];
}

mpi_transport::mpi_transport(transport_rank& ctx, bool oversubscribed, MPI_Comm comm, bool one_node)
    : ctx_(ctx),
      oversubscribed_(oversubscribed),
      next_seq_(static_cast<std::size_t>(ctx.size())),
      keyed_head_(static_cast<std::size_t>(ctx.size()), nullptr),
      keyed_tail_(static_cast<std::size_t>(ctx.size()), nullptr),
      ended_(static_cast<std::size_t>(ctx.size()), 0),
      base_(comm) {
  for (std::size_t c = 0; c < small_.size(); ++c) {
    MPI_Comm_dup(base_, &small_[c]);
    MPI_Comm_dup(base_, &large_[c]);
    MPI_Comm_set_errhandler(small_[c], MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(large_[c], MPI_ERRORS_RETURN);
  }
  MPI_Comm_dup(base_, &ends_);
  // Made now, collectively over every process: user_group_comm then needs only the members.
  MPI_Comm_dup(base_, &user_);
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(base_, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) tag_ub_ = *ub;
  int bits = 0;
  while (bits < 30 && (std::int64_t{2} << bits) - 1 <= tag_ub_) ++bits;
  // The same on every process (the environment of one launch).
  if (const char* env = std::getenv("CAIRN_MPI_WIRE_TAG_BITS"))
    bits = std::clamp(std::atoi(env), 1, bits);
  wire_mask_ = (std::uint64_t{1} << bits) - 1;
  if (one_node) make_regions();  // the same choice on every process (one topology)
  probe_cross_memory();
}

void mpi_transport::probe_cross_memory() {
  const int n = ctx_.size();
  const char* env = std::getenv("CAIRN_CMA");
  // The same on every process (the environment of one launch), so no process waits alone.
  if (!node_memory() || n < 2 || (env && std::string_view(env) == "0")) return;
  struct entry {
    long long pid;
    unsigned long long address;
  };
  const entry mine{static_cast<long long>(getpid()),
                   reinterpret_cast<std::uintptr_t>(&probe_word_)};
  probe_word_ = 0xC0FFEE0000000000ull ^ static_cast<unsigned long long>(mine.pid);
  std::vector<entry> all(static_cast<std::size_t>(n));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, base_);
  const entry& next = all[static_cast<std::size_t>((ctx_.rank() + 1) % n)];
  int ok =
      cross_memory_probe(static_cast<int>(next.pid), reinterpret_cast<const void*>(next.address),
                         0xC0FFEE0000000000ull ^ static_cast<unsigned long long>(next.pid));
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, base_);
  if (!ok) return;
  pids_.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    pids_[static_cast<std::size_t>(r)] = static_cast<int>(all[static_cast<std::size_t>(r)].pid);
}

void mpi_transport::make_regions() {
  constexpr std::size_t region_align = 128;
  MPI_Comm node;
  MPI_Comm_split_type(base_, MPI_COMM_TYPE_SHARED, ctx_.rank(), MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  if (node_size == ctx_.size()) {  // the key kept world order: node rank = world rank
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each region near its owner
    void* base = nullptr;
    const int rc =
        MPI_Win_allocate_shared(static_cast<MPI_Aint>(node_regions::region_bytes() + region_align),
                                1, info, node, &base, &region_win_);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) region_win_ = MPI_WIN_NULL;  // same outcome everywhere: no board
  }
  if (region_win_ != MPI_WIN_NULL) {
    std::vector<std::byte*> bases(static_cast<std::size_t>(node_size));
    for (int r = 0; r < node_size; ++r) {
      MPI_Aint size = 0;
      int disp = 0;
      void* b = nullptr;
      MPI_Win_shared_query(region_win_, r, &size, &disp, &b);
      // MPI promises no alignment, the slots need their cache lines: start each region at the
      // next 128-byte boundary (the same offset in every process: shared segments are mapped
      // at page boundaries).
      const auto at = reinterpret_cast<std::uintptr_t>(b);
      const std::size_t pad = (region_align - at % region_align) % region_align;
      bases[static_cast<std::size_t>(r)] = static_cast<std::byte*>(b) + pad;
    }
    node_regions::format(bases[static_cast<std::size_t>(ctx_.rank())]);
    // A passive-target epoch for the whole run: loads and stores (and their atomics) are the
    // only accesses; the barrier orders every region's formatting before any use.
    MPI_Win_lock_all(MPI_MODE_NOCHECK, region_win_);
    MPI_Win_sync(region_win_);
    MPI_Barrier(node);
    regions_ = node_regions(std::move(bases));
  }
  MPI_Comm_free(&node);
}

mpi_transport::~mpi_transport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Every member made each of these, and frees them in the same (the map's) order.
  for (auto& [members, comm] : user_groups_) MPI_Comm_free(&comm);
  MPI_Comm_free(&user_);
  if (region_win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(region_win_);
    MPI_Win_free(&region_win_);
  }
  // Announcements finish() did not wait for (the run failed): MPI completes them alone.
  for (MPI_Request& r : end_sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  // Notices whose receiver never took them: MPI may still read their bytes after the free.
  for (std::unique_ptr<notice_send>& n : notice_sends_) {
    int flag = 0;
    MPI_Test(&n->req, &flag, MPI_STATUS_IGNORE);
    if (!flag) MPI_Request_free(&n.release()->req);
  }
  MPI_Comm_free(&ends_);
  for (std::size_t c = 0; c < small_.size(); ++c) {
    MPI_Comm_free(&small_[c]);
    MPI_Comm_free(&large_[c]);
  }
}

MPI_Comm mpi_transport::user_group_comm(const char* call, const std::vector<int>& members) {
  auto it = user_groups_.find(members);
  if (it != user_groups_.end()) return it->second;
  MPI_Group all = MPI_GROUP_NULL, some = MPI_GROUP_NULL;
  MPI_Comm_group(user_, &all);
  MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &some);
  MPI_Comm comm = MPI_COMM_NULL;
  // Collective over the members only; one thread per process makes them, one at a time, so a
  // fixed tag tells nothing apart that needs telling.
  const int rc = MPI_Comm_create_group(user_, some, 0, &comm);
  MPI_Group_free(&some);
  MPI_Group_free(&all);
  if (rc != MPI_SUCCESS) mpi_fail(call, ctx_.rank(), rc);
  user_groups_.emplace(members, comm);
  return comm;
}

std::byte* mpi_transport::take_buffer() {
  if (free_buffers_.empty()) {
    // Zeroed once: header padding never sends uninitialized memory.
    buffers_.push_back(std::make_unique<std::byte[]>(header_bytes));
    return buffers_.back().get();
  }
  std::byte* b = free_buffers_.back();
  free_buffers_.pop_back();
  return b;
}

void mpi_transport::give_buffer(void* b) noexcept {
  if (b) free_buffers_.push_back(static_cast<std::byte*>(b));
}

std::byte* mpi_transport::make_header(int dest, std::size_t bytes, int tag, std::uint64_t space,
                                      std::uint32_t check_word, std::uint64_t& seq) {
  std::byte* hbuf = take_buffer();
  std::uint64_t& next = next_seq_[static_cast<std::size_t>(dest)];
  seq = next;
  next = (next + 1) % (static_cast<std::uint64_t>(tag_ub_) + 1);
  const header h{bytes, seq, space, tag, check_word};
  std::memcpy(hbuf, &h, sizeof h);
  return hbuf;
}

int mpi_transport::wire_tag(int tag, std::uint64_t space, msg_context c) const noexcept {
  if (!keyed(c)) return tag;
  std::uint64_t h =
      space ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(tag)) * 0x9E3779B97F4A7C15ull);
  h ^= h >> 31;  // splitmix64's finalizer
  h *= 0x94D049BB133111EBull;
  h ^= h >> 29;
  return static_cast<int>(h & wire_mask_);
}

int mpi_transport::post_chunks(bool send, void* data, std::size_t bytes, int peer, int tag,
                               MPI_Comm comm, std::vector<MPI_Request>& reqs) {
  auto* at = static_cast<std::byte*>(data);
  for (std::size_t off = 0; off < bytes; off += chunk_bytes) {
    const int n = int_count(std::min(chunk_bytes, bytes - off));
    reqs.push_back(MPI_REQUEST_NULL);
    const int rc = send ? MPI_Isend(at + off, n, MPI_BYTE, peer, tag, comm, &reqs.back())
                        : MPI_Irecv(at + off, n, MPI_BYTE, peer, tag, comm, &reqs.back());
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

bool mpi_transport::finish_chunked(request_state* s, bool wait) {
  auto* ch = static_cast<chunked*>(s->engine_ptr);
  int flag = 1;
  const int n = static_cast<int>(ch->reqs.size());
  const int rc = wait ? MPI_Waitall(n, ch->reqs.data(), MPI_STATUSES_IGNORE)
                      : MPI_Testall(n, ch->reqs.data(), &flag, MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) mpi_fail(s->call, ctx_.rank(), rc);
  if (!flag) return false;
  give_buffer(ch->header);
  delete[] ch->scratch;
  delete ch;
  s->engine_ptr = nullptr;
  s->done.store(1, std::memory_order_relaxed);
  ctx_.note_progress();
  return true;
}

void mpi_transport::drop_send(request_state* s) noexcept {
  if (s->phase == chunked_phase) {
    auto* ch = static_cast<chunked*>(s->engine_ptr);
    give_buffer(ch->header);
    delete ch;
  } else {
    give_buffer(s->engine_ptr);
  }
  s->engine_ptr = nullptr;
}

request_state* mpi_transport::isend(transport_rank& ctx, const char* call, const void* data,
                                    std::size_t bytes, int dest, int tag, std::uint64_t space,
                                    std::uint32_t check_word, msg_context c) {
  const int wtag = wire_tag(tag, space, c);
  if (keyed(c) && bytes <= direct_limit) {
    // A short message of a collective or an array transfer, its key before it. Every MPI sends
    // it eagerly, so MPI_Send returns once it is copied out and no request is left to test
    // (collectives post a round's receives before its sends and never depend on a short send's
    // completion to progress; array transfers wait for their sends only to reuse buffers).
    std::byte* buf = keyed_send_.get();
    const wire_key k{space, tag, check_word};
    std::memcpy(buf, &k, key_bytes);
    if (bytes) std::memcpy(buf + key_bytes, data, bytes);
    const int rc =
        MPI_Send(buf, static_cast<int>(key_bytes + bytes), MPI_BYTE, dest, wtag, small(c));
    if (rc != MPI_SUCCESS) mpi_fail(call, ctx.rank(), rc);
    return nullptr;
  }
  request_state* s =
      ctx.acquire(request_state::kind::send, call, dest, tag, c, const_cast<void*>(data), bytes);
  s->st = status{dest, tag, bytes};
  MPI_Request* reqs = mpi_reqs(s);
  int rc = MPI_SUCCESS;
  if (!keyed(c) && bytes <= direct_limit) {
    rc = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, small(c), &reqs[0]);
  } else if (bytes <= chunk_bytes) {
    std::uint64_t seq = 0;
    std::byte* hbuf = make_header(dest, bytes, tag, space, check_word, seq);
    s->engine_ptr = hbuf;
    s->phase = 1;  // two requests: header and payload
    rc = MPI_Isend(hbuf, static_cast<int>(header_bytes), MPI_BYTE, dest, wtag, small(c), &reqs[0]);
    if (rc == MPI_SUCCESS)
      rc = MPI_Isend(data, int_count(bytes), MPI_BYTE, dest, static_cast<int>(seq), large(c),
                     &reqs[1]);
  } else {
    std::uint64_t seq = 0;
    auto* ch = new chunked{make_header(dest, bytes, tag, space, check_word, seq), nullptr, {}};
    s->engine_ptr = ch;
    s->phase = chunked_phase;
    ch->reqs.push_back(MPI_REQUEST_NULL);
    rc = MPI_Isend(ch->header, static_cast<int>(header_bytes), MPI_BYTE, dest, wtag, small(c),
                   &ch->reqs[0]);
    if (rc == MPI_SUCCESS)
      rc = post_chunks(true, const_cast<void*>(data), bytes, dest, static_cast<int>(seq), large(c),
                       ch->reqs);
  }
  if (rc != MPI_SUCCESS) {
    drop_send(s);
    ctx.release(s);
    mpi_fail(call, ctx.rank(), rc);
  }
  return s;
}

request_state* mpi_transport::send(transport_rank& ctx, const char* call, const void* data,
                                   std::size_t bytes, int dest, int tag, std::uint64_t space,
                                   std::uint32_t check_word, msg_context c) {
  // Direct messages go eagerly, so a blocking MPI_Send returns at once and saves a request;
  // longer ones are waited for in cairn's loop, which keeps the watchdog and abort working.
  if (!keyed(c) && bytes <= direct_limit) {
    const int rc = MPI_Send(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, small(c));
    if (rc != MPI_SUCCESS) mpi_fail(call, ctx.rank(), rc);
    return nullptr;
  }
  return isend(ctx, call, data, bytes, dest, tag, space, check_word, c);
}

void mpi_transport::irecv(transport_rank& ctx, request_state* s) {
  const bool key = keyed(s->ctx);
  // Keyed receives name their source and tag: slots of one wire tag must be interchangeable.
  assert(!key || (s->peer != any_source && s->tag != any_tag));
  for (auto it = stash_.begin(); it != stash_.end(); ++it)
    if (it->ctx == s->ctx && (s->peer == any_source || s->peer == it->source) &&
        (s->tag == any_tag || s->tag == it->tag) && s->space == it->space) {
      take_stashed(s, *it);
      stash_.erase(it);
      return;
    }
  void* target = s->buf;
  if (key || s->capacity < header_bytes) target = s->engine_ptr = take_buffer();
  const auto slot = static_cast<std::uint32_t>(posted_.size());
  posted_.push_back(s);
  posted_reqs_.push_back(MPI_REQUEST_NULL);
  posted_ticket_.push_back(0);
  if (key) link_keyed(s);
  const int rc = post_slot(slot, s, target,
                           s->tag == any_tag ? MPI_ANY_TAG : wire_tag(s->tag, s->space, s->ctx));
  if (rc != MPI_SUCCESS) {
    const char* call = s->call;
    remove_posted(s);
    if (key) unlink_keyed(s);
    give_buffer(s->engine_ptr);
    ctx.release(s);
    mpi_fail(call, ctx.rank(), rc);
  }
}

void mpi_transport::link_keyed(request_state* r) {
  const auto src = static_cast<std::size_t>(r->peer);
  r->prev = keyed_tail_[src];
  r->next = nullptr;
  (r->prev ? r->prev->next : keyed_head_[src]) = r;
  keyed_tail_[src] = r;
}

void mpi_transport::unlink_keyed(request_state* r) noexcept {
  const auto src = static_cast<std::size_t>(r->peer);
  (r->prev ? r->prev->next : keyed_head_[src]) = r->next;
  (r->next ? r->next->prev : keyed_tail_[src]) = r->prev;
  r->prev = r->next = nullptr;
}

request_state* mpi_transport::keyed_waiting(int source, int tag, std::uint64_t space,
                                            msg_context c) const noexcept {
  for (request_state* r = keyed_head_[static_cast<std::size_t>(source)]; r; r = r->next)
    if (r->tag == tag && r->space == space && r->ctx == c) return r;
  return nullptr;
}

int mpi_transport::post_slot(std::uint32_t slot, request_state* s, void* target, int wtag) {
  s->slot = slot;
  posted_ticket_[slot] = next_ticket_++;
  return MPI_Irecv(target, static_cast<int>(header_bytes), MPI_BYTE,
                   s->peer == any_source ? MPI_ANY_SOURCE : s->peer, wtag, small(s->ctx),
                   &posted_reqs_[slot]);
}

void mpi_transport::compact_posted() noexcept {
  std::size_t live = 0;
  for (std::size_t i = 0; i < posted_.size(); ++i) {
    if (!posted_[i]) continue;
    posted_[live] = posted_[i];
    posted_reqs_[live] = posted_reqs_[i];
    posted_ticket_[live] = posted_ticket_[i];
    posted_[live]->slot = static_cast<std::uint32_t>(live);
    ++live;
  }
  posted_.resize(live);
  posted_reqs_.resize(live);
  posted_ticket_.resize(live);
}

void mpi_transport::remove_posted(request_state* s) noexcept {
  if (handling_) {
    posted_[s->slot] = nullptr;  // its request is complete (null): Testsome skips it
    marked_ = true;
    return;
  }
  const std::uint32_t i = s->slot;
  const std::uint32_t last = static_cast<std::uint32_t>(posted_.size() - 1);
  if (i != last) {
    posted_[i] = posted_[last];
    posted_reqs_[i] = posted_reqs_[last];
    posted_ticket_[i] = posted_ticket_[last];
    posted_[i]->slot = i;
  }
  posted_.pop_back();
  posted_reqs_.pop_back();
  posted_ticket_.pop_back();
}

void mpi_transport::post_payload(request_state* s, int source, std::uint64_t seq,
                                 std::size_t bytes) {
  void* target = s->buf;
  std::byte* scratch = nullptr;
  if (bytes > s->capacity) {
    // Receive it whole into scratch (never truncated), then report both sizes.
    s->failed = true;
    s->incoming = bytes;
    target = scratch = new std::byte[bytes];
  }
  int rc = MPI_SUCCESS;
  if (bytes <= chunk_bytes) {
    s->engine_ptr = scratch;
    s->phase = 1;
    rc = MPI_Irecv(target, int_count(bytes), MPI_BYTE, source, static_cast<int>(seq), large(s->ctx),
                   &mpi_reqs(s)[0]);
  } else {
    auto* ch = new chunked{nullptr, scratch, {}};
    s->engine_ptr = ch;
    s->phase = chunked_phase;
    rc = post_chunks(false, target, bytes, source, static_cast<int>(seq), large(s->ctx), ch->reqs);
  }
  if (rc != MPI_SUCCESS) mpi_fail(s->call, ctx_.rank(), rc);
}

mpi_transport::first_part mpi_transport::read_first_part(const std::byte* data, std::size_t n,
                                                         msg_context c) const noexcept {
  first_part m{n == header_bytes, {}, data, n};
  if (m.is_header) {
    std::memcpy(&m.h, data, sizeof m.h);
    m.bytes = static_cast<std::size_t>(m.h.bytes);
  } else if (keyed(c)) {
    wire_key k;
    std::memcpy(&k, data, sizeof k);
    m.h.space = k.space;
    m.h.tag = k.tag;
    m.h.check_word = k.check_word;
    m.payload = data + key_bytes;
    m.bytes = n - key_bytes;
  }
  return m;
}

bool mpi_transport::deliver_first(request_state* s, int source, int tag, const first_part& m,
                                  std::byte* staging) {
  s->engine_ptr = nullptr;
  s->st = status{source, tag, m.bytes};
  s->check_word = m.h.check_word;
  if (m.is_header) {
    give_buffer(staging);
    post_payload(s, source, m.h.seq, m.bytes);
    return false;
  }
  if (m.bytes > s->capacity) {  // then it is not in s's buffer: that stays untouched
    s->failed = true;
    s->incoming = m.bytes;
  } else if (m.payload != s->buf && m.bytes) {
    copy_bytes(s->buf, m.payload, m.bytes);
  }
  give_buffer(staging);
  s->done.store(1, std::memory_order_relaxed);
  ctx_.note_progress();
  return true;
}

bool mpi_transport::first_part_arrived(request_state* s, const MPI_Status& st) {
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  auto* staging = static_cast<std::byte*>(s->engine_ptr);
  const std::byte* got = staging ? staging : static_cast<const std::byte*>(s->buf);
  return deliver_first(s, st.MPI_SOURCE, st.MPI_TAG,
                       read_first_part(got, static_cast<std::size_t>(count), s->ctx), staging);
}

void mpi_transport::take_stashed(request_state* s, const stashed& m) {
  header h{};
  h.seq = m.seq;
  h.check_word = m.check_word;
  deliver_first(s, m.source, m.tag, first_part{m.is_header, h, m.data.data(), m.bytes}, nullptr);
}

mpi_transport::handling_scope::handling_scope(mpi_transport& t) noexcept : t_(t) { ++t_.handling_; }

mpi_transport::handling_scope::~handling_scope() {
  if (--t_.handling_ == 0 && t_.marked_) {
    t_.compact_posted();
    t_.marked_ = false;
  }
}

void mpi_transport::slot_arrived(std::uint32_t slot, const MPI_Status& st) {
  const handling_scope scope(*this);
  request_state* s = posted_[slot];
  if (keyed(s->ctx)) {
    keyed_arrived(slot, st);
  } else {
    remove_posted(s);
    first_part_arrived(s, st);
  }
}

void mpi_transport::keyed_arrived(std::uint32_t slot, const MPI_Status& st) {
  const int source = st.MPI_SOURCE, wtag = st.MPI_TAG;
  const msg_context c = posted_[slot]->ctx;
  // MPI fills the slots of one (source, wire tag) in the order they were posted: any posted
  // before this one holds an earlier message, which goes first (a test of one receive, or
  // a Testsome that saw this slot complete but not an earlier one, may come here first).
  for (;;) {
    request_state* q = keyed_head_[static_cast<std::size_t>(source)];
    while (q && !(posted_ticket_[q->slot] < posted_ticket_[slot] && q->ctx == c &&
                  posted_reqs_[q->slot] != MPI_REQUEST_NULL &&
                  wire_tag(q->tag, q->space, q->ctx) == wtag))
      q = q->next;
    if (!q) break;
    const std::uint32_t earlier = q->slot;
    MPI_Status qs;
    const int rc = MPI_Wait(&posted_reqs_[earlier], &qs);  // matched already: completes now
    if (rc != MPI_SUCCESS) mpi_fail(q->call, ctx_.rank(), rc);
    keyed_arrived(earlier, qs);
  }
  request_state* r = posted_[slot];  // the slot's owner now
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  auto* staging = static_cast<std::byte*>(r->engine_ptr);
  const first_part m = read_first_part(staging, static_cast<std::size_t>(count), c);
  const int tag = m.h.tag;
  request_state* to = keyed_waiting(source, tag, m.h.space, c);
  if (!to) {
    // Another key's message (their wire tags met), and no receive waits for it yet: stash
    // it; r posts its slot again.
    stash_.push_back(parse_arrived(source, wtag, c, staging, static_cast<std::size_t>(count)));
    const int rc = post_slot(slot, r, staging, wtag);
    if (rc != MPI_SUCCESS) mpi_fail(r->call, ctx_.rank(), rc);
    ctx_.note_progress();
    return;
  }
  if (to != r) {
    // `to` (same source and wire tag) takes the message; r takes over to's posted slot and
    // its staging buffer.
    const std::uint32_t theirs = to->slot;
    posted_[slot] = to;
    to->slot = slot;
    posted_[theirs] = r;
    r->slot = theirs;
    std::swap(r->engine_ptr, to->engine_ptr);
  }
  remove_posted(to);
  unlink_keyed(to);
  deliver_first(to, source, tag, m, staging);
}

mpi_transport::stashed mpi_transport::parse_arrived(int source, int tag, msg_context c,
                                                    const std::byte* data,
                                                    std::size_t count) const {
  const first_part m = read_first_part(data, count, c);
  stashed out{
      source, keyed(c) ? m.h.tag : tag, m.h.space, m.h.check_word, c, m.is_header, m.bytes, m.h.seq,
      {}};
  if (!m.is_header) out.data.assign(m.payload, m.payload + m.bytes);
  return out;
}

bool mpi_transport::advance_posted() {
  if (posted_.empty()) return false;
  const std::size_t n = posted_.size();
  scratch_index_.resize(n);
  scratch_status_.resize(n);
  int outcount = 0;
  // Open MPI's Testsome progresses only when it found nothing complete, and then returns
  // without looking again: a second look sees what that progress completed, in this poll
  // rather than the next.
  for (int look = 0; look < 2 && outcount <= 0; ++look) {
    const int rc = MPI_Testsome(static_cast<int>(n), posted_reqs_.data(), &outcount,
                                scratch_index_.data(), scratch_status_.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) mpi_fail("progress", ctx_.rank(), rc);
    if (outcount == MPI_UNDEFINED) return false;
  }
  if (outcount <= 0) return false;
  scratch_done_.clear();
  for (int k = 0; k < outcount; ++k) {
    const auto slot = static_cast<std::uint32_t>(scratch_index_[static_cast<std::size_t>(k)]);
    scratch_done_.push_back({posted_ticket_[slot], slot, k});
  }
  if (scratch_done_.size() > 1)
    std::sort(scratch_done_.begin(), scratch_done_.end(),
              [](const slot_done& a, const slot_done& b) { return a.ticket < b.ticket; });
  // Slots keep their index until all are handled (a keyed arrival may move receives between
  // them, or post one again).
  const handling_scope scope(*this);
  for (const slot_done& d : scratch_done_)
    slot_arrived(d.slot, scratch_status_[static_cast<std::size_t>(d.k)]);
  return true;
}

bool mpi_transport::poll() {
  if (!posted_.empty()) return advance_posted();
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, small(msg_context::user), &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

bool mpi_transport::advance_pending(request_state* pending) {
  bool found = poll();
  // Sends and long receives complete only when they are tested themselves.
  for (request_state* s = pending; s; s = s->active_next)
    if (s->k != request_state::kind::layer && !s->done.load(std::memory_order_relaxed))
      found = test(s) || found;
  return found;
}

bool mpi_transport::test(request_state* s) {
  if (test_own(s, true)) return true;
  // Not done: other receives may hold headers whose payloads a peer is waiting to deliver
  // (and this operation may depend on that peer).
  const bool self_posted = s->k == request_state::kind::recv && s->phase == 0;
  if (posted_.size() > (self_posted ? 1u : 0u)) advance_posted();
  return s->done.load(std::memory_order_relaxed) != 0;
}

bool mpi_transport::test_polled(request_state* s) {
  // More processes than cores: each MPI call that finds nothing yields the core (Open MPI's
  // yield_when_idle), and a pass with one poll instead of one per request hands it over too
  // rarely (measured, 4 ranks on 2 cores: flow-overhead 8 B 100 -> 2200 us per round).
  if (oversubscribed_) return test(s);
  // A receive still in its posted slot was tested by the poll's Testsome.
  return test_own(s, false);
}

bool mpi_transport::test_own(request_state* s, bool test_slot) {
  if (s->done.load(std::memory_order_relaxed)) return true;
  int flag = 0;
  MPI_Status st;
  if (s->phase == chunked_phase) {
    if (finish_chunked(s, false)) return true;
  } else if (s->k == request_state::kind::send) {
    const int rc = MPI_Testall(s->phase == 1 ? 2 : 1, mpi_reqs(s), &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) mpi_fail(s->call, ctx_.rank(), rc);
    if (flag) {
      give_buffer(s->engine_ptr);
      s->engine_ptr = nullptr;
      s->done.store(1, std::memory_order_relaxed);
      ctx_.note_progress();
      return true;
    }
  } else if (s->phase == 0) {
    if (!test_slot) return false;
    const int rc = MPI_Test(&posted_reqs_[s->slot], &flag, &st);
    if (rc != MPI_SUCCESS) mpi_fail(s->call, ctx_.rank(), rc);
    if (flag) {
      slot_arrived(s->slot, st);
      if (s->done.load(std::memory_order_relaxed)) return true;
    }
  } else {
    const int rc = MPI_Test(&mpi_reqs(s)[0], &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) mpi_fail(s->call, ctx_.rank(), rc);
    if (flag) {
      delete[] static_cast<std::byte*>(s->engine_ptr);  // scratch of a too-large message
      s->engine_ptr = nullptr;
      s->done.store(1, std::memory_order_relaxed);
      ctx_.note_progress();
      return true;
    }
  }
  return false;
}

void mpi_transport::stash_arrived(msg_context c) {
  // A small message is at most header_bytes: no allocation per probe.
  std::array<std::byte, header_bytes> buf;
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, small(c), &flag, &msg, &st);
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    MPI_Mrecv(buf.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    stash_.push_back(
        parse_arrived(st.MPI_SOURCE, st.MPI_TAG, c, buf.data(), static_cast<std::size_t>(count)));
    ctx_.note_progress();
  }
}

bool mpi_transport::iprobe(int source, int tag, msg_context c, status* out) {
  advance_posted();
  return find_arrived(source, tag, c, out);
}

bool mpi_transport::iprobe_polled(int source, int tag, msg_context c, status* out) {
  if (oversubscribed_) advance_posted();  // as test_polled
  return find_arrived(source, tag, c, out);
}

bool mpi_transport::find_arrived(int source, int tag, msg_context c, status* out) {
  stash_arrived(c);
  for (const stashed& m : stash_)
    if (m.ctx == c && (source == any_source || source == m.source) &&
        (tag == any_tag || tag == m.tag)) {
      *out = status{m.source, m.tag, m.bytes};
      return true;
    }
  return false;
}

void mpi_transport::park(request_state*, double, std::uint64_t) {
  // MPI can only progress when called; with more ranks than cores, yield the core instead.
  if (oversubscribed_) sched_yield();
}

void mpi_transport::cancel(request_state* s) {
  if (s->done.load(std::memory_order_relaxed)) return;
  if (keyed(s->ctx)) withdrawn_ = 1;
  if (s->phase == chunked_phase) {
    auto* ch = static_cast<chunked*>(s->engine_ptr);
    if (s->k == request_state::kind::send) {  // as below
      for (MPI_Request& r : ch->reqs) MPI_Request_free(&r);
      ch->header = nullptr;
    }
    finish_chunked(s, true);  // freed requests are null: Waitall skips them
    return;
  }
  if (s->k == request_state::kind::send) {
    // MPI cannot withdraw a send: let it finish on its own (see request.hpp). Its header
    // buffer stays owned by buffers_ but is not reused.
    MPI_Request_free(&mpi_reqs(s)[0]);
    if (s->phase == 1) MPI_Request_free(&mpi_reqs(s)[1]);
    return;
  }
  // Waiting for its first message: withdraw the posted slot. A keyed receive whose slot took
  // another key's message moved it on and waits in a slot again: withdraw that one.
  while (s->phase == 0 && !s->done.load(std::memory_order_relaxed)) {
    MPI_Request& r = posted_reqs_[s->slot];
    MPI_Cancel(&r);
    MPI_Status st;
    MPI_Wait(&r, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    if (cancelled) {
      remove_posted(s);
      if (keyed(s->ctx)) unlink_keyed(s);
      give_buffer(s->engine_ptr);
      s->engine_ptr = nullptr;
      return;
    }
    slot_arrived(s->slot, st);
  }
  if (s->done.load(std::memory_order_relaxed)) return;
  if (s->phase == chunked_phase) {
    finish_chunked(s, true);
    return;
  }
  // The payload of a long message is committed: it completes without peers' help.
  MPI_Wait(&mpi_reqs(s)[0], MPI_STATUS_IGNORE);
  delete[] static_cast<std::byte*>(s->engine_ptr);
}

void mpi_transport::announce_end() {
  const int me = ctx_.rank();
  end_sends_.reserve(static_cast<std::size_t>(ctx_.size()));
  for (int r = 0; r < ctx_.size(); ++r) {
    if (r == me) continue;
    end_sends_.emplace_back(MPI_REQUEST_NULL);
    MPI_Isend(&withdrawn_, 1, MPI_INT, r, 0, ends_, &end_sends_.back());
  }
}

int mpi_transport::ended_ranks() {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, 0, ends_, &flag, &st);
    if (!flag) return ended_count_;
    receive_end(st.MPI_SOURCE);
  }
}

void mpi_transport::receive_end(int r) {
  int withdrawn = 0;
  MPI_Recv(&withdrawn, 1, MPI_INT, r, 0, ends_, MPI_STATUS_IGNORE);
  if (withdrawn) peer_withdrew_ = true;
  ended_[static_cast<std::size_t>(r)] = 1;
  ++ended_count_;
}

bool mpi_transport::send_notice(int r, notice_kind kind, const void* data, std::size_t bytes) {
  // Reap what MPI finished with (in order: the oldest finish first), then send from a copy.
  while (!notice_sends_.empty()) {
    int flag = 0;
    MPI_Test(&notice_sends_.front()->req, &flag, MPI_STATUS_IGNORE);
    if (!flag) break;
    notice_sends_.pop_front();
  }
  notice_send& n = *notice_sends_.emplace_back(std::make_unique<notice_send>());
  std::memcpy(n.bytes.data(), data, std::min(bytes, notice_bytes));
  MPI_Isend(n.bytes.data(), static_cast<int>(std::min(bytes, notice_bytes)), MPI_BYTE, r,
            static_cast<int>(kind), ends_, &n.req);
  return true;
}

bool mpi_transport::poll_notice(notice_kind kind, int* from, void* data) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, static_cast<int>(kind), ends_, &flag, &st);
  if (!flag) return false;
  MPI_Recv(data, static_cast<int>(notice_bytes), MPI_BYTE, st.MPI_SOURCE, static_cast<int>(kind),
           ends_, MPI_STATUS_IGNORE);
  *from = st.MPI_SOURCE;
  return true;
}

std::string mpi_transport::finish(transport_rank& ctx) {
  // Every rank's announcement, in place of a barrier: a rank still waiting for this one sees
  // this one's and fails, rather than meeting it in a barrier it would never leave.
  for (int r = 0; r < ctx.size(); ++r)
    if (r != ctx.rank() && !ended_[static_cast<std::size_t>(r)]) receive_end(r);
  MPI_Waitall(static_cast<int>(end_sends_.size()), end_sends_.data(), MPI_STATUSES_IGNORE);
  // Every rank reached the end: whatever is still unmatched was never received.
  for (int c = 0; c < msg_context_count; ++c) stash_arrived(static_cast<msg_context>(c));
  if (stash_.empty()) return {};
  auto seen = [](const stashed& m) { return unreceived_message{m.source, m.tag, m.bytes, m.ctx}; };
  const auto k =
      std::find_if(stash_.begin(), stash_.end(), [](const stashed& m) { return keyed(m.ctx); });
  std::string error = report_unreceived(ctx.rank(), stash_.size(), seen(stash_.front()),
                                        k != stash_.end() ? std::optional(seen(*k)) : std::nullopt,
                                        withdrawn_ || peer_withdrew_);
  stash_.clear();
  return error;
}

void mpi_transport::describe(std::ostream& os) const {
  os << "  " << posted_.size() << " receive(s) waiting for a first message, " << stash_.size()
     << " probed message(s) not yet received\n";
}

}  // namespace cairn::detail
