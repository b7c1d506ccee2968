#pragma once
// The threads engine: ranks are threads of one process.
//
// Every ordered pair (sender, receiver) that talks gets a *lane*: a single-producer ring of
// 64-byte cells. A short message is one record in the ring (header and payload, one cache line
// up to 32 payload bytes), published by one store; the receiver polls the record at its ring
// head and copies the payload straight into a posted receive. That is one cache-line transfer
// per short message and no lock or atomic read-modify-write on the way.
//
// Everything else travels as an *envelope* pushed onto the receiver's inbox (a lock-free stack,
// one CAS): messages too long for a ring record (copied into the envelope up to
// `threads_eager_limit` bytes; beyond, the receiver copies straight from the sender's buffer,
// one copy) and short messages when the ring is full. Each message of a lane carries a
// sequence number; the receiver merges ring and inbox in that order, so MPI's non-overtaking
// rule holds whatever path a message took. The inbox also announces new lanes.
//
// Matching happens on the receiving rank's own thread, against its posted receives.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <unordered_map>
#include <vector>

#include "node/node_regions.hpp"
#include "node/parker.hpp"
#include "transport/transport.hpp"

namespace cairn::detail {

/// Longest message sent eagerly (copied, so the send completes at once).
inline constexpr std::size_t threads_eager_limit = 4096;

/// One 64-byte ring cell. A record starts with this header; its payload begins at `payload`
/// and runs on into the following cells (record_cells).
struct alignas(64) cell {
  std::atomic<std::uint64_t> stamp{0};  // record start: its ring position + 1, once published
  std::uint32_t seq = 0;                // the low bits of the message's sequence number in its lane
  std::uint16_t size = 0;               // payload bytes (a record holds at most ring_payload_limit)
  std::uint8_t ctx = 0;
  std::uint8_t skip = 0;    // padding record up to the ring's end
  std::uint64_t space = 0;  // the rest of the match key in keyed contexts
  std::int32_t tag = 0;
  std::uint32_t check_word = 0;  // keyed contexts: handed to the receive, not matched
  std::byte payload[32];
};
static_assert(sizeof(cell) == 64);
/// Cells a record of `bytes` payload bytes takes.
inline std::uint64_t record_cells(std::size_t bytes) noexcept {
  return 1 + (bytes > 32 ? (bytes - 32 + sizeof(cell) - 1) / sizeof(cell) : 0);
}

struct lane;

/// A message that is not (or no longer) a ring record: eager and long sends through the inbox,
/// and records that arrived before their receive. Its payload storage follows it in memory,
/// sized by class (envelope_class), so that an 8-byte message waiting for its receive holds
/// about 200 bytes rather than a 4 KiB buffer.
struct alignas(64) envelope {
  enum class kind : std::uint8_t { message, new_lane };
  envelope* next = nullptr;  // inbox chain, held/unexpected lists, free list
  kind k = kind::message;
  msg_context ctx = msg_context::user;
  int src = 0;
  int owner = 0;  // rank whose pool it belongs to
  int tag = 0;
  std::uint64_t space = 0;       // the rest of the match key in keyed contexts
  std::uint32_t check_word = 0;  // keyed contexts: handed to the receive, not matched
  std::uint64_t seq = 0;         // sequence number in the (src, dst) lane
  std::uint64_t arrival = 0;     // unexpected: the receiver's arrival count (any-source order)
  std::size_t size = 0;
  const std::byte* data = nullptr;    // payload (inline, or the sender's buffer)
  request_state* send_req = nullptr;  // long messages: the sender's pending request
  std::atomic<int> handoff{0};        // long messages: 0 pending, 1 claimed, 2 detached
  std::byte* heap = nullptr;          // detached long message: the sender's copy
  lane* announced = nullptr;          // new_lane
  std::uint32_t capacity = 0;         // payload bytes of its storage
  std::byte* payload() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
};

/// Payload capacities of the envelope pools: a message takes the smallest that holds it.
inline constexpr std::size_t envelope_capacities[] = {64, 1024, threads_eager_limit};
inline constexpr int envelope_classes = static_cast<int>(std::size(envelope_capacities));
inline int envelope_class(std::size_t bytes) noexcept {
  return bytes <= envelope_capacities[0] ? 0 : bytes <= envelope_capacities[1] ? 1 : 2;
}
/// Allocates an envelope with room for envelope_capacities[cls] payload bytes; free_envelope frees
/// it.
envelope* new_envelope(int cls);
void free_envelope(envelope* e) noexcept;

/// The ring from one sender to one receiver.
struct lane {
  lane(int src, std::size_t cells);
  const int src;
  const std::uint64_t ncells;  // power of two
  const std::unique_ptr<cell[]> ring;
  alignas(64) std::atomic<std::uint64_t> head{0};  // cells consumed (written by the receiver)
  // Sender's side, touched only by the sending thread.
  alignas(64) std::uint64_t tail = 0;  // cells written
  std::uint64_t head_seen = 0;         // last value of `head` read
  std::uint64_t next_seq = 0;          // sequence number of the next message
};

struct alignas(64) mailbox {
  std::atomic<envelope*> inbox{nullptr};
  alignas(64) std::atomic<envelope*> returned{nullptr};  // envelopes given back by receivers
  alignas(64) parker park;
};

/// What all ranks of one threads run share.
class threads_fabric {
 public:
  /// A fabric for `ranks` threads; `one_node`: they share node memory (false where the run
  /// emulates several nodes: then only messages cross between ranks).
  threads_fabric(int ranks, bool one_node);
  ~threads_fabric();
  threads_fabric(const threads_fabric&) = delete;
  threads_fabric& operator=(const threads_fabric&) = delete;

