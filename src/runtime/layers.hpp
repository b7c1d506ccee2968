#pragma once
// How the layers above the runtime (collectives, aggregated messages, arrays) plug into a rank
// without the runtime naming them: a typed slot for each layer's per-rank state, and the hooks
// the rank calls on every test, wait, park, watchdog report and at the end of the rank's
// function. See ARCHITECTURE.md ("How a call travels").

#include <exception>
#include <iosfwd>
#include <string>

#include "transport/request_state.hpp"

namespace cairn::detail {

class rank_context;

/// How a layer finishes, withdraws and describes an operation it runs under a request
/// (request_state::kind::layer, `request_state::ops`).
struct layer_operation_ops {
  /// Frees a completed operation's state; returns its failure (null if it succeeded), which
  /// the rank raises once `s` is back in the pool.
  std::exception_ptr (*finish)(rank_context& ctx, request_state* s);
  /// Withdraws a running operation during exception unwinding; never blocks on peers.
  void (*cancel)(rank_context& ctx, request_state* s);
  /// One line for the watchdog: what the operation is and what it waits for.
  std::string (*describe)(const request_state* s);
};

/// What a layer registers with its rank (rank_context::add_layer). Only `advance` is required.
struct layer_hooks {
  /// Advances the layer's work without blocking; returns true while the layer has more, so that
  /// the rank calls it again on every test, wait and progress (the layer calls
  /// rank_context::mark_busy when new work arrives after it returned false).
  bool (*advance)(void* state) = nullptr;
  /// Whether helpers (progress modes `peers` and `thread`) may call `advance` from another
  /// thread, under the rank's lock. False where user code runs inside (channel handlers run
  /// on their rank's thread).
  bool helpers_may_advance = false;
  /// True if something the layer waits for outside the transport may have changed; a park
  /// re-checks it before sleeping. Null: never.
  bool (*ready)(const void* state) = nullptr;
  /// Appends the layer's pending work to a watchdog report. Null: nothing to say.
  void (*describe)(const void* state, std::ostream& os) = nullptr;
  /// The rank's function returned normally: completes what the layer still runs in the
  /// background, and throws what it found wrong there. Null: nothing to complete.
  void (*finish)(void* state) = nullptr;
  /// The rank whose word in node memory the layer's blocked wait needs next (not a message:
  /// those show as pending receives), with the waiting operation's name in `call`; -1 if
  /// none. Lets a wait fail once that rank has ended. Null: the layer never waits that way.
  int (*awaited_rank)(const void* state, const char** call) = nullptr;
};

/// Slots a rank_context has for layer states (rank_context::layer): one per type T that asks.
inline constexpr int max_layer_slots = 32;
/// Numbers the next slot (during static initialization); aborts past max_layer_slots.
int allocate_layer_slot() noexcept;
/// The slot of layer state type T in every rank_context. Numbered during static
/// initialization, so a lookup is a plain load (no guard on the hot path).
template <class T>
inline const int layer_slot = allocate_layer_slot();

}  // namespace cairn::detail
