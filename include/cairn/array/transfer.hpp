#pragma once
/// \file
/// Moving distributed arrays: `redistribute(src, dst)` within or across groups, and the
/// request of a running array transfer.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "cairn/array/darray.hpp"
#include "cairn/array/detail/transfer.hpp"
#include "cairn/array/plan.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn {

namespace detail {
class rank_context;
struct array_exec;
}  // namespace detail

/// How an array moves between tasks (HPF/MPI sections 2 and 2.3).
enum class transfer_strategy : std::uint8_t {
  automatic,    ///< centralized up to transfer_options::centralized_max_bytes, else parallel
  parallel,     ///< every sender to every receiver it shares elements with
  centralized,  ///< gather on one rank, one message, scatter
};

/// Time this rank spent in each step of array transfers (HPF/MPI section 5's breakdown), added
/// up over every transfer given this record through transfer_options::steps. Costs nothing when
/// no record is given.
struct transfer_steps {
  double exchange_s = 0;  ///< descriptor exchange: posted until the other task's descriptor arrived
  double plan_s = 0;      ///< scheduling: descriptor checks, strategy and plan (cached or computed)
  double pack_s = 0;      ///< packing strided pieces for sending, and this rank's copy to itself
  double transmit_s = 0;  ///< the rest of the stages: messages in flight, waiting for peers
  double unpack_s = 0;    ///< unpacking into place (threads engine: the direct copies)
  std::int64_t transfers = 0;  ///< transfers completed
  /// Peers whose parts this rank copied straight from their memory (transfer_options::direct)
  std::int64_t straight_peers = 0;
};

/// A slab of an array transfer now in place on its receiver (transfer_options::on_slab): the
/// `count` elements, from element `first` in the order both sides agree on, of what `peer`
/// sends this rank.
struct slab_arrival {
  const redistribution_plan* plan =
      nullptr;                      ///< the receiver's plan (of the stage writing the destination)
  const plan_peer* peer = nullptr;  ///< the sender (for this rank's own part: itself)
  std::int64_t first = 0;           ///< first element of the slab
  std::int64_t count = 0;           ///< elements in the slab
  /// Calls f(offset, len) for every run of destination elements the slab wrote (offsets in
  /// elements in the receiver's local part).
  template <class F>
  void for_each_run(F&& f) const {
    plan->for_each_run(*peer, first, count,
                       [&](std::int64_t, std::int64_t t, std::int64_t l) { f(t, l); });
  }
};

/// Options of array transfers.
struct transfer_options {
  /// Strategy of inter-task transfers (redistribute is always parallel).
  transfer_strategy strategy = transfer_strategy::automatic;
  /// Largest array (bytes) that the automatic strategy moves centralized (the sender's value
  /// decides). Default 0, i.e. always parallel (but for empty arrays): measured on one node
  /// (array-pingpong, both engines, tasks of 1, 2 and 4 ranks, arrays of 128 B to 32 KiB),
  /// centralized was slower at all but a few points within noise (1.2-1.5x at 128 B - 2 KiB
  /// between one-rank tasks, more for larger arrays): it saves no descriptor exchange here and
  /// adds two stages. Raise it where messages between tasks are costly (HPF/MPI section 2.3).
  std::size_t centralized_max_bytes = 0;
  /// Receivers copy straight from the senders' memory (no message carries the data): on the
  /// threads engine always, on the MPI engine on one node where rows are long and the kernel
  /// allows cross-memory reads. False forces messages.
  bool direct = true;
  /// Chunked pipelining: each peer's data travels as up to `chunks` messages (slabs of about
  /// equal size, never empty), sent as each is packed and unpacked as each arrives, so both
  /// sides overlap packing, transmission and unpacking. Must be >= 1 and the same on every rank
  /// of a redistribution (between tasks, the larger of the two tasks' values is used). Direct
  /// copies have nothing in flight and copy each peer's part at once.
  int chunks = 1;
  /// If set, this rank adds the time of each step of the transfer to `*steps` (which must
  /// outlive the transfer, and for persistent transfers every start).
  transfer_steps* steps = nullptr;
  /// If set, called on a receiving rank for every slab once it is in place in the destination
  /// (so the rank can start on it while the rest is in flight): each destination element is
  /// reported once — direct copies and this rank's own part as one slab per peer. Runs inside
  /// the transfer's test/wait (or another call advancing it); it must not call cairn.
  std::function<void(const slab_arrival&)> on_slab = nullptr;
};

/// Handle of a running array transfer: a cairn::request like every other operation's, so
/// `wait_all`, `wait_any` and `test_all` take it with point-to-point and collective requests.
/// `test` advances it (receivers unpack each message as it arrives, or copy straight from the
/// sender on the threads engine); `wait` blocks. A request destroyed while pending is waited
/// for (withdrawn during unwinding).
using array_request = request;

/// Starts moving `src` into `dst` (same global shape, any layouts, over the same group or two
/// groups — disjoint or overlapping). Every member of either group calls it, in the same order
/// as other redistributions between the same groups. The plan is cached; only pairs that share
/// elements communicate. `src` must stay untouched and `dst` unread until completion. Throws
/// cairn::error before anything is sent on bad input (shapes, `opts.chunks` < 1).
template <class T, int N>
array_request iredistribute(const darray<T, N>& src, darray<T, N>& dst,
                            const transfer_options& opts = {}) {
  const char* call = "iredistribute";
  const auto& sl = src.get_layout();
  const auto& dl = dst.get_layout();
  detail::rank_context* ctx = detail::context_of(sl.group(), dl.group(), call);
  if (ctx == nullptr) return {};
  const int me =
      sl.group().rank() >= 0 ? detail::caller_rank(sl.group()) : detail::caller_rank(dl.group());
  if (static_cast<const void*>(&src) == static_cast<const void*>(&dst))
    detail::fail(call, me, "source and destination are the same array");
  const auto t0 =
      opts.steps ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  auto plan = detail::cached_plan(call, me, sizeof(T), sl.desc(), sl.group().members(), dl.desc(),
                                  dl.group().members(), opts.chunks);
  if (opts.steps)
    opts.steps->plan_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return detail::start_plan(*ctx, call, std::move(plan), src.data(), dst.data(), 0, opts);
}

/// Blocking iredistribute.
template <class T, int N>
void redistribute(const darray<T, N>& src, darray<T, N>& dst, const transfer_options& opts = {}) {
  iredistribute(src, dst, opts).wait();
}

}  // namespace cairn
