#pragma once
/// \file
/// Moving distributed arrays: `redistribute(src, dst)` within or across groups, and the
/// request of a running array transfer.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cairn/array/darray.hpp"
#include "cairn/array/plan.hpp"

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

/// Options of array transfers.
struct transfer_options {
  /// Strategy of inter-task transfers (redistribute is always parallel).
  transfer_strategy strategy = transfer_strategy::automatic;
  /// Largest array (bytes) that the automatic strategy moves centralized.
  std::size_t centralized_max_bytes = 2048;
  /// Threads engine: receivers copy straight from the senders' memory (no message carries
  /// the data). False forces messages (what the MPI engine always does).
  bool direct = true;
};

/// Handle of a running array transfer (move-only). `test` advances it (receivers unpack each
/// message as it arrives, or copy straight from the sender on the threads engine); `wait`
/// blocks. A request destroyed while pending is waited for (withdrawn during unwinding).
class array_request {
 public:
  /// A completed request.
  array_request() noexcept;
  /// Wraps a started transfer (internal).
  explicit array_request(std::unique_ptr<detail::array_exec> e) noexcept;
  /// Takes over `other`'s transfer.
  array_request(array_request&& other) noexcept;
  /// Waits for this request's transfer (unless unwinding), then takes over `other`'s.
  array_request& operator=(array_request&& other) noexcept;
  array_request(const array_request&) = delete;
  array_request& operator=(const array_request&) = delete;
  /// Waits for a pending transfer (during exception unwinding: withdraws it).
  ~array_request();
  /// Advances the transfer; true once this rank's part is complete.
  bool test();
  /// Blocks until this rank's part is complete.
  void wait();
  /// True once complete.
  [[nodiscard]] bool complete() const noexcept { return e_ == nullptr; }

 private:
  std::unique_ptr<detail::array_exec> e_;
};

namespace detail {

/// Starts executing `plan` (this rank's part) from `src` (local part of the source) into
/// `dst` (local part of the destination). `ctx` is the caller's runtime; `tag_key` separates
/// transfers between the same groups that may be in flight together.
array_request start_plan(rank_context& ctx, const char* call,
                         std::shared_ptr<const redistribution_plan> plan, const void* src,
                         void* dst, std::uint64_t tag_key, const transfer_options& opts);

/// The caller's runtime from whichever of the two groups it belongs to (nullptr: neither).
rank_context* context_of(const cairn::group& a, const cairn::group& b, const char* call);

}  // namespace detail

/// Starts moving `src` into `dst` (same global shape, any layouts, over the same group or two
/// groups — disjoint or overlapping). Every member of either group calls it, in the same order
/// as other redistributions between the same groups. The plan is cached; only pairs that share
/// elements communicate. `src` must stay untouched and `dst` unread until completion.
template <class T, int N>
array_request iredistribute(const darray<T, N>& src, darray<T, N>& dst,
                            const transfer_options& opts = {}) {
  const char* call = "iredistribute";
  const auto& sl = src.get_layout();
  const auto& dl = dst.get_layout();
  detail::rank_context* ctx = detail::context_of(sl.group(), dl.group(), call);
  if (ctx == nullptr) return {};
  const int me = sl.group().rank() >= 0 ? detail::caller_rank(sl.group()) : detail::caller_rank(dl.group());
  if (static_cast<const void*>(&src) == static_cast<const void*>(&dst))
    detail::fail(call, me, "source and destination are the same array");
  auto plan = detail::cached_plan(call, me, sizeof(T), sl.desc(), sl.group().members(),
                                  dl.desc(), dl.group().members());
  return detail::start_plan(*ctx, call, std::move(plan), src.data(), dst.data(), 0, opts);
}

/// Blocking iredistribute.
template <class T, int N>
void redistribute(const darray<T, N>& src, darray<T, N>& dst, const transfer_options& opts = {}) {
  iredistribute(src, dst, opts).wait();
}

}  // namespace cairn
