#pragma once
// The MPI engine: one rank per process. Receives are posted to MPI ahead of time (MPI_Irecv),
// so a reply is matched and copied by MPI as it arrives, as in hand-written MPI.
//
// Never truncate: MPI would truncate a message larger than the posted buffer (and Open MPI 4.1
// even overruns the buffer on its single-copy path for long messages). So a message reaching
// a posted receive is never larger than what was posted:
//  - messages of at most `direct_limit` bytes travel as they are (keyed: after their key), on
//    the context's `small` communicator; a receive posts its own
//    buffer if it holds `header_bytes`, else a pooled staging buffer of that size (the copy out
//    is at most a few hundred bytes);
//  - longer messages send a header of exactly `header_bytes` bytes (size and sequence number)
//    on `small`, in the same (source, tag) stream, so MPI's ordering rule holds; the payload
//    follows on the context's `large` communicator with the sequence number as tag, and the
//    receiver posts it with the exact size once the header is in (or fails naming both sizes).
//
// Keyed contexts (collectives, arrays) match on a 64-bit space beside the tag, and MPI's tags
// hold 31 bits at most: their messages go under a *wire tag*, a hash of (tag, space), and carry
// the whole key (a prefix of `key_bytes` before a direct payload; in the header of a long one).
// Their receives always land in staging buffers, and a message goes to the earliest waiting
// receive of its key, whichever slot took it: if that is another receive (two keys whose wire
// tags met), that one hands its own posted slot over (slots of one source and wire tag are
// interchangeable); if none waits, the message is stashed until one is posted, and the slot
// posted again. Slots of one source and wire tag are handled in the order they were posted,
// the order in which MPI filled them, so each key's messages keep MPI's order, and a receive
// never takes another key's message.
//
// Any size: MPI counts are ints (and this MPI, 3.1, has no large-count calls), so a payload
// longer than `chunk_bytes` travels as consecutive messages of chunk_bytes (the last shorter)
// on the same (peer, tag, communicator), all posted at once on both sides; MPI's
// non-overtaking rule keeps them in order. Both sides know the size (the header), so both cut
// it the same way. Shorter messages are untouched.

#include <mpi.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "node/node_regions.hpp"
#include "transport/transport.hpp"

namespace cairn::detail {

class mpi_transport final : public transport {
 public:
  /// Messages up to this size go without a header; MPI sends them eagerly on every network.
  static constexpr std::size_t direct_limit = 2048;
  /// The key before a direct payload in a keyed context.
  static constexpr std::size_t key_bytes = 16;
  /// Size of a header message; no direct message has it (keyed ones included), which tells
  /// the two apart.
  static constexpr std::size_t header_bytes = direct_limit + key_bytes + 16;
  /// Payloads longer than this go as chunks of this size (fits an int count).
  static constexpr std::size_t chunk_bytes = std::size_t{1} << 30;

  /// Duplicates `comm` (the run's processes: MPI_COMM_WORLD, or the communicator given to
  /// launch) twice per context and once for the application (user_comm), and makes the node
  /// regions (collective over comm). CAIRN_MPI_WIRE_TAG_BITS (1..30, for tests) narrows keyed
  /// contexts' wire tags so that keys meet on them often.
  /// `one_node`: the run treats all processes as one node (false with emulated nodes, or
  /// where they span real nodes): only then are there node regions and cross-memory reads.
  mpi_transport(transport_rank& ctx, bool oversubscribed, MPI_Comm comm, bool one_node);
  ~mpi_transport() override;

