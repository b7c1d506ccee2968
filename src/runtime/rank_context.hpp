#pragma once
// One rank's runtime: identity, placement, its transport, the request pool, the wait loop and
// the watchdog. Owned by shared_ptr from every `world` handle of the rank.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cairn/runtime/world.hpp"
#include "runtime/request_state.hpp"
#include "runtime/run_state.hpp"
#include "transport/transport.hpp"

namespace cairn::detail {

struct group_members;

/// Where ranks sit: node of every rank, computed once per run.
struct topology {
  std::vector<int> node_of;  // per rank
  int node_count = 1;
  std::vector<int> local_rank;  // per rank: index among the ranks of its node
  std::vector<int> node_size;   // per node: number of ranks
  /// Fills local_rank and node_size from node_of and node_count.
  void derive() {
    local_rank.assign(node_of.size(), 0);
    node_size.assign(static_cast<std::size_t>(node_count), 0);
    for (std::size_t r = 0; r < node_of.size(); ++r)
      local_rank[r] = node_size[static_cast<std::size_t>(node_of[r])]++;
  }
};

class rank_context {
 public:
  rank_context(int rank, int size, cairn::engine e, std::shared_ptr<run_state> run,
               std::shared_ptr<const topology> topo, double watchdog_s);
  ~rank_context();
  rank_context(const rank_context&) = delete;
  rank_context& operator=(const rank_context&) = delete;

  void set_transport(std::unique_ptr<transport> t) {
    tp_ = std::move(t);
    node_board_ = tp_ ? tp_->board() : nullptr;
    if (tp_) tag_ub_ = tp_->tag_ub();
  }
  /// The transport's node board, null where the ranks share no node (cached: the board
  /// collectives ask on every call, and a transport keeps its board for life).
  const node_board* board() const noexcept { return node_board_; }
  /// Largest user tag of the engine (cached: checked on every call).
  int tag_ub() const noexcept { return tag_ub_; }
  transport& tp() noexcept { return *tp_; }

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  cairn::engine engine() const noexcept { return engine_; }
  /// True if this rank can copy straight from and into its peers' memory: one address space
  /// (threads engine) or cross-memory copies (MPI on one node, transport::peer_pid). The same
  /// on every rank of a run.
  bool reaches_peer_memory() const noexcept {
    return engine_ == cairn::engine::threads || tp_->peer_pid(rank_) != 0;
  }
  const topology& topo() const noexcept { return *topo_; }
  run_state& run() noexcept { return *run_; }

  /// Throws if the run this rank belonged to has ended (or is being torn down).
  void check_alive(const char* call) const {
    if (ended_) fail(call, rank_, "use after the run ended");
  }
  /// Throws run_aborted if another rank failed.
  void check_abort() const {
    if (run_->aborting.load(std::memory_order_relaxed)) throw run_aborted{};
  }
  void end() noexcept { ended_ = true; }

  /// A fresh pending state, linked into the rank's list of pending operations.
  request_state* acquire(request_state::kind k, const char* call, int peer, int tag, msg_context c,
                         void* buf, std::size_t capacity);
  /// Returns a state to the pool.
  void release(request_state* s) noexcept;

  /// True if a collective is running on this rank (or a board collective's tail: board_progress).
  bool has_colls() const noexcept {
    return !colls_.empty() || board_.has_tails() || group_board_.tails;
  }
  /// Tests once (advancing communication, every running collective and the layers' pollers).
  bool test(request_state* s) {
    if (has_colls()) advance_colls();
    if (!pollers_.empty()) run_pollers();
    if (s->k == request_state::kind::schedule) return s->done.load(std::memory_order_relaxed) != 0;
    return tp_->test(s);
  }
  /// Advances communication, every running collective and the layers' pollers, without blocking.
  void progress() {
    tp_->poll();
    if (has_colls()) advance_colls();
    if (!pollers_.empty()) run_pollers();
  }

  /// Registers `fn(obj)` to run on every test/wait/progress of this rank (once per pair), so
  /// that the layers above (aggregated messages, array transfers) keep moving while the rank
  /// waits for anything. Pollers must tolerate being re-entered (guard themselves) and stay
  /// registered until the run ends.
  void add_poller(void* obj, void (*fn)(void*)) {
    for (const auto& p : pollers_)
      if (p.obj == obj && p.fn == fn) return;
    pollers_.push_back({obj, fn});
  }

