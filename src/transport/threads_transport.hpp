#pragma once
// The threads engine: ranks are threads of one process. Each rank has a mailbox whose inbox is
// a lock-free stack that senders push envelopes onto (one CAS); the owning rank drains it in one
// exchange and matches envelopes against its posted receives locally, with no lock.
//
// Protocols: messages up to `eager_limit` bytes are copied into the envelope and the send
// completes at once; longer ones carry a pointer to the sender's buffer and the receiver copies
// straight from it into the receive buffer (one copy), then completes the sender's request.

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "transport/parker.hpp"
#include "transport/transport.hpp"

namespace cairn::detail {

inline constexpr std::size_t threads_eager_limit = 4096;

struct envelope {
  envelope* next = nullptr;  // inbox chain, unexpected list, free list
  int src = 0;
  int tag = 0;
  msg_context ctx = msg_context::user;
  std::size_t size = 0;
  const std::byte* data = nullptr;     // payload (inline, or the sender's buffer)
  request_state* send_req = nullptr;   // long messages: the sender's pending request
  std::atomic<int> handoff{0};         // long messages: 0 pending, 1 claimed, 2 detached
  std::byte* heap = nullptr;           // detached long message: the sender's copy
  alignas(64) std::byte payload[threads_eager_limit];
};

struct alignas(64) mailbox {
  std::atomic<envelope*> inbox{nullptr};
  alignas(64) std::atomic<envelope*> returned{nullptr};  // envelopes given back by receivers
  alignas(64) parker park;
};

/// What all ranks of one threads run share.
class threads_fabric {
 public:
  explicit threads_fabric(int ranks);
  ~threads_fabric();
  threads_fabric(const threads_fabric&) = delete;
  threads_fabric& operator=(const threads_fabric&) = delete;

  mailbox& box(int r) noexcept { return boxes_[static_cast<std::size_t>(r)]; }
  /// Envelopes allocated by rank r (touched only by r's thread; freed with the fabric).
  std::vector<envelope*>& allocated(int r) { return allocated_[static_cast<std::size_t>(r)]; }
  void wake_all() noexcept;
  int ranks() const noexcept { return ranks_; }

 private:
  int ranks_;
  std::unique_ptr<mailbox[]> boxes_;
  std::vector<std::vector<envelope*>> allocated_;
};

class threads_transport final : public transport {
 public:
  threads_transport(std::shared_ptr<threads_fabric> fabric, rank_context& ctx,
                    bool oversubscribed);
  ~threads_transport() override;

  request_state* isend(rank_context& ctx, const char* call, const void* data, std::size_t bytes,
                       int dest, int tag, msg_context c) override;
  void send(rank_context& ctx, const char* call, const void* data, std::size_t bytes, int dest,
            int tag, msg_context c) override;
  void irecv(rank_context& ctx, request_state* s) override;
  bool poll() override { return drain(); }
  bool test(request_state* s) override {
    if (s->done.load(std::memory_order_acquire)) return true;
    drain();
    return s->done.load(std::memory_order_acquire) != 0;
  }
  bool iprobe(int source, int tag, msg_context c, status* st) override;
  void park(request_state* s, double max_s) override;
  void cancel(request_state* s) override;
  unsigned spin_polls() const override { return spin_polls_; }
  int tag_ub() const override;
  void finish(rank_context& ctx) override;
  void describe(std::ostream& os) const override;

 private:
  envelope* alloc_envelope();
  void give_back(envelope* e) noexcept;
  void push(int dest, envelope* e) noexcept;
  /// Moves arrived envelopes to posted receives or the unexpected list; true if any arrived.
  bool drain();
  void deliver(envelope* e, request_state* r) noexcept;

  std::shared_ptr<threads_fabric> fabric_;
  rank_context& ctx_;
  int me_;
  mailbox& box_;
  unsigned spin_polls_;
  envelope* free_ = nullptr;
  // Posted receives in posting order (doubly linked through request_state::prev/next).
  request_state* posted_head_ = nullptr;
  request_state* posted_tail_ = nullptr;
  // Arrived, unmatched envelopes in arrival order.
  envelope* unexpected_head_ = nullptr;
  envelope* unexpected_tail_ = nullptr;
  std::size_t unexpected_count_ = 0;
};

}  // namespace cairn::detail
