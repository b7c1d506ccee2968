#pragma once
// The MPI engine: one rank per process; every cairn message is one MPI message on a
// communicator duplicated per message context for each run.
//
// Receives are matched by cairn, not by MPI: arrived messages are taken with MPI_Improbe
// (any source, any tag) in MPI's order, matched against cairn's posted receives in posting
// order (exactly MPI's rule), and only then received with MPI_Imrecv. So the size of every
// message is known before a byte is written: a too-small buffer is reported with both sizes and
// MPI never truncates (Open MPI 4.1 crashes in its single-copy path on a truncated long
// message).

#include <mpi.h>

#include <array>
#include <deque>
#include <vector>

#include "transport/transport.hpp"

namespace cairn::detail {

class mpi_transport final : public transport {
 public:
  /// Duplicates MPI_COMM_WORLD once per context (collective over all processes).
  mpi_transport(rank_context& ctx, bool oversubscribed);
  ~mpi_transport() override;

  request_state* isend(rank_context& ctx, const char* call, const void* data, std::size_t bytes,
                       int dest, int tag, msg_context c) override;
  void send(rank_context& ctx, const char* call, const void* data, std::size_t bytes, int dest,
            int tag, msg_context c) override;
  void irecv(rank_context& ctx, request_state* s) override;
  bool poll() override;
  bool test(request_state* s) override;
  bool iprobe(int source, int tag, msg_context c, status* st) override;
  void park(request_state* s, double max_s) override;
  void cancel(request_state* s) override;
  unsigned spin_polls() const override { return 2000; }
  int tag_ub() const override { return tag_ub_; }
  void finish(rank_context& ctx) override;
  void describe(std::ostream& os) const override;

  MPI_Comm comm(msg_context c) const noexcept { return comms_[static_cast<int>(c)]; }

 private:
  /// A message taken out of MPI's queue that no posted receive wanted yet.
  struct arrived {
    MPI_Message msg;
    int source;
    int tag;
    std::size_t bytes;
    msg_context ctx;
  };
  /// Takes arrived messages of context c out of MPI; true if any.
  bool pull(msg_context c);
  /// pull() for every context that has a posted, unmatched receive.
  void pull_posted();
  /// Starts receiving a matched message into r (or fails r if it does not fit).
  void start(request_state* r, const arrived& m);
  void unlink_posted(request_state* r) noexcept;

  rank_context& ctx_;
  request_state* posted_head_ = nullptr;  // unmatched receives in posting order
  request_state* posted_tail_ = nullptr;
  std::array<int, msg_context_count> posted_count_{};
  std::deque<arrived> unexpected_;  // in arrival order
  std::array<MPI_Comm, msg_context_count> comms_{};
  int tag_ub_ = 32767;
  bool oversubscribed_;
};

/// Initializes MPI once per process (MPI_Finalize runs at exit if cairn initialized it).
void mpi_ensure_initialized();
/// Rank, size and node placement of MPI_COMM_WORLD.
void mpi_world_layout(int& rank, int& size, std::vector<int>& node_of, int& node_count,
                      int& local_size);

}  // namespace cairn::detail
