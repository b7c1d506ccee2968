#pragma once
// The shared-memory collectives on groups (shared_memory_group.cpp): barrier, bcast, reduce,
// allreduce and the generalized reduce on any group of ranks that share the node, through the
// node board's keyed slots. Collectives on the world use shared_memory_flat.hpp instead.

#include <cstdint>
#include <string>

#include "cairn/coll/detail/prepare.hpp"
#include "transport/request_state.hpp"

namespace cairn::detail {

class rank_context;

/// Runs a prepared group board collective to its end, with no request (a blocking call).
void run_on_group_board(const prepared& p);
/// Starts a prepared group board collective; its request is a collective's (kind::layer)
/// marked by `phase == group_board_phase`, advanced and finished by the functions below.
request start_on_group_board(const prepared& p);

inline constexpr std::uint8_t group_board_phase = 2;
/// As coll_advance, coll_finish, coll_cancel and coll_describe (executor.hpp).
bool group_board_advance(rank_context& ctx, request_state* s);
bool group_board_finish(request_state* s, std::string& error);
void group_board_cancel(rank_context& ctx, request_state* s);
std::string group_board_describe(const request_state* s);
/// Advances the rank's group tails (group_board_watch), from its progress engine.
void group_board_advance_tails(rank_context& ctx);

}  // namespace cairn::detail