  /// The aggregated-messages layer of this rank (src/msg), made on first use by that layer and
  /// polled by every test/wait/progress so that items keep flowing while the rank waits for
  /// anything. Type-erased so the runtime does not depend on the layer above it.
  void* msg_layer() const noexcept { return layer_.get(); }
  /// Installs the message layer and the function that polls it (once per rank).
  void set_msg_layer(std::shared_ptr<void> layer, void (*poll)(void*)) {
    layer_ = std::move(layer);
    add_poller(layer_.get(), poll);
  }
  /// Withdraws a pending operation (exception unwinding); never waits for peers.
  void cancel(request_state* s);

  /// Registers a started collective with the progress engine.
  void add_coll(request_state* s) { colls_.push_back(s); }
  /// Advances every running collective as far as it goes without blocking.
  void advance_colls();
  /// The group of all ranks (made on first use).
  const std::shared_ptr<const group_members>& world_group() {
    if (!world_group_) [[unlikely]]
      make_world_group();
    return world_group_;
  }
  /// Sequence number of the next collective on the group with identity `id`.
  std::uint32_t next_coll_seq(std::uint64_t id) {
    // A rank issues collectives mostly on one group at a time: remember its counter (map
    // elements never move) and skip the hash lookup.
    if (id != last_seq_id_ || !last_seq_) [[unlikely]]
      switch_seq(id);
    return (*last_seq_)++;
  }
  /// The rank's board collectives (src/coll/shared_memory_flat.cpp), numbered alike on every
  /// rank (collectives on the world match in issue order): how many it started, completed
  /// (data moved, in order) and finished (request done, in order: a direct one once every rank
  /// moved its data), and a floor under what every rank completed (last seen).
  struct board_progress {
    std::uint64_t started = 0, completed = 0, finished = 0, all_completed = 0;
    /// Board collectives finished but not completed: a rank whose part needs no other rank's
    /// slot (a bcast's root, a reduce's non-roots) or only the root's (a bcast's others)
    /// finishes once that part is done; the rest (every slot's signature, then the `done`
    /// word) follows, in order, while the rank is in cairn. Their signatures, [first, end)
    /// modulo node_board::slots (at most that many: a slot is reused only once every rank
    /// completed its last use).
    struct tail {
      std::uint64_t seq = 0, bytes = 0, algorithm = 0;
      std::uint32_t kind = 0;
      std::int32_t root = -1;
      int arrived = 1;        // peers seen, counted from this rank on
      bool reported = false;  // its part already failed (no second report)
    };
    tail tails[32];  // node_board::slots (a static_assert in shared_memory_flat.cpp)
    std::uint64_t tails_first = 0, tails_end = 0;
    /// A disagreement a tail (here or on a group) found after its collective finished: raised
    /// by the rank's next board collective once that completed, or at the end of its function.
    std::string deferred_error;
    bool has_tails() const noexcept { return tails_first != tails_end; }
  };
  board_progress& board_state() noexcept { return board_; }
  /// What a board collective waits for: `word` to reach at least `value` (rank `peer`'s).
  struct board_wait {
    const std::atomic<std::uint64_t>* word = nullptr;
    std::uint64_t value = 0;
    int peer = -1;
    const char* call = "";
  };
  /// Sets (or clears, with a default board_wait) what the rank waits for on the board, so that
  /// parking re-checks it and the watchdog reports it.
  void watch_board(const board_wait& w) noexcept { board_wait_ = w; }
  /// The rank's collectives on groups that run on the board (src/coll/shared_memory_group.cpp):
  /// how many are unfinished, and the rank's doorbell with the value it had before they were
  /// last checked. A ring since then means one of them may move.
  struct group_board_watch {
    const std::atomic<std::uint64_t>* bell = nullptr;
    std::uint64_t seen = 0;
    int pending = 0;
    /// Of those, the tails (as board_progress::tail): finished for their caller, still reading
    /// and acknowledging the other members' slots; kept by the group board's `tail_store`.
    int tails = 0;
    std::shared_ptr<void> tail_store;
  };
  group_board_watch& group_board() noexcept { return group_board_; }
  /// True if the awaited board word has its value, or the doorbell rang since the rank's group
  /// board collectives were last checked (seq_cst: pairs with the publisher's wake).
  bool board_ready() const noexcept {
    return (board_wait_.word &&
            board_wait_.word->load(std::memory_order_seq_cst) >= board_wait_.value) ||
           (group_board_.pending &&
            group_board_.bell->load(std::memory_order_seq_cst) != group_board_.seen);
  }
  /// Blocks until `s` completes; returns its status or throws its error. Releases `s`.
  status wait(request_state* s);
  /// Completion bookkeeping after `s` tested complete: throws its error, releases it.
  status finish(request_state* s);
  /// Blocks until iprobe(source, tag) finds a message.
  status probe(int source, int tag, msg_context c);

