#pragma once
// State shared by all ranks of one run (threads engine: all rank threads; MPI: this process).

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cairn::detail {

/// One rank's wait as the other ranks of a threads run see it (rank_context::idle publishes
/// it), so that a rank can tell a deadlock — every rank waiting, none progressing — from a
/// slow run.
struct alignas(64) rank_wait {
  std::atomic<double> heartbeat{-1};       ///< monotonic s of the wait's last park (-1: none yet)
  std::atomic<double> stuck_since{0};      ///< since when the wait saw no progress
  std::atomic<const char*> call{nullptr};  ///< what the rank waits in (a static string)
};

struct run_state {
  /// Set when any rank failed; every wait loop then unwinds with run_aborted.
  std::atomic<bool> aborting{false};
  /// Wakes every parked rank (threads engine), so that they see `aborting`.
  std::function<void()> wake_all;
  /// Engine-specific end of the whole run after a failure has been recorded (MPI: MPI_Abort).
  std::function<void(const std::string&)> hard_abort;
  /// The program's arguments without cairn's flags, argv[0] first (world::args); set before
  /// any rank starts and never changed during the run.
  std::vector<std::string> args;

  /// Threads engine: every rank's wait (null on MPI, where a process holds one rank).
  std::unique_ptr<rank_wait[]> waits;

  std::mutex m;
  int failed_rank = -1;
  std::string message;

  /// Records the first failure and releases every rank. Returns true for the first one.
  bool fail(int rank, const std::string& what) {
    {
      std::lock_guard lock(m);
      if (failed_rank >= 0) return false;
      failed_rank = rank;
      message = what;
    }
    aborting.store(true, std::memory_order_seq_cst);
    if (hard_abort) hard_abort(what);
    if (wake_all) wake_all();
    return true;
  }
};

}  // namespace cairn::detail