  request_state* isend(transport_rank& ctx, const char* call, const void* data, std::size_t bytes,
                       int dest, int tag, std::uint64_t space, std::uint32_t check_word,
                       msg_context c) override;
  request_state* send(transport_rank& ctx, const char* call, const void* data, std::size_t bytes,
                      int dest, int tag, std::uint64_t space, std::uint32_t check_word,
                      msg_context c) override;
  void irecv(transport_rank& ctx, request_state* s) override;
  bool poll() override;
  bool advance_pending(request_state* pending) override;
  bool test(request_state* s) override;
  bool test_polled(request_state* s) override;
  bool iprobe(int source, int tag, msg_context c, status* st) override;
  bool iprobe_polled(int source, int tag, msg_context c, status* st) override;
  void park(request_state* s, double max_s, std::uint64_t round) override;
  void cancel(request_state* s) override;
  /// Polls before a wait parks: with more processes than cores, park (yield) almost at once,
  /// as the threads engine does, so that the process waited for gets the core.
  unsigned spin_polls() const override { return oversubscribed_ ? 32 : 2000; }
  int tag_ub() const override { return tag_ub_; }
  void announce_end() override;
  int ended_ranks() override;
  bool has_ended(int r) const override { return ended_[static_cast<std::size_t>(r)] != 0; }
  /// Notices go on the communicator of the end announcements, tagged by kind.
  bool send_notice(int r, notice_kind kind, const void* data, std::size_t bytes) override;
  bool poll_notice(notice_kind kind, int* from, void* data) override;
  std::string finish(transport_rank& ctx) override;
  void describe(std::ostream& os) const override;
  /// The node regions are a shared-memory window (MPI_Win_allocate_shared) when every process of
  /// the run is on one node. Processes poll, so wake() has nothing to do.
  const node_regions* node_memory() const noexcept override {
    return region_win_ != MPI_WIN_NULL ? &regions_ : nullptr;
  }
  /// Set on one node when every process could read its neighbour's memory at launch.
  int peer_pid(int r) const noexcept override {
    return pids_.empty() ? 0 : pids_[static_cast<std::size_t>(r)];
  }

  /// For the application (cairn::mpi_comm): a communicator over the run's processes, ranked
  /// as the world, that cairn itself never uses.
  MPI_Comm user_comm() const noexcept { return user_; }
  /// For the application: a communicator over `members` (world ranks, in group order), made
  /// on the first call (MPI_Comm_create_group: collective over the members only) and kept
  /// until the transport ends. Throws cairn::error naming `call` if MPI fails.
  MPI_Comm user_group_comm(const char* call, const std::vector<int>& members);

 private:
  /// request_state::phase of a send or receive whose payload goes in chunks (engine_ptr: its
  /// `chunked`).
  static constexpr std::uint8_t chunked_phase = 3;
  /// The MPI requests of a payload in chunks (more than engine_data holds).
  struct chunked {
    std::byte* header = nullptr;    // send: its header buffer (exact sends: none)
    std::byte* scratch = nullptr;   // receive of a message larger than its buffer
    std::vector<MPI_Request> reqs;  // send: the header, then the chunks
  };
  struct header {
    std::uint64_t bytes;
    std::uint64_t seq;
    std::uint64_t space;  // keyed contexts: the message's key
    std::int32_t tag;
    std::uint32_t check_word;  // keyed contexts: handed to the receive
  };
  /// A direct message's key in a keyed context (its first key_bytes).
  struct wire_key {
    std::uint64_t space;
    std::int32_t tag;
    std::uint32_t check_word;
  };
  static_assert(sizeof(wire_key) == key_bytes);
  /// A message taken out of MPI by a probe, kept in arrival order until a receive takes it.
  struct stashed {
    int source;
    int tag;  // keyed contexts: the message's tag (not its wire tag)
    std::uint64_t space;
    std::uint32_t check_word;
    msg_context ctx;
    bool is_header;
    std::size_t bytes;            // payload size (from the header for long messages)
    std::uint64_t seq;            // long messages: tag of the payload on `large`
    std::vector<std::byte> data;  // direct messages: the payload
  };

