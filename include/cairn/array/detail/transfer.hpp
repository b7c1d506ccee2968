#pragma once
/// \file
/// Internal: starting a planned array transfer.

#include <cstddef>
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

/// True if this rank may copy straight from and into its peers' memory: shares_address_space,
/// or the MPI engine with every process on one node and cross-memory copies allowed (the same
/// rule as straight array transfers). The same on every rank of a run.
bool reaches_peer_parts(const rank_context& ctx);

/// One run of a straight copy with a peer: `bytes` at `local` (this rank) and at `remote` (the
/// peer's address).
struct peer_run {
  std::byte* local;   ///< here
  std::byte* remote;  ///< in the peer's memory
  std::size_t bytes;  ///< length
};

/// Copies every run of `runs` from world rank `peer`'s memory (or, with `write`, to it) where
/// the peer is another process (reaches_peer_parts, not shares_address_space), the runs batched
/// into as few system calls as the kernel takes. Throws cairn::error naming `call` if a copy
/// fails.
void copy_with_peer(rank_context& ctx, const char* call, int peer, bool write, const peer_run* runs,
                    std::size_t n);

}  // namespace detail

}  // namespace cairn
