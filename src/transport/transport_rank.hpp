#pragma once
// The rank a transport serves, as the transport sees it: identity, the pool and list of the
// rank's pending operations, and the few things a transport tells its rank or asks of it.
// The runtime's rank_context derives from it; a transport never sees more of the rank (and
// src/transport includes nothing from src/runtime).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/request_state.hpp"

namespace cairn::detail {

class transport_rank {
 public:
  transport_rank(int rank, int size, const std::atomic<bool>* aborting) noexcept
      : rank_(rank), size_(size), aborting_(aborting) {}
  virtual ~transport_rank();
  transport_rank(const transport_rank&) = delete;
  transport_rank& operator=(const transport_rank&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// A fresh pending state, linked into the rank's list of pending operations (space 0: set
  /// `space` after it for a receive of a keyed context).
  request_state* acquire(request_state::kind k, const char* call, int peer, int tag, msg_context c,
                         void* buf, std::size_t capacity);
  /// Returns a state to the pool.
  void release(request_state* s) noexcept;

  /// Marks that something happened on this rank (arrival, completion): resets the watchdog.
  void note_progress() noexcept { ++progress_epoch_; }
  /// True once another rank of the run failed (a parked rank must wake up for it).
  bool aborting() const noexcept { return aborting_->load(std::memory_order_seq_cst); }

  /// True if something the rank waits for above the transport (a collective's word in shared
  /// memory) may have changed: a park re-checks it after announcing itself.
  virtual bool ready_above() const noexcept = 0;
  /// Called by another thread (progress mode `peers`): advances this rank if it is outside
  /// cairn with something pending. Never blocks.
  virtual bool help() noexcept = 0;

 protected:
  /// The rank's pending operations, linked through active_next (newest first).
  request_state* pending_list() const noexcept { return active_; }
  /// Helpers may advance this rank (launch_options::progress): count its pending states.
  bool helped_ = false;
  std::atomic<std::uint32_t> outstanding_{0};  // pending states (helpers skip idle ranks)
  std::uint64_t progress_epoch_ = 0;

 private:
  int rank_;
  int size_;
  const std::atomic<bool>* aborting_;
  std::vector<request_state*> pool_;  // free states
  std::vector<std::unique_ptr<request_state[]>> slabs_;
  request_state* active_ = nullptr;  // pending operations (doubly linked)
};

}  // namespace cairn::detail