  /// Creates the node regions' window if all processes share a node (collective).
  void make_regions();
  /// On one node: every process's id if each could read its neighbour's memory (collective).
  void probe_cross_memory();
  MPI_Comm small(msg_context c) const noexcept { return small_[static_cast<std::size_t>(c)]; }
  MPI_Comm large(msg_context c) const noexcept { return large_[static_cast<std::size_t>(c)]; }
  std::byte* take_buffer();
  void give_buffer(void* b) noexcept;
  /// What a first message holds: a header (a long message's size, sequence number and key),
  /// or a direct payload (after its key in a keyed context).
  struct first_part {
    bool is_header;
    header h;                  // the header, or the direct message's key (keyed contexts)
    const std::byte* payload;  // direct messages: the payload
    std::size_t bytes;         // its size (headers: the long message's)
  };
  first_part read_first_part(const std::byte* data, std::size_t n, msg_context c) const noexcept;
  /// Moves receive s on with its first message `m` from `source`: copies the payload into s's
  /// buffer (unless it landed there) or posts the payload of a long message, and gives
  /// `staging` (may be null) back. True when s is complete.
  bool deliver_first(request_state* s, int source, int tag, const first_part& m,
                     std::byte* staging);
  /// deliver_first for a receive whose slot took its first message.
  bool first_part_arrived(request_state* s, const MPI_Status& st);
  /// Moves a receive on with a stashed message (deliver_first).
  void take_stashed(request_state* s, const stashed& m);
  /// The MPI tag of (tag, space) in context c.
  int wire_tag(int tag, std::uint64_t space, msg_context c) const noexcept;
  /// The posted receive in `slot` got its first message (status `st`): moves it on, or for a
  /// keyed context, the receive the message's key belongs to. Slots keep their index until
  /// the outermost call returns.
  void slot_arrived(std::uint32_t slot, const MPI_Status& st);
  /// slot_arrived for a keyed slot: first the slots of the same source and wire tag posted
  /// before it (MPI filled them with earlier messages), then its message, to the earliest
  /// waiting receive of its key.
  void keyed_arrived(std::uint32_t slot, const MPI_Status& st);
  /// The earliest waiting keyed receive (post order) that takes a message of this key.
  request_state* keyed_waiting(int source, int tag, std::uint64_t space,
                               msg_context c) const noexcept;
  void link_keyed(request_state* r);
  void unlink_keyed(request_state* r) noexcept;
  /// A stash entry for a message of `count` bytes at `data` from `source` (wire tag `tag`).
  stashed parse_arrived(int source, int tag, msg_context c, const std::byte* data,
                        std::size_t count) const;
  void post_payload(request_state* s, int source, std::uint64_t seq, std::size_t bytes);
  /// Sends (or receives) `bytes` at `data` as chunks on (peer, tag, comm), appending their
  /// requests to `reqs`; MPI's return code.
  static int post_chunks(bool send, void* data, std::size_t bytes, int peer, int tag, MPI_Comm comm,
                         std::vector<MPI_Request>& reqs);
  /// A header buffer for a long message of `bytes` to `dest` with key (tag, space) and
  /// `check_word`, and its sequence number.
  std::byte* make_header(int dest, std::size_t bytes, int tag, std::uint64_t space,
                         std::uint32_t check_word, std::uint64_t& seq);
  /// Tests (or, with `wait`, waits for) a chunked operation's requests; on completion frees
  /// its `chunked` and marks it done. True when complete.
  bool finish_chunked(request_state* s, bool wait);
  /// Frees what a send that MPI refused holds (its header buffer, its `chunked`).
  void drop_send(request_state* s) noexcept;
  /// Tests all receives still waiting for their first message (cheap when there are none) and
  /// moves on those whose slot got it, in the order their slots were posted (as MPI filled
  /// them).
  bool advance_posted();
  /// test() of `s` alone: its own MPI requests (its posted slot too if `test_slot`), nothing
  /// else advanced.
  bool test_own(request_state* s, bool test_slot);
  /// iprobe() past its poll: stashes what arrived on context c, then looks there.
  bool find_arrived(int source, int tag, msg_context c, status* out);
  /// Posts slot `slot`'s receive into `target` (its ticket: the order of posting).
  int post_slot(std::uint32_t slot, request_state* s, void* target, int wtag);
  /// While arrivals are handled (one scope or more), slots keep their index: remove_posted
  /// only marks a slot, and the outermost scope closes the marked ones as it ends.
  struct handling_scope {
    explicit handling_scope(mpi_transport& t) noexcept;
    ~handling_scope();
    handling_scope(const handling_scope&) = delete;
    handling_scope& operator=(const handling_scope&) = delete;
    mpi_transport& t_;
  };
  /// Frees s's slot (inside a handling_scope, only marks it).
  void remove_posted(request_state* s) noexcept;
  /// Closes the slots remove_posted marked.
  void compact_posted() noexcept;
  /// Receives rank r's announcement of its end (blocking) and records it.
  void receive_end(int r);
  /// Takes every arrived, unmatched message of context c out of MPI into the stash.
  void stash_arrived(msg_context c);

