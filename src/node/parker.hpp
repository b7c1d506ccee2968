#pragma once
// Lets a rank thread sleep until a peer has given it something to do. A peer that hands over
// work calls wake() only when the rank announced it is parking, so the fast path costs one
// load. Linux: futex; elsewhere: short sleeps.

#include <atomic>
#include <cstdint>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#endif
#include <algorithm>
#include <chrono>
#include <thread>

namespace cairn::detail {

class parker {
 public:
  /// Step 1 of parking: announce and return the ticket to pass to sleep(). The caller must then
  /// re-check its wake-up condition before calling sleep() (the peer may have acted just before
  /// the announcement).
  std::uint32_t prepare() noexcept {
    const std::uint32_t ticket = seq_.load(std::memory_order_seq_cst);
    sleeping_.store(true, std::memory_order_seq_cst);
    return ticket;
  }
  /// Step 2: sleep until wake() or the timeout; then clear the announcement.
  void sleep(std::uint32_t ticket, double max_s) noexcept {
#if defined(__linux__)
    timespec ts;
    ts.tv_sec = static_cast<time_t>(max_s);
    ts.tv_nsec = static_cast<long>((max_s - static_cast<double>(ts.tv_sec)) * 1e9);
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&seq_), FUTEX_WAIT_PRIVATE, ticket, &ts,
            nullptr, 0);
#else
    (void)ticket;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(max_s, 50e-6)));
#endif
    sleeping_.store(false, std::memory_order_relaxed);
  }
  /// Cancels an announcement without sleeping.
  void cancel() noexcept { sleeping_.store(false, std::memory_order_relaxed); }

  /// Called by a peer after it made work visible to the owner (seq_cst, pairs with prepare()).
  void wake() noexcept {
    if (!sleeping_.load(std::memory_order_seq_cst)) return;
    wake_always();
  }
  /// Wakes unconditionally (run abort).
  void wake_always() noexcept {
    seq_.fetch_add(1, std::memory_order_seq_cst);
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&seq_), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
#endif
  }

 private:
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  std::atomic<std::uint32_t> seq_{0};
  std::atomic<bool> sleeping_{false};
};

}  // namespace cairn::detail
