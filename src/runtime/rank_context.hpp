#pragma once
// One rank's runtime: identity, placement, its transport, the layers' states and hooks, the
// wait loop and the watchdog. Owned by shared_ptr from every `world` handle of the rank. It
// knows no layer above it: they register into it (runtime/layers.hpp).

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cairn/runtime/detail/flag_scope.hpp"
#include "cairn/runtime/world.hpp"
#include "runtime/layers.hpp"
#include "runtime/run_state.hpp"
#include "transport/request_state.hpp"
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

class rank_context final : public transport_rank {
 public:
  rank_context(int rank, int size, cairn::engine e, std::shared_ptr<run_state> run,
               std::shared_ptr<const topology> topo, double watchdog_s);
  ~rank_context() override;

  /// Installs the rank's transport (null: none) and binds what depends on it: node memory, the
  /// tag range and where every rank's wait is published (rank_wait).
  void set_transport(std::unique_ptr<transport> t);
  /// The node regions the transport shares among the ranks (src/node), null where they share
  /// no node (cached: the board collectives ask on every call, and a transport keeps its
  /// regions for life).
  const node_regions* node_memory() const noexcept { return node_memory_; }
  /// Largest user tag of the engine (cached: checked on every call).
  int tag_ub() const noexcept { return tag_ub_; }
  transport& tp() noexcept { return *tp_; }

  cairn::engine engine() const noexcept { return engine_; }
  /// True if this rank can copy straight from and into its peers' memory: all ranks on one
  /// node (not emulating several) and one address space (threads engine) or cross-memory
  /// copies (MPI, transport::peer_pid). The same on every rank of a run.
  bool reaches_peer_memory() const noexcept {
    return node_memory_ && (engine_ == cairn::engine::threads || tp_->peer_pid(rank()) != 0);
  }
  const topology& topo() const noexcept { return *topo_; }
  run_state& run() noexcept { return *run_; }

  /// Throws if the run this rank belonged to has ended (or is being torn down).
  void check_alive(const char* call) const {
    if (ended_) fail(call, rank(), "use after the run ended");
  }
  /// Throws run_aborted if another rank failed.
  void check_abort() const {
    if (run_->aborting.load(std::memory_order_relaxed)) throw run_aborted{};
  }
  void end() noexcept { ended_ = true; }

  // ---- Layers (runtime/layers.hpp) ----

  /// The per-rank state of layer type T, made on first use as `T(*this)` (its constructor
  /// registers its hooks with add_layer). Lives until the rank context ends.
  template <class T>
  T& layer() {
    void* state = layer_states_[static_cast<std::size_t>(layer_slot<T>)];
    if (!state) [[unlikely]]
      state = make_layer<T>();
    return *static_cast<T*>(state);
  }
  /// Registers a layer's hooks for `state`; returns its number for mark_busy. The layer's
  /// `advance` runs on every test/wait/progress from now on while it reports work.
  int add_layer(void* state, const layer_hooks& hooks);
  /// Layer `layer` has new work: its `advance` runs again on the next test/wait/progress.
  void mark_busy(int layer) noexcept { busy_ |= 1u << layer; }
  /// Completes what the layers still run in the background once the rank's function returned
  /// normally (their `finish` hooks, in registration order); throws what they found wrong.
  void finish_layers();

  /// Tests once (advancing communication and every layer with work).
  bool test(request_state* s) {
    if (busy_) advance_layers(false);
    if (s->k == request_state::kind::layer) return s->done.load(std::memory_order_relaxed) != 0;
    return tp_->test(s);
  }
  /// Advances communication and every layer with work, without blocking.
  void progress() {
    tp_->poll();
    if (!busy_) return;
    // The layers' advances follow the poll at once: they need not poll again (poll_transport).
    const flag_scope polled(just_polled_);
    advance_layers(false);
  }
  /// Polls the transport for a layer, unless progress() polled it just before this layer's
  /// advance: on MPI a poll that finds nothing costs two MPI_Testsome, and a second poll right
  /// after the first rarely finds more (measured, an idle world::progress on 2 MPI ranks:
  /// 107 and 178 ns -> 65 and 116 ns).
  void poll_transport() {
    if (!just_polled_) tp_->poll();
  }
  /// Withdraws a pending operation (exception unwinding); never waits for peers.
  void cancel(request_state* s);

  /// The group of all ranks (made on first use).
  const std::shared_ptr<const group_members>& world_group() {
    if (!world_group_) [[unlikely]]
      make_world_group();
    return world_group_;
  }
  /// True if a layer's awaited word in shared memory may have changed (its `ready` hook).
  bool ready_above() const noexcept override;
  /// Blocks until `s` completes; returns its status or throws its error. Releases `s`, also
  /// when the wait itself throws (the operation is then withdrawn first).
  status wait(request_state* s);
  /// Completion bookkeeping after `s` tested complete: throws its error, releases it.
  status finish(request_state* s);
  /// Blocks until iprobe(source, tag) finds a message.
  status probe(int source, int tag, msg_context c);