  /// Called by waits that made no progress: parks, checks abort and the watchdog.
  /// `spins` counts consecutive unsuccessful polls of the current wait.
  void idle(request_state* s, std::uint64_t& spins);
  /// Marks that something happened on this rank (arrival, completion): resets the watchdog.
  void note_progress() noexcept { ++progress_epoch_; }

  /// Text listing the pending operations (for the watchdog).
  std::string describe_pending() const;

  // ---- Progress by other threads (launch_options::progress) ----
  // In the modes `peers` and `thread`, other threads advance this rank's communication and
  // collectives while the rank computes outside cairn. The rank's state then has a lock: its
  // own thread holds it from entering a public call to leaving it (rank_entry), helpers only
  // ever try it, so nothing waits on a helper for longer than one poll.

  /// Lets helpers in (set at launch, before the rank runs).
  void enable_helpers() noexcept { helped_ = true; }
  /// The rank's own thread enters a public call (reentrant).
  void enter() noexcept {
    if (helped_ && depth_++ == 0) lock_owner();
  }
  /// ... and leaves it; on the way out it takes over the work of helpers that found it busy.
  void leave() noexcept {
    if (helped_ && --depth_ == 0) unlock_owner();
  }
  /// Called by another thread: if the rank is outside cairn and has something pending,
  /// advances its communication and collectives once (never its pollers: channel handlers
  /// run on the rank's thread). Never blocks. True if it ran and something had arrived.
  bool help() noexcept;

 private:
  void lock_owner() noexcept;
  void unlock_owner() noexcept;
  bool help_once() noexcept;
  bool advance_locked() noexcept;
  void switch_seq(std::uint64_t id);  // next_coll_seq on another group than last time

  bool helped_ = false;
  int depth_ = 0;  // rank thread only
  std::atomic<std::uint32_t> lock_{0};
  std::atomic<std::uint32_t> missed_{0};       // a helper found the lock taken
  std::atomic<std::uint32_t> outstanding_{0};  // pending states (helpers skip idle ranks)

  [[noreturn]] void watchdog_fire(double idle_s);

  int rank_;
  int size_;
  cairn::engine engine_;
  std::shared_ptr<run_state> run_;
  std::shared_ptr<const topology> topo_;
  std::unique_ptr<transport> tp_;
  bool ended_ = false;
  int tag_ub_ = 32767;
  const node_board* node_board_ = nullptr;
  void make_world_group();
  std::vector<request_state*> colls_;  // running collectives
  std::shared_ptr<const group_members> world_group_;
  std::unordered_map<std::uint64_t, std::uint32_t> coll_seq_;
  board_progress board_;
  board_wait board_wait_;
  group_board_watch group_board_;
  std::uint64_t last_seq_id_ = 0;
  std::uint32_t* last_seq_ = nullptr;
  std::shared_ptr<void> layer_;  // the message layer (src/msg), if any
  struct poller {
    void* obj;
    void (*fn)(void*);
  };
  std::vector<poller> pollers_;
  void run_pollers() {
    for (std::size_t i = 0; i < pollers_.size(); ++i) pollers_[i].fn(pollers_[i].obj);
  }

  std::vector<request_state*> pool_;  // free states
  std::vector<std::unique_ptr<request_state[]>> slabs_;
  request_state* active_ = nullptr;  // pending operations (doubly linked)

  double watchdog_s_;
  std::uint64_t progress_epoch_ = 0;
  std::uint64_t watched_epoch_ = 0;
  double watched_since_ = 0;  // monotonic seconds when watched_epoch_ was last seen to change
};

/// Holds the rank's lock for the scope of a public call when helpers are enabled (a counter
/// and a predictable branch otherwise).
class rank_entry {
 public:
  explicit rank_entry(rank_context& c) noexcept : c_(c) { c_.enter(); }
  ~rank_entry() { c_.leave(); }
  rank_entry(const rank_entry&) = delete;
  rank_entry& operator=(const rank_entry&) = delete;

 private:
  rank_context& c_;
};

/// Bits a tag may use when tags run up to `tag_ub` (the layers hash their keys into them).
inline int tag_bits(int tag_ub) noexcept {
  const auto values = static_cast<std::uint64_t>(tag_ub < 0 ? 0 : tag_ub) + 1;
  return std::min(31, static_cast<int>(std::bit_width(values)) - 1);
}

/// Monotonic clock in seconds.
double now_s() noexcept;

}  // namespace cairn::detail
