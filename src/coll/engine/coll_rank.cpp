#include "coll/engine/coll_rank.hpp"

#include <algorithm>
#include <ostream>

#include "coll/board/shared_memory_flat.hpp"
#include "coll/board/shared_memory_group.hpp"
#include "coll/engine/executor.hpp"

namespace cairn::detail {

struct coll_rank_hooks {
  static bool advance(void* state) { return static_cast<coll_rank*>(state)->advance(); }
  static bool ready(const void* state) {
    return static_cast<const coll_rank*>(state)->board_ready();
  }
  static void describe(const void* state, std::ostream& os) {
    const auto& c = *static_cast<const coll_rank*>(state);
    if (c.wait_.word)
      os << "  " << c.wait_.call << ": shared-memory collective #" << c.wait_.value
         << " on the world, waiting for rank " << c.wait_.peer << "\n";
    if (c.group_board.pending)
      os << "  " << c.group_board.pending
         << " shared-memory collective(s) on groups (listed above if non-blocking; "
         << c.group_board.tails
         << " returned to their caller, still reading the other members' slots)\n";
  }
  static int awaited_rank(const void* state, const char** call) {
    const auto& c = *static_cast<const coll_rank*>(state);
    if (c.wait_.word) {
      *call = c.wait_.call;
      return c.wait_.peer;
    }
    *call = c.group_board.awaited_call;
    return c.group_board.awaited;
  }
  static void finish_tails(void* state) {
    board_finish_tails(static_cast<coll_rank*>(state)->ctx_);
  }
  static std::exception_ptr finish(rank_context& ctx, request_state* s) {
    std::string err;
    if (coll_finish(s, err)) return nullptr;
    try {
      fail(s->call, ctx.rank(), err);
    } catch (...) {
      return std::current_exception();
    }
  }
  static void cancel(rank_context& ctx, request_state* s) {
    auto& running = coll_state(ctx).running_;
    if (auto at = std::find(running.begin(), running.end(), s); at != running.end())
      running.erase(at);  // keeps issue order (see advance)
    coll_cancel(ctx, s);
  }
};

namespace {
// Collectives run user operators, never user handlers: helpers may advance them.
constexpr layer_hooks hooks{&coll_rank_hooks::advance,      true,
                            &coll_rank_hooks::ready,        &coll_rank_hooks::describe,
                            &coll_rank_hooks::finish_tails, &coll_rank_hooks::awaited_rank};
constexpr layer_operation_ops operation_ops{&coll_rank_hooks::finish, &coll_rank_hooks::cancel,
                                            &coll_describe};
}  // namespace

// The board's part of every node region, reserved before any region is sized.
const std::size_t board_part = node_regions::reserve(node_board::part_bytes, &node_board::format);
std::size_t node_board::part_offset() noexcept { return board_part; }
// The staging's part (shared_memory_staged.cpp).
const std::size_t staging_part =
    node_regions::reserve(node_staging::part_bytes, &node_staging::format);
std::size_t node_staging::part_offset() noexcept { return staging_part; }

coll_rank::coll_rank(rank_context& ctx) : ctx_(ctx), layer_(ctx.add_layer(this, hooks)) {
  if (ctx.node_memory()) {
    view_.emplace(*ctx.node_memory());
    staging_.emplace(*ctx.node_memory());
  }
}

void coll_rank::add(request_state* s) {
  s->ops = &operation_ops;
  running_.push_back(s);
  ctx_.mark_busy(layer_);
}

void coll_rank::find_numbers(std::uint64_t id) {
  group_numbers& n = seq_[id];
  if (n.held.empty()) {
    n.mask = (1u << group_numbers::window_bits) - 1;
    n.held.assign((std::size_t{n.mask} + 64) / 64, 0);
  }
  last_seq_ = &n;
  last_seq_id_ = id;
}

void coll_rank::await_number(group_numbers& n, std::uint32_t seq) {
  // Only a rank with a whole window of non-blocking collectives in flight on one group gets
  // here. It waits as for the collective holding the tag: a deadlock or an ended peer is
  // reported naming that collective, not hung.
  std::uint64_t spins = 0;
  for (;;) {
    ctx_.progress();
    if (!n.holds(seq)) return;
    ctx_.idle(coll_holding(running_, {&n, seq}), spins);
  }
}

bool coll_rank::advance() {
  // Before the checks: a ring after this load keeps a park from sleeping (board_ready).
  if (group_board.pending) group_board.seen = group_board.bell->load(std::memory_order_seq_cst);
  if (board.has_tails()) board_advance_tails(ctx_);
  if (group_board.tails) group_board_advance_tails(ctx_);
  // In issue order, keeping it: a board collective completes only after this rank's earlier
  // ones, so one pass moves all that can move. Out of order, a later one would wait for an
  // earlier one finished further on in the pass, and with progress helpers (who advance a rank
  // once per peer event) nothing might come to move it again.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i)  // coll_advance may append: size() each time
    if (!coll_advance(ctx_, running_[i])) running_[kept++] = running_[i];
  running_.resize(kept);
  return !running_.empty() || board.has_tails() || group_board.tails;
}

}  // namespace cairn::detail