  transport_rank& ctx_;
  std::array<MPI_Comm, msg_context_count> small_{};
  std::array<MPI_Comm, msg_context_count> large_{};
  int tag_ub_ = 32767;
  bool oversubscribed_;
  std::vector<std::uint64_t> next_seq_;  // per destination: sequence of long messages
  // Receives waiting for their first message: MPI requests, their owners and when each was
  // posted (tickets), same index.
  std::vector<MPI_Request> posted_reqs_;
  std::vector<request_state*> posted_;
  std::vector<std::uint64_t> posted_ticket_;
  std::uint64_t next_ticket_ = 0;
  int handling_ = 0;     // handling_scopes open: removal only marks
  bool marked_ = false;  // ... and it marked one
  // A keyed direct message: its key and payload (MPI_Send is done with it on return).
  std::unique_ptr<std::byte[]> keyed_send_ =
      std::make_unique<std::byte[]>(direct_limit + key_bytes);
  std::vector<int> scratch_index_;  // MPI_Testsome output, reused
  std::vector<MPI_Status> scratch_status_;
  struct slot_done {
    std::uint64_t ticket;
    std::uint32_t slot;
    int k;  // its status in scratch_status_
  };
  std::vector<slot_done> scratch_done_;  // reused
  std::deque<stashed> stash_;
  // Keyed receives waiting for their first message, by source, in post order
  // (request_state::prev/next).
  std::vector<request_state*> keyed_head_;
  std::vector<request_state*> keyed_tail_;
  std::uint64_t wire_mask_ = 0;  // keyed contexts' wire tags: a hash's low bits
  std::vector<std::unique_ptr<std::byte[]>> buffers_;  // every staging buffer
  std::vector<std::byte*> free_buffers_;
  MPI_Comm ends_ = MPI_COMM_NULL;  // announce_end's messages (tag 0), notices (1, 2)
  std::vector<char> ended_;        // by world rank: its end was received
  int ended_count_ = 0;
  std::vector<MPI_Request> end_sends_;  // this rank's announcements
  // This rank withdrew a keyed operation (cancel): its announcements carry it (an int for MPI
  // to read from while they are in flight). Some other rank's announcement said it withdrew one.
  int withdrawn_ = 0;
  bool peer_withdrew_ = false;
  struct notice_send {
    MPI_Request req = MPI_REQUEST_NULL;
    std::array<std::byte, notice_bytes> bytes;
  };
  // Sent notices, until MPI is done with them (heap-held: one MPI never finished outlives us).
  std::deque<std::unique_ptr<notice_send>> notice_sends_;
  MPI_Comm base_;                                     // the run's processes, as given (not owned)
  MPI_Comm user_ = MPI_COMM_NULL;                     // user_comm()
  std::map<std::vector<int>, MPI_Comm> user_groups_;  // user_group_comm(), by members
  MPI_Win region_win_ = MPI_WIN_NULL;
  node_regions regions_;
  std::vector<int> pids_;              // by world rank; empty: no cross-memory reads
  unsigned long long probe_word_ = 0;  // read by the neighbour in the launch probe
};

/// Initializes MPI once per process at thread level `level` (0 single, 1 funneled,
/// 2 serialized, 3 multiple; MPI_Finalize runs at exit if cairn initialized it). Where MPI is
/// already initialized, keeps the level provided. Returns what is wrong, or "": a level below
/// `level` where cairn initialized MPI, or below multiple for the `progress_thread`.
std::string mpi_ensure_initialized(int level, bool progress_thread);
/// True while MPI is initialized and not finalized.
bool mpi_active() noexcept;
/// Marks that world rank `rank`'s function runs in this process (-1: one run fewer; calls
/// pair up). While any runs, exit() ends the whole MPI job with the exit status (MPI_Abort)
/// instead of waiting in MPI_Finalize for processes that may be waiting for this one.
void mpi_note_run(int rank);

/// The thread level MPI provides (0..3 as above), or -1 outside MPI_Init..MPI_Finalize.
int mpi_thread_level_provided() noexcept;
/// Rank, size and node placement of the processes of `comm` (collective over comm).
void mpi_world_layout(MPI_Comm comm, int& rank, int& size, std::vector<int>& node_of,
                      int& node_count, int& local_size);

}  // namespace cairn::detail