  /// Called by waits that made no progress: parks, checks abort and the watchdog.
  /// `spins` counts consecutive unsuccessful polls of the current wait.
  void idle(request_state* s, std::uint64_t& spins);

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
  /// advances its communication and the layers helpers may advance, once (never a layer
  /// that runs user code: channel handlers run on the rank's thread). Never blocks. True if
  /// it ran and something had arrived.
  bool help() noexcept override;

 private:
  void lock_owner() noexcept;
  void unlock_owner() noexcept;
  bool help_once() noexcept;
  bool advance_locked() noexcept;
  void advance_layers(bool helper);
  void make_world_group();
  [[noreturn]] void watchdog_fire(double idle_s);
  /// A blocked wait: fails if what it waits for depends on a rank that has ended.
  void check_ended_peers(const request_state* s);
  /// Threads engine, a wait stuck for deadlock_after_s: fails the run if every rank that has
  /// not ended is stuck in a wait too.
  void check_deadlock(double now);
  /// MPI across nodes, where the waits are not in shared memory: answers the watcher's
  /// questions and, on the watcher (the lowest rank that has not ended), asks every rank in
  /// rounds and fails the run once two rounds find every rank in the same stuck wait.
  void watch_across_nodes(double now);
  /// Fails the run as deadlocked; `report`: first prints what each rank waits in (`who`) and
  /// this rank's pending operations.
  [[noreturn]] void fail_deadlocked(const std::string& who, bool report);

  int depth_ = 0;  // rank thread only
  std::atomic<std::uint32_t> lock_{0};
  std::atomic<std::uint32_t> missed_{0};  // a helper found the lock taken

  cairn::engine engine_;
  std::shared_ptr<run_state> run_;
  std::shared_ptr<const topology> topo_;
  std::unique_ptr<transport> tp_;
  bool ended_ = false;
  int tag_ub_ = 32767;
  const node_regions* node_memory_ = nullptr;
  std::shared_ptr<const group_members> world_group_;

  struct layer_entry {
    void* state;
    layer_hooks hooks;
  };
  std::vector<layer_entry> layers_;  // in registration order
  std::uint32_t busy_ = 0;           // bit per layer: its advance runs on the next test
  bool just_polled_ = false;         // within progress(), after its poll (poll_transport)
  // Layers' states by slot (layer<T>()), and their owners in the order made; after tp_, so
  // they go before the transport does.
  std::array<void*, max_layer_slots> layer_states_{};
  std::vector<std::shared_ptr<void>> layer_owners_;
  // Out of line and cold: the hot paths that ask for a layer keep their registers.
  template <class T>
  [[gnu::noinline, gnu::cold]] void* make_layer() {
    auto made = std::make_shared<T>(*this);
    layer_owners_.push_back(made);
    return layer_states_[static_cast<std::size_t>(layer_slot<T>)] = made.get();
  }

  double watchdog_s_;
  std::uint64_t watched_epoch_ = 0;
  std::uint64_t idle_epoch_ = 0;   // progress_epoch_ at the last idle: a change restarts the spins
  double watched_since_ = 0;       // monotonic seconds when watched_epoch_ was last seen to change
  double ended_wait_since_ = -1;   // since when waits have needed an ended rank with no progress
  std::uint64_t ended_epoch_ = 0;  // progress_epoch_ then
  // Every rank's published wait (run_state::waits, or node memory on MPI), empty where the
  // ranks cannot see each other's: then no deadlock is detected.
  std::vector<rank_wait*> waits_;
  double deadlock_scan_ = 0;           // when check_deadlock last looked at every rank
  std::vector<double> deadlock_seen_;  // each rank's stuck_since at that look (empty: none)
  // Counts the waits that parked afresh: one number spans a wait's time without progress.
  std::uint64_t wait_episode_ = 0;
  const char* watched_call_ = "";  // what the current wait is for
  // watch_across_nodes, used when waits_ is empty on more than one rank.
  bool watch_by_notices_ = false;
  std::uint32_t watch_round_ = 0;  // the round asked last (0: none yet)
  bool watch_open_ = false;        // its answers are not all in
  double watch_next_ = 0;          // when the next round may start
  struct watch_answer {
    std::uint32_t round = 0;
    std::uint64_t episode = 0;
    double stuck_s = 0;
    std::string call;
  };
  std::vector<watch_answer> watch_answers_;  // by rank: its last answer
  std::vector<std::uint64_t> watch_prior_;   // by rank: its episode in the last full round
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

/// Monotonic clock in seconds.
double now_s() noexcept;

}  // namespace cairn::detail
