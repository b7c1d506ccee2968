#pragma once
// The progress engine of collectives: runs a schedule round by round on top of the transport.
// Every cairn call that tests, waits or progresses advances every running collective of the
// rank (coll_rank::advance), so collectives move while the user waits on anything.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/schedule.hpp"
#include "coll/engine/group_numbers.hpp"
#include "transport/request_state.hpp"

namespace cairn::detail {

class rank_context;
struct board_call;
struct group_members;

/// What every member's part of one collective call shares beside its algorithm: bytes per rank
/// (0 where counts legitimately differ: the v-collectives) and the root (-1: none).
struct call_shape {
  std::size_t bytes = 0;
  int root = -1;
};

/// Starts `plan` on the group of `t` with the given buffers, as the collective numbered
/// `number` there (coll_rank::next_seq); returns its request. The collective releases the
/// number when it completes.
request start_schedule(coll_target t, const char* call, std::shared_ptr<const coll::schedule> plan,
                       const void* in, void* out, op_binding op, numbered number, call_shape shape);

/// Turns the request `s` of board gate `gate` whose signatures agreed (prepared::gate) into its
/// running schedule, numbered `number` on `members` (which it releases when complete), and
/// advances it; true when complete. Takes the schedule and the operation out of `gate`, which
/// the caller then recycles.
bool continue_as_schedule(rank_context& ctx, request_state* s, board_call& gate,
                          std::shared_ptr<const group_members> members, numbered number);

/// A fingerprint of an algorithm by its schedule's name, the same in every process.
std::uint64_t plan_fingerprint(const std::string& name) noexcept;

/// Advances a running collective; true when it is complete (then s->done is set).
bool coll_advance(rank_context& ctx, request_state* s);
/// Frees a completed collective's state; false (and its message in `error`) if it failed.
bool coll_finish(request_state* s, std::string& error);
/// Withdraws a running collective (exception unwinding): cancels its pending messages.
void coll_cancel(rank_context& ctx, request_state* s);
/// Of the collectives `running`, the one by messages that holds number `n`'s tag (null: none).
request_state* coll_holding(const std::vector<request_state*>& running, const numbered& n);
/// One line for the watchdog: schedule name, round, pending messages.
std::string coll_describe(const request_state* s);

/// The tag of a collective's messages: its number on the group (31 bits). The group's
/// identity is the rest of their match key (the transport's space), and collectives use a
/// message context of their own, so neither another group's nor the user's messages match.
inline int coll_tag(std::uint32_t seq) noexcept { return static_cast<int>(seq & 0x7FFFFFFFu); }

}  // namespace cairn::detail
