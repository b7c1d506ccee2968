#pragma once
/// \file
/// Internal: starting a planned array transfer.

#include <cstdint>
#include <memory>

namespace cairn {
class group;
class request;
class redistribution_plan;
struct transfer_options;

namespace detail {
class rank_context;
}  // namespace detail

namespace detail {

/// Starts executing `plan` (this rank's part) from `src` (local part of the source) into
/// `dst` (local part of the destination). `ctx` is the caller's runtime; `tag_key` separates
/// transfers between the same groups that may be in flight together.
request start_plan(rank_context& ctx, const char* call,
                   std::shared_ptr<const redistribution_plan> plan, const void* src, void* dst,
                   std::uint64_t tag_key, const transfer_options& opts);

/// The caller's runtime from whichever of the two groups it belongs to (nullptr: neither).
rank_context* context_of(const cairn::group& a, const cairn::group& b, const char* call);

/// True if this rank may read and write its peers' local parts through plain pointers: every
/// rank of the run in one address space on one node (the threads engine, not emulating several
/// nodes). The same on every rank of a run.
bool shares_address_space(const rank_context& ctx);

}  // namespace detail

}  // namespace cairn
