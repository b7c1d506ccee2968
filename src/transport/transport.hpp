#pragma once
// The transport interface: what an engine provides to everything above it. One instance per
// rank, used only by that rank's thread. Calls are per message, never per item.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "transport/request_state.hpp"
#include "transport/transport_rank.hpp"

namespace cairn::detail {

class node_regions;

/// The runtime's notices (transport::send_notice): a watcher's question, a rank's answer.
enum class notice_kind : int { query = 1, answer = 2 };
/// The largest notice.
inline constexpr std::size_t notice_bytes = 64;

/// A message nobody received, as finish() reports it.
struct unreceived_message {
  int source = 0;
  int tag = 0;
  std::size_t bytes = 0;
  msg_context ctx = msg_context::user;
};

/// What finish() says of `count` messages sent to `rank` that were never received, `first`
/// the earliest and `first_keyed` the earliest of a keyed context (if any). A keyed one
/// comes from a call that found no matching call on this rank (ranks that disagree on a
/// collective's root or algorithm, on a transfer's plan), even where every rank completed its
/// own: returned as the run's error, unless some rank `withdrew` an operation (cancel, after
/// an error its program caught), which may leave messages behind. Otherwise the messages are
/// a warning on stderr, and the result is an empty string.
std::string report_unreceived(int rank, std::size_t count, const unreceived_message& first,
                              const std::optional<unreceived_message>& first_keyed, bool withdrew);

class transport {
 public:
  virtual ~transport() = default;

  /// Starts a send. Returns nullptr when the send completed at once (buffer reusable), else a
  /// pending state from ctx.acquire(). Arguments are already validated. A receive matches it
  /// by (source, tag, context) and, in keyed contexts, `space` (0 in the others); a keyed
  /// message also hands `check_word` to its receive (0 in the others).
  virtual request_state* isend(transport_rank& ctx, const char* call, const void* data,
                               std::size_t bytes, int dest, int tag, std::uint64_t space,
                               std::uint32_t check_word, msg_context c) = 0;
  /// Starts a send the caller then waits for: as isend, but may complete short messages at
  /// once in a cheaper way (a blocking send of the engine). Returns the state to wait for, or
  /// nullptr.
  virtual request_state* send(transport_rank& ctx, const char* call, const void* data,
                              std::size_t bytes, int dest, int tag, std::uint64_t space,
                              std::uint32_t check_word, msg_context c) = 0;
  /// Starts a receive into a state from ctx.acquire() (buf, capacity, peer, tag, space, ctx
  /// filled). A receive of a keyed context names its source and tag (no wildcards).
  virtual void irecv(transport_rank& ctx, request_state* s) = 0;
  /// Advances communication; true if anything arrived or completed.
  virtual bool poll() = 0;
  /// Advances communication and every operation of the rank's pending list (`pending`, linked
  /// through active_next) as far as each goes, for helpers of a rank that tests none of them
  /// meanwhile (launch_options::progress). True if anything arrived or completed.
  virtual bool advance_pending(request_state* pending) = 0;
  /// Advances communication and reports whether `s` is complete.
  virtual bool test(request_state* s) = 0;
  /// Reports whether `s` is complete, advancing `s` alone: for a pass over many operations
  /// that called poll() once first (a test() of each would poll again for every one).
  virtual bool test_polled(request_state* s) = 0;
  /// Looks for an arrived message matching (source, tag) in context c (not a keyed one)
  /// without receiving it.
  virtual bool iprobe(int source, int tag, msg_context c, status* st) = 0;
  /// iprobe() in a pass that called poll() once first: looks at what arrived without
  /// advancing anything else.
  virtual bool iprobe_polled(int source, int tag, msg_context c, status* st) = 0;
  /// Blocks for at most `max_s` seconds or until something may have happened for this rank.
  /// `s` (may be null) is the operation being waited for; `round` counts the parks of the
  /// current wait (0 for the first), so an engine can yield first and sleep later.
  virtual void park(request_state* s, double max_s, std::uint64_t round) = 0;
  /// Withdraws a pending operation during exception unwinding; must not block on peers.
  virtual void cancel(request_state* s) = 0;
  /// How many polls a wait spins before parking.
  virtual unsigned spin_polls() const = 0;
  /// Largest user tag.
  virtual int tag_ub() const = 0;
  /// Called once when the rank's function returned normally, before finish(): tells every
  /// other rank that this one sends and receives nothing more (ended_ranks, has_ended).
  virtual void announce_end() = 0;
  /// How many other ranks this rank has seen announce their end. Cheap (a load, or on MPI one
  /// probe): called while a wait is idle.
  virtual int ended_ranks() = 0;
  /// True if rank r announced its end, as last seen by ended_ranks(). What r sent before is
  /// matched by this rank's next advance on the threads engine; on MPI it may still be on its
  /// way for a moment (the announcement travels on a communicator of its own).
  virtual bool has_ended(int r) const = 0;
  /// Sends `bytes` (at most notice_bytes) to rank r outside every message context, for the
  /// runtime's watch over ranks that see no node memory of each other (deadlock detection
  /// across nodes). Never blocks. False where the engine has no need (its ranks share one
  /// node's memory).
  virtual bool send_notice(int r, notice_kind kind, const void* data, std::size_t bytes) {
    (void)r, (void)kind, (void)data, (void)bytes;
    return false;
  }
  /// Receives one arrived notice of `kind`, if any, into `data` (notice_bytes): true and its
  /// sender in `*from`.
  virtual bool poll_notice(notice_kind kind, int* from, void* data) {
    (void)kind, (void)from, (void)data;
    return false;
  }
  /// Called once when the rank's function returned normally: waits until every rank announced
  /// its end, then reports messages nobody received (report_unreceived): returns the error
  /// when one is of a keyed context, else an empty string.
  virtual std::string finish(transport_rank& ctx) = 0;
  /// Appends engine-side pending state (e.g. unreceived messages) to a watchdog report.
  virtual void describe(std::ostream& os) const = 0;
  /// The memory shared by all ranks of the run, if they share one node (else null).
  virtual const node_regions* node_memory() const noexcept { return nullptr; }
  /// Wakes rank r if it parked, or advances it (progress mode peers), after this rank
  /// published something in node memory that r may be waiting for (seq_cst after publishing).
  virtual void wake(int r) noexcept { (void)r; }
  /// The process whose memory holds rank r's, for copies straight out of it
  /// (node/cross_memory.hpp), or 0 if this rank cannot read it that way. The threads
  /// engine shares one address space and needs none.
  virtual int peer_pid(int r) const noexcept {
    (void)r;
    return 0;
  }
};

}  // namespace cairn::detail
