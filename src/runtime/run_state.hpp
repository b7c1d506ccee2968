#pragma once
// State shared by all ranks of one run (threads engine: all rank threads; MPI: this process).

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cairn::detail {

/// One rank's wait as the other ranks see it (rank_context::idle publishes it), so that a rank
/// can tell a deadlock — every rank waiting, none progressing — from a slow run. Kept in
/// process memory on the threads engine and in node memory on MPI (when every process sits on
/// one node): lock-free atomics and no pointers, so that it reads the same in every process.
struct alignas(64) rank_wait {
  std::atomic<double> heartbeat{-1};   ///< monotonic s of the wait's last park (-1: none yet)
  std::atomic<double> stuck_since{0};  ///< since when the wait saw no progress
  /// Rank 0's record only: set by the first rank to report a deadlock (one report per run).
  std::atomic<std::uint32_t> reported{0};
  /// What the rank waits in: the call's name, NUL-padded, cut at `call_chars` characters.
  std::atomic<std::uint64_t> call[5] = {};
  static constexpr std::size_t call_chars = sizeof call - 1;

  /// Publishes `name` (cut at call_chars characters) as what the rank waits in.
  void set_call(const char* name) noexcept {
    char text[sizeof call] = {};
    std::strncpy(text, name, call_chars);
    for (std::size_t i = 0; i < std::size(call); ++i) {
      std::uint64_t word;
      std::memcpy(&word, text + i * sizeof word, sizeof word);
      call[i].store(word, std::memory_order_relaxed);
    }
  }
  /// The name last published (a reader may see a mix of two names while it changes).
  std::string call_name() const {
    char text[sizeof call + 1] = {};
    for (std::size_t i = 0; i < std::size(call); ++i) {
      const std::uint64_t word = call[i].load(std::memory_order_relaxed);
      std::memcpy(text + i * sizeof word, &word, sizeof word);
    }
    return text;
  }
};
static_assert(sizeof(rank_wait) == 64 && std::atomic<double>::is_always_lock_free &&
              std::atomic<std::uint64_t>::is_always_lock_free);

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

  /// Threads engine: every rank's wait (null on MPI, where they live in node memory).
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