  mailbox& box(int r) noexcept { return boxes_[static_cast<std::size_t>(r)]; }
  /// Envelopes and lanes allocated by rank r (touched only by r's thread; freed with the fabric).
  std::vector<envelope*>& envelopes(int r) { return envelopes_[static_cast<std::size_t>(r)]; }
  std::vector<lane*>& lanes(int r) { return lanes_[static_cast<std::size_t>(r)]; }
  void wake_all() noexcept;
  int ranks() const noexcept { return ranks_; }
  /// Cells per lane: smaller rings when many ranks may all talk to each other.
  std::size_t lane_cells() const noexcept { return lane_cells_; }
  /// Longest payload a ring record carries.
  std::size_t ring_payload_limit() const noexcept { return ring_payload_limit_; }
  /// progress_mode::peers: every rank's context, so that a sender can advance its receiver.
  void set_peer_progress(std::vector<transport_rank*> ranks) { peers_ = std::move(ranks); }
  /// Lets rank r advance if peer progress is on and r is outside cairn (per message: the
  /// default mode pays one inline test).
  void help(int r) const noexcept {
    if (!peers_.empty()) help_peer(r);
  }
  /// The node regions of the run (every rank's in one allocation), null if the run emulates
  /// several nodes.
  const node_regions* node_memory() const noexcept { return one_node_ ? &regions_ : nullptr; }
  /// Rank r's function returned (seq_cst, after everything r sent): wakes every parked rank so
  /// that one waiting for r sees it.
  void mark_ended(int r) noexcept;
  /// How many ranks have ended, and whether rank r has.
  int ended_count() const noexcept { return ended_count_.load(std::memory_order_seq_cst); }
  bool ended(int r) const noexcept {
    return ended_[static_cast<std::size_t>(r)].load(std::memory_order_seq_cst);
  }
  /// A rank withdrew a keyed operation (transport::cancel): its messages, or those sent to
  /// it, may be left unreceived.
  void mark_withdrawn() noexcept { withdrawn_.store(true, std::memory_order_relaxed); }
  bool withdrawn() const noexcept { return withdrawn_.load(std::memory_order_relaxed); }

 private:
  int ranks_;
  bool one_node_;
  std::unique_ptr<std::atomic<bool>[]> ended_;
  std::atomic<int> ended_count_{0};
  std::atomic<bool> withdrawn_{false};
  std::size_t lane_cells_;
  std::size_t ring_payload_limit_;
  std::unique_ptr<mailbox[]> boxes_;
  std::vector<std::vector<envelope*>> envelopes_;
  std::vector<std::vector<lane*>> lanes_;
  std::vector<transport_rank*> peers_;
  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{128}); }
  };
  std::unique_ptr<std::byte[], aligned_delete> region_memory_;
  node_regions regions_;
  void help_peer(int r) const noexcept;
};

class threads_transport final : public transport {
 public:
  threads_transport(std::shared_ptr<threads_fabric> fabric, transport_rank& ctx,
                    bool oversubscribed);
  ~threads_transport() override;

