#pragma once
// The collectives layer's state on one rank (its slot in rank_context, runtime/layers.hpp):
// the running collectives, each group's next sequence number, and what the board collectives
// track between calls (tails, the word a park watches, the groups' doorbell). The rank
// advances it through the hooks this layer registers; the runtime never names it.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "coll/board/board_layout.hpp"
#include "coll/board/shared_memory_direct.hpp"
#include "coll/engine/group_numbers.hpp"
#include "runtime/rank_context.hpp"
#include "transport/request_state.hpp"

namespace cairn::detail {

/// The rank's board collectives on the world (shared_memory_flat.cpp), numbered alike on every
/// rank (collectives on the world match in issue order): how many it started, completed (data
/// moved, in order) and finished (request done, in order: a direct one once every rank moved
/// its data), and a floor under what every rank completed (last seen).
struct board_progress {
  std::uint64_t started = 0, completed = 0, finished = 0, all_completed = 0;
  /// Chunks of the staged collectives completed so far (shared_memory_staged.cpp): where the
  /// next one's chunks start counting on the staging counters.
  std::uint64_t staged_chunks = 0;
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

/// What a board collective waits for: `word` to reach at least `value` (rank `peer`'s).
struct board_wait {
  const std::atomic<std::uint64_t>* word = nullptr;
  std::uint64_t value = 0;
  int peer = -1;
  const char* call = "";
};

/// The rank's collectives on groups that run on the board (shared_memory_group.cpp): how many
/// are unfinished, and the rank's doorbell with the value it had before they were last
/// checked. A ring since then means one of them may move.
struct group_board_watch {
  const std::atomic<std::uint64_t>* bell = nullptr;
  std::uint64_t seen = 0;
  int pending = 0;
  /// Of those, the tails (as board_progress::tail): finished for their caller, still reading
  /// and acknowledging the other members' slots; kept by the group board's `tail_store`.
  int tails = 0;
  std::shared_ptr<void> tail_store;
  /// A blocking group collective waiting for a member that has not published its slot: that
  /// member's world rank and the call (-1: none), for a wait that fails once it has ended.
  int awaited = -1;
  const char* awaited_call = "";
  /// This rank's keyed slots (bit i: slot i) that hold a collective it has not finished
  /// reading: their readers do not count the owner, so these stay taken until it did.
  std::uint32_t own_busy = 0;
  /// True while its slots ask their readers for a ring (group_slot::owner_waits).
  bool asked_ring = false;
};

class coll_rank {
 public:
  explicit coll_rank(rank_context& ctx);
  coll_rank(const coll_rank&) = delete;
  coll_rank& operator=(const coll_rank&) = delete;

  /// Registers a started collective's request (kind::layer): advanced by every test, wait
  /// and progress of the rank until complete, finished and described by this layer.
  void add(request_state* s);
  /// Advances every running collective and the board's tails as far as they go without
  /// blocking; true while any is left.
  bool advance();
  /// A board collective left a tail (here or on a group): the rank advances this layer again.
  void tail_added() noexcept { ctx_.mark_busy(layer_); }
  /// The next number of a collective on the group with identity `id` (its tag: coll_tag),
  /// held until that collective completes here (group_numbers::release). If the collective
  /// that had the same tag `window` numbers earlier still runs, the rank first advances until
  /// it completes.
  numbered next_seq(std::uint64_t id) {
    group_numbers& n = numbers_of(id);
    const std::uint32_t seq = n.next++;
    if (n.holds(seq)) [[unlikely]]
      await_number(n, seq);
    n.hold(seq);
    return {&n, seq};
  }
  /// Number `seq` of the group with identity `id`, taken earlier by next_seq.
  numbered numbers(std::uint64_t id, std::uint32_t seq) { return {&numbers_of(id), seq}; }
  /// The next number of a collective on the group that sends no messages (on the board),
  /// not held: every rank numbers the group's collectives alike whichever path each took.
  std::uint32_t skip_seq(std::uint64_t id) { return numbers_of(id).next++; }

  /// The board in the node's regions; null where the ranks share no node memory.
  const node_board* board_view() const noexcept { return view_ ? &*view_ : nullptr; }
  /// The staging in the node's regions (as board_view).
  const node_staging* staging_view() const noexcept { return staging_ ? &*staging_ : nullptr; }
  board_progress board;
  group_board_watch group_board;
  /// Scratch of the direct board collectives (shared_memory_direct.cpp), kept per rank: every
  /// member's published buffers, the accumulator of an in-place or non-root reduction, and a
  /// peer's segment read across processes. They grow to the largest seen, then stay.
  std::vector<direct_buffers> member_buffers;
  std::vector<std::byte> accumulator, peer_segment;
  /// Sets (or clears, with a default board_wait) what the rank waits for on the board, so that
  /// parking re-checks it and the watchdog reports it.
  void watch_board(const board_wait& w) noexcept { wait_ = w; }
  /// True if the awaited board word has its value, or the doorbell rang since the rank's group
  /// board collectives were last checked (seq_cst: pairs with the publisher's wake).
  bool board_ready() const noexcept {
    return (wait_.word && wait_.word->load(std::memory_order_seq_cst) >= wait_.value) ||
           (group_board.pending &&
            group_board.bell->load(std::memory_order_seq_cst) != group_board.seen);
  }

 private:
  friend struct coll_rank_hooks;
  rank_context& ctx_;
  int layer_;
  std::vector<request_state*> running_;
  group_numbers& numbers_of(std::uint64_t id) {
    // A rank issues collectives mostly on one group at a time: remember its numbers (map
    // elements never move) and skip the hash lookup.
    if (id != last_seq_id_ || !last_seq_) [[unlikely]]
      find_numbers(id);
    return *last_seq_;
  }
  void find_numbers(std::uint64_t id);
  void await_number(group_numbers& n, std::uint32_t seq);
  std::unordered_map<std::uint64_t, group_numbers> seq_;
  std::uint64_t last_seq_id_ = 0;
  group_numbers* last_seq_ = nullptr;
  board_wait wait_;
  std::optional<node_board> view_;
  std::optional<node_staging> staging_;
};

/// The collectives' state of rank `ctx` (made on first use).
inline coll_rank& coll_state(rank_context& ctx) { return ctx.layer<coll_rank>(); }
/// The board of rank `ctx`, which must share node memory with its peers (ctx.node_memory()).
inline const node_board& board_of(rank_context& ctx) { return *coll_state(ctx).board_view(); }

}  // namespace cairn::detail
