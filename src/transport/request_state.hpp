#pragma once
// The engine-independent record of one outstanding operation, pooled per rank.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cairn/runtime/status.hpp"

namespace cairn::detail {

/// Message contexts: separate matching spaces so that cairn's own layers never match user
/// messages (threads: part of the match key; MPI: one duplicated communicator each).
enum class msg_context : std::uint8_t { user = 0, coll = 1, msg = 2, array = 3 };
inline constexpr int msg_context_count = 4;

/// Contexts whose messages also match on a 64-bit `space` (a group's identity, an array
/// transfer's key) beside their tag, so that traffic of two groups or transfers never meets
/// however their identities hash. Others always use space 0. A keyed message also carries a
/// 32-bit check word that takes no part in matching: its receive gets it (request_state::
/// check_word), so that the layer above can tell a message of another call (collectives: the
/// call's signature).
inline constexpr bool keyed(msg_context c) noexcept {
  return c == msg_context::coll || c == msg_context::array;
}

const char* to_string(msg_context c) noexcept;

struct layer_operation_ops;  // defined by the runtime (runtime/layers.hpp); opaque here

struct request_state {
  /// A message (send, recv) of the transport, or an operation of a layer above it (a
  /// collective, ...) that completes through `done` and is finished, withdrawn and described
  /// by its layer's `ops`.
  enum class kind : std::uint8_t { send, recv, layer };

  /// Set (release) when complete; a peer thread may set it (threads engine, long sends).
  std::atomic<std::uint32_t> done{0};
  kind k = kind::send;
  msg_context ctx = msg_context::user;
  bool failed = false;           // a receive matched a message larger than its buffer
  std::uint8_t phase = 0;        // engine-defined progress of a multi-step operation
  std::uint32_t slot = 0;        // engine-defined index (mpi: slot in the pending-receive array)
  std::uint32_t check_word = 0;  // keyed contexts: what the message carried (not matched)
  const char* call = "";         // user-facing call, for errors and the watchdog
  int peer = 0;                  // destination, or source / any_source as posted
  int tag = 0;                   // as posted (any_tag allowed for receives)
  std::uint64_t space = 0;       // keyed contexts: the rest of the match key (never a wildcard)
  void* buf = nullptr;           // receive buffer (or send buffer, const-cast)
  std::size_t capacity = 0;      // bytes of buf
  std::size_t incoming = 0;      // size of the matched message when it did not fit
  status st{};                   // filled on completion

  request_state* prev = nullptr;  // engine-owned list (threads: posted receives)
  request_state* next = nullptr;
  request_state* active_prev = nullptr;  // the rank's list of pending operations
  request_state* active_next = nullptr;
  void* engine_ptr = nullptr;  // threads: envelope of a long send; mpi: staging buffer;
                               // layer: the layer's running operation
  const layer_operation_ops* ops = nullptr;    // kind::layer: its layer's functions
  alignas(8) unsigned char engine_data[16]{};  // mpi: the MPI_Request
};

}  // namespace cairn::detail
