#pragma once
// A running array transfer on one rank: an optional descriptor exchange, then stages (each a
// redistribution plan with its source and destination memory) run in order. Reusable: a
// persistent transfer restarts the same object, keeping plans, buffers and vector capacity.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cairn/array/transfer.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn::detail {

class offer_words;

/// What a message of the array context is matched by besides its peer (a keyed context of the
/// transport): a transfer's 64-bit key, whole, and the message's kind (0 data or offers, 1 ack,
/// 2 descriptor, 3 data under the plan's agreement).
struct array_match {
  std::uint64_t key = 0;
  int kind = 0;
};

/// One plan to run: this rank's sends and receives between `src` and `dst`.
struct stage {
  std::shared_ptr<const redistribution_plan> plan;
  const std::byte* src = nullptr;  ///< this rank's local part of the stage's source
  std::byte* dst = nullptr;        ///< this rank's local part of the stage's destination
  array_match data_tag{};          ///< match key of data (or address) messages
  array_match ack_tag{};           ///< of the receivers' acknowledgements (direct copies)
  bool cross_memory = true;        ///< MPI engine: may copy straight where runs are long
  /// Match key of data messages where the stage sends data rather than offers (none:
  /// data_tag). Its key holds the plan's agreement, so ranks that planned different transfers
  /// never take each other's data: their receives stay unmatched, and the wait fails as
  /// deadlocked or on an ended rank (offers carry the agreement instead, and the receiver names
  /// the disagreement).
  std::optional<array_match> message_tag{};
};

/// Direct copies: what a sender sends each receiver instead of the data. The receiver claims
/// the offer word (in the sender's node region, array/offer_words.hpp) before copying from `src`
/// and releases it after; a sender whose transfer unwinds withdraws every offer not yet claimed and
/// waits out one being copied, so no receiver copies from a local part that is gone (it reports the
/// withdrawal instead). Generations tell a word's uses apart.
struct part_offer {
  const std::byte* src = nullptr;  ///< the sender's local part (in its address space)
  std::uint64_t generation = 0;    ///< of the offer word; 0: none (every word was in use)
  std::uint64_t word = 0;          ///< the offer word's index in the sender's region
  std::uint64_t agreement = 0;     ///< the sender's redistribution_plan::agreement
};

struct array_exec {
  rank_context* ctx = nullptr;
  const char* call = "";
  bool direct = false;  // receivers may copy from the senders' memory (threads; MPI on one node)
  bool stage_direct = false;  // the current stage does (MPI: where its runs are long)

  // Descriptor exchange before the stages exist (inter-task transfers, first start only):
  // post_pre posts it, after_pre builds the stages from the descriptors received.
  std::function<void(array_exec&)> post_pre;
  std::vector<request> pre;
  std::function<void(array_exec&)> after_pre;

  std::vector<stage> stages;
  std::vector<std::unique_ptr<std::byte[]>> temps;  // buffers of the centralized strategy

  // Running state.
  bool running = false;
  std::size_t current = 0;              // stage being run
  std::vector<request> recvs;           // one per slab (direct: one address per peer), peer by peer
  std::vector<request> sends;           // data sends, and (direct) the acknowledgements awaited
  std::size_t recvs_left = 0;           // slabs not yet unpacked
  std::vector<std::size_t> recv_first;  // receives of peer i: [recv_first[i], recv_first[i+1])
  std::vector<std::size_t> recv_next;   // peer i's slabs unpacked so far (in order)
  std::vector<part_offer> incoming;     // direct: the senders' offers
  std::vector<std::size_t> recv_offset;  // packed receives: offset in staging
  std::vector<std::size_t> send_offset;  // packed sends: offset in staging
  std::unique_ptr<std::byte[]> staging;  // packed pieces (uninitialized; see take_staging)
  std::size_t staging_size = 0;
  std::vector<part_offer> offers;      // direct: this stage's offers, one per receiver
  const offer_words* board = nullptr;  // direct: where the offer words are

  // Step timing (only with a record): when the descriptor exchange and the stage began, and
  // the copy time already counted when the stage began.
  transfer_steps* steps = nullptr;
  std::function<void(const slab_arrival&)> on_slab;  // fired for the last stage's slabs
  std::chrono::steady_clock::time_point exchange_t0, stage_t0;
  double copies_at_stage_start = 0;

  std::exception_ptr error;  // failure found while another transfer's wait advanced this one
  /// The request this transfer completes (kind::layer; null for a persistent transfer, whose
  /// handle waits itself): marked done when the last step finished or failed.
  request_state* req = nullptr;

  array_exec() = default;
  array_exec(const array_exec&) = delete;
  array_exec& operator=(const array_exec&) = delete;
  ~array_exec();

  /// Starts from the first step (descriptor exchange if pending, else stage 0) and registers
  /// with the rank's running array transfers.
  void start();
  /// Advances every running array transfer of this rank (one that waits for its receiver's
  /// descriptor must not wait for its own owner's call); true when this one is complete.
  /// Rethrows this transfer's failure.
  bool advance();
  /// Blocks until complete (advancing all of the rank's array transfers, parking when idle).
  void wait();
  /// A handle lets go of a running transfer (destructor, assignment): waits for it, errors
  /// ignored; during unwinding nothing is waited for (the member requests withdraw themselves).
  void settle() noexcept;
  /// Advances this transfer alone, keeping a failure in `error` (the runtime poller's step).
  void step_safe();

 private:
  bool step();    // advances this transfer alone; true when complete
  void retire();  // leaves the running list
  void start_stage();
  void take_staging(std::size_t need);  // makes staging at least `need` bytes
  void give_staging() noexcept;         // returns staging to the rank's spares
  void finish_recv(std::size_t i, std::size_t slab);
  void drop_offers() noexcept;  // lets go of this stage's offers, withdrawing unclaimed ones
  void report_slab(const plan_peer& pe, std::int64_t first, std::int64_t count);
  bool stage_done();
};

/// Starts `e` and hands it to a cairn::request (kind::layer) that completes when the transfer
/// does; a transfer complete at once gives a completed request.
request start_request(std::unique_ptr<array_exec> e);

/// True if receivers copy straight from the senders' memory (opts.direct, where the rank
/// reaches its peers' memory); the same on every rank of a run.
bool copies_straight(rank_context& ctx, const transfer_options& opts);

/// Non-blocking send/receive of raw bytes in the array message context.
request array_isend(rank_context& ctx, const char* call, const void* data, std::size_t bytes,
                    int dest, array_match m);
request array_irecv(rank_context& ctx, const char* call, void* data, std::size_t bytes, int source,
                    array_match m);

}  // namespace cairn::detail