  request_state* isend(transport_rank& ctx, const char* call, const void* data, std::size_t bytes,
                       int dest, int tag, std::uint64_t space, std::uint32_t check_word,
                       msg_context c) override;
  request_state* send(transport_rank& ctx, const char* call, const void* data, std::size_t bytes,
                      int dest, int tag, std::uint64_t space, std::uint32_t check_word,
                      msg_context c) override;
  void irecv(transport_rank& ctx, request_state* s) override;
  bool poll() override;
  /// Polling completes everything here: receivers complete long sends as they copy.
  bool advance_pending(request_state*) override { return poll(); }
  bool test(request_state* s) override {
    if (s->done.load(std::memory_order_acquire)) return true;
    poll();
    return s->done.load(std::memory_order_acquire) != 0;
  }
  /// Receivers complete sends and receives as they copy: the flag is the whole answer.
  bool test_polled(request_state* s) override {
    return s->done.load(std::memory_order_acquire) != 0;
  }
  bool iprobe(int source, int tag, msg_context c, status* st) override;
  bool iprobe_polled(int source, int tag, msg_context c, status* st) override;
  void park(request_state* s, double max_s, std::uint64_t round) override;
  void cancel(request_state* s) override;
  unsigned spin_polls() const override { return spin_polls_; }
  int tag_ub() const override;
  void announce_end() override { fabric_->mark_ended(me_); }
  int ended_ranks() override { return fabric_->ended_count(); }
  bool has_ended(int r) const override { return fabric_->ended(r); }
  std::string finish(transport_rank& ctx) override;
  void describe(std::ostream& os) const override;
  const node_regions* node_memory() const noexcept override { return fabric_->node_memory(); }
  void wake(int r) noexcept override {
    fabric_->box(r).park.wake();
    fabric_->help(r);  // progress mode peers: r's board collectives move while it computes
  }

 private:
  /// The receiver's side of one incoming lane.
  struct in_lane {
    lane* l;
    std::uint64_t head;    // next record position
    std::uint64_t expect;  // next sequence number to deliver
    envelope* held_head;   // messages of this lane that came by the inbox, in order
    envelope* held_tail;
  };

  lane* out_lane(int dest);
  bool ring_put(lane& l, std::uint64_t seq, int tag, std::uint64_t space, std::uint32_t check_word,
                msg_context c, const void* data, std::size_t bytes) noexcept;
  /// An envelope with room for `bytes` of payload, from this rank's pool of its class.
  envelope* alloc_envelope(std::size_t bytes);
  void give_back(envelope* e) noexcept;
  void push(int dest, envelope* e) noexcept;
  /// Takes the inbox: announces lanes, queues envelopes on their lanes. True if any.
  bool drain_inbox();
  /// Delivers whatever of lane `i` is next in sequence. True if anything was delivered.
  bool advance(in_lane& in);
  /// Does any incoming lane have a published record at its head?
  bool ring_ready() const noexcept;
  request_state* match_posted(int src, int tag, std::uint64_t space, msg_context c) noexcept;
  void deliver_envelope(envelope* e);
  void deliver(envelope* e, request_state* r) noexcept;
  void keep_unexpected(envelope* e) noexcept;
  /// The earliest arrived unexpected message that a receive of (source, tag, space, c)
  /// matches.
  struct unexpected_match {
    envelope* e = nullptr;
    envelope* prev = nullptr;  // its predecessor in its source's queue
  };
  unexpected_match find_unexpected(int source, int tag, std::uint64_t space,
                                   msg_context c) const noexcept;
  void take_unexpected(const unexpected_match& m) noexcept;

  std::shared_ptr<threads_fabric> fabric_;
  transport_rank& ctx_;
  int me_;
  mailbox& box_;
  unsigned spin_polls_;
  bool oversubscribed_;
  /// Parks of one wait that yield the core before the rank sleeps (oversubscribed runs).
  static constexpr std::uint64_t yield_rounds = 200;
  envelope* free_[envelope_classes] = {};  // per class
  std::vector<lane*> out_;                 // per destination, created on first send
  std::vector<in_lane> in_;                // incoming lanes in announcement order
  std::vector<int> in_index_;              // per source: index into in_, or -1
  // Posted receives in posting order (doubly linked through request_state::prev/next).
  request_state* posted_head_ = nullptr;
  request_state* posted_tail_ = nullptr;
  // Arrived, unmatched messages, per source in arrival order: a receive scans only its
  // source's queue (one queue made a rank that ran ahead cost every receive from other ranks
  // a scan of its messages: 85 % of the time of a butterfly loop, 640 us per iteration).
  struct envelope_queue {
    envelope* head = nullptr;
    envelope* tail = nullptr;
  };
  // Per source and context (a receive matches one context only: another context's messages
  // are never scanned, however many wait), in arrival order.
  std::vector<envelope_queue> unexpected_;
  static std::size_t queue_of(int src, msg_context c) noexcept {
    return static_cast<std::size_t>(src) * msg_context_count + static_cast<std::size_t>(c);
  }
  std::size_t unexpected_count_ = 0;
  // Unexpected messages per (context, tag): a receive or probe of a tag none has (a
  // channel's probe for oversize messages, at every poll) returns at once instead of
  // scanning every waiting message of the context.
  std::unordered_map<std::uint64_t, std::uint32_t> unexpected_tags_;
  static std::uint64_t tag_key(msg_context c, int tag) noexcept {
    return (static_cast<std::uint64_t>(c) << 32) | static_cast<std::uint32_t>(tag);
  }
  std::uint64_t arrivals_ = 0;
};

}  // namespace cairn::detail
