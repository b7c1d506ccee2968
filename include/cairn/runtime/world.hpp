#pragma once
/// \file
/// `cairn::world`: the ranks of one run, their placement on nodes, and typed point-to-point.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cairn/coll/generalized.hpp"
#include "cairn/runtime/detail/sized_receive.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/group.hpp"
#include "cairn/runtime/p2p_values.hpp"
#include "cairn/runtime/persistent_p2p.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"

namespace cairn {

namespace detail {
/// False for every type; the dependent condition of the static_asserts that reject a temporary
/// container given to a non-blocking call (they fire only when such an overload is chosen).
template <class R>
inline constexpr bool dangling_buffer = false;
}  // namespace detail

/// The two engines behind the one API.
enum class engine {
  threads,  ///< ranks are threads of one process
  mpi,      ///< one rank per MPI process
};

/// Name of an engine ("threads" or "mpi").
std::string_view to_string(engine e) noexcept;

/// One rank's view of the run: who it is, where the others are, and point-to-point messaging.
///
/// A `world` is a cheap handle (copyable); all copies refer to the same rank. Each rank must
/// use its world from one thread at a time. Calls made after the run ended throw cairn::error.
/// The world is also the group of all ranks: every collective of coll::collectives runs on it,
/// and the generalized collectives (coll::generalized_collectives: any participants, any
/// receivers) run on its ranks.
class world : public coll::collectives<world>,
              public coll::generalized_collectives<world>,
              public p2p_value_calls<world> {
 public:
  // The value forms of point-to-point (p2p_values.hpp) overload the buffer forms below.
  using p2p_value_calls<world>::send;
  using p2p_value_calls<world>::isend;
  using p2p_value_calls<world>::recv;
  using p2p_value_calls<world>::irecv;
  // Both bases declare ireduce and reduce: the rooted ones (in, out, root, op) and the
  // generalized ones (participants, receivers, in, out, op) overload each other.
  using coll::collectives<world>::ireduce;
  using coll::collectives<world>::reduce;
  using coll::generalized_collectives<world>::ireduce;
  using coll::generalized_collectives<world>::reduce;

  /// An empty handle that belongs to no run; every call on it throws cairn::error.
  world() = default;

  /// This rank, in [0, size()).
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of ranks in the run.
  [[nodiscard]] int size() const noexcept { return size_; }
  /// The engine this run uses.
  [[nodiscard]] cairn::engine engine() const;

  /// Node (shared-memory domain) of rank `r`; nodes are numbered 0..node_count()-1 in order of
  /// their lowest rank.
  [[nodiscard]] int node_of(int r) const;
  /// This rank's node.
  [[nodiscard]] int node() const { return node_of(rank_); }
  /// Number of nodes in the run.
  [[nodiscard]] int node_count() const;
  /// This rank's index among the ranks of its node.
  [[nodiscard]] int local_rank() const;
  /// Number of ranks on this rank's node.
  [[nodiscard]] int ranks_on_node() const;
  /// Largest tag accepted by point-to-point calls on this engine (at least 32767).
  [[nodiscard]] int tag_ub() const;
  /// The program's arguments as launch received them, cairn's flags (`--cairn-*` and their
  /// values) removed: args()[0] is argv[0] (the program), then the others in order. Empty where
  /// launch was given no argv. The same on every rank of the run.
  [[nodiscard]] const std::vector<std::string>& args() const;

  /// Starts sending `data` to rank `dest` (or nowhere: proc_null). The buffer must stay
  /// untouched until completion, so `data` is an lvalue, a span or a view
  /// (std::ranges::borrowed_range): a temporary container is rejected at compile time.
  template <detail::contiguous_data R>
  requires std::ranges::borrowed_range<R> request isend(R&& data, int dest, int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    return isend_bytes("isend", std::ranges::data(data),
                       detail::checked_bytes("isend", rank_, std::ranges::size(data), sizeof(T)),
                       dest, tag);
  }
  /// Rejected: a temporary container would be destroyed while the send still reads it.
  template <detail::contiguous_data R>
  requires(!std::ranges::borrowed_range<R>) request isend(R&&, int, int = 0) {
    static_assert(detail::dangling_buffer<R>,
                  "cairn::isend: the buffer must outlive the request, but this temporary "
                  "container is destroyed at the end of the statement; pass an lvalue, a "
                  "std::span or a view");
    return {};
  }
  /// Starts sending `count` elements at `data` to rank `dest`.
  template <detail::transferable T>
  request isend(const T* data, std::int64_t count, int dest, int tag = 0) {
    return isend_bytes("isend", data, detail::checked_bytes("isend", rank_, count, sizeof(T)), dest,
                       tag);
  }
  /// Sends `data` to rank `dest` (or nowhere: proc_null); returns once the buffer may be reused.
  template <detail::contiguous_data R>
  void send(const R& data, int dest, int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    send_bytes("send", std::ranges::data(data),
               detail::checked_bytes("send", rank_, std::ranges::size(data), sizeof(T)), dest, tag);
  }
  /// Sends `count` elements at `data` to rank `dest`.
  template <detail::transferable T>
  void send(const T* data, std::int64_t count, int dest, int tag = 0) {
    send_bytes("send", data, detail::checked_bytes("send", rank_, count, sizeof(T)), dest, tag);
  }

  /// Starts receiving into `data` from `source` (or any_source, or proc_null) with `tag` (or
  /// any_tag). A message larger than the buffer is an error (cairn::error from test/wait), never
  /// truncated. `data` is an lvalue, a span or a view (a temporary container is rejected at
  /// compile time: it would be destroyed before the message arrives).
  template <detail::writable_data R>
  requires std::ranges::borrowed_range<R> request irecv(R&& data, int source, int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    return irecv_bytes("irecv", std::ranges::data(data),
                       detail::checked_bytes("irecv", rank_, std::ranges::size(data), sizeof(T)),
                       source, tag);
  }
  /// Rejected: a temporary container would be destroyed before the message is written to it.
  template <detail::writable_data R>
  requires(!std::ranges::borrowed_range<R>) request irecv(R&&, int, int = 0) {
    static_assert(detail::dangling_buffer<R>,
                  "cairn::irecv: the buffer must outlive the request, but this temporary "
                  "container is destroyed at the end of the statement; pass an lvalue, a "
                  "std::span or a view");
    return {};
  }
  /// Starts receiving at most `count` elements into `data`.
  template <detail::transferable T>
  request irecv(T* data, std::int64_t count, int source, int tag = 0) {
    return irecv_bytes("irecv", data, detail::checked_bytes("irecv", rank_, count, sizeof(T)),
                       source, tag);
  }
  /// Receives into `data`; returns the status (status::count<T>() elements were written).
  template <detail::writable_data R>
  status recv(R&& data, int source, int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    return recv_bytes("recv", std::ranges::data(data),
                      detail::checked_bytes("recv", rank_, std::ranges::size(data), sizeof(T)),
                      source, tag);
  }
  /// Receives at most `count` elements into `data`.
  template <detail::transferable T>
  status recv(T* data, std::int64_t count, int source, int tag = 0) {
    return recv_bytes("recv", data, detail::checked_bytes("recv", rank_, count, sizeof(T)), source,
                      tag);
  }

  /// Sends `send_data` to `dest` with `send_tag` and receives into `recv_data` from `source`
  /// with `recv_tag` (or any_source / any_tag), as MPI_Sendrecv: both are posted before either
  /// is waited for, so a ring or a halo exchange of any size (a rank may be its own peer) does
  /// not deadlock. Either peer may be proc_null. Returns the receive's status; a message larger
  /// than `recv_data` is a cairn::error (raised once the send completed). The buffers must not
  /// overlap (see sendrecv_replace).
  template <detail::contiguous_data S, detail::writable_data R>
  status sendrecv(const S& send_data, int dest, int send_tag, R&& recv_data, int source,
                  int recv_tag) {
    using T = std::ranges::range_value_t<S>;
    using U = std::ranges::range_value_t<R>;
    return sendrecv_bytes(
        "sendrecv", std::ranges::data(send_data),
        detail::checked_bytes("sendrecv", rank_, std::ranges::size(send_data), sizeof(T)), dest,
        send_tag, std::ranges::data(recv_data),
        detail::checked_bytes("sendrecv", rank_, std::ranges::size(recv_data), sizeof(U)), source,
        recv_tag);
  }
  /// sendrecv of `send_count` elements at `send_data` and at most `recv_count` into `recv_data`.
  template <detail::transferable T, detail::transferable U>
  status sendrecv(const T* send_data, std::int64_t send_count, int dest, int send_tag, U* recv_data,
                  std::int64_t recv_count, int source, int recv_tag) {
    return sendrecv_bytes(
        "sendrecv", send_data, detail::checked_bytes("sendrecv", rank_, send_count, sizeof(T)),
        dest, send_tag, recv_data, detail::checked_bytes("sendrecv", rank_, recv_count, sizeof(U)),
        source, recv_tag);
  }
  /// Sends the contents of `buf` to `dest`, then receives into `buf` from `source`, as
  /// MPI_Sendrecv_replace (deadlock-free as sendrecv; either peer may be proc_null). The
  /// message received may be as large as `buf`; a larger one is a cairn::error. Costs one copy
  /// of `buf` (the outgoing data is staged while the incoming is written).
  template <detail::writable_data R>
  status sendrecv_replace(R&& buf, int dest, int send_tag, int source, int recv_tag) {
    using T = std::ranges::range_value_t<R>;
    return sendrecv_replace_bytes(
        "sendrecv_replace", std::ranges::data(buf),
        detail::checked_bytes("sendrecv_replace", rank_, std::ranges::size(buf), sizeof(T)), dest,
        send_tag, source, recv_tag);
  }
  /// sendrecv_replace of `count` elements at `buf`.
  template <detail::transferable T>
  status sendrecv_replace(T* buf, std::int64_t count, int dest, int send_tag, int source,
                          int recv_tag) {
    return sendrecv_replace_bytes(
        "sendrecv_replace", buf, detail::checked_bytes("sendrecv_replace", rank_, count, sizeof(T)),
        dest, send_tag, source, recv_tag);
  }

  /// A persistent send of `data` to `dest` with `tag` (as MPI_Send_init): checked once, then
  /// posted by every persistent_p2p::start(). `data` is bound (an lvalue, a span or a view; a
  /// temporary container is rejected at compile time); its contents may change between starts.
  template <detail::contiguous_data R>
  requires std::ranges::borrowed_range<R> persistent_p2p send_init(R&& data, int dest,
                                                                   int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    return send_init_bytes(
        "send_init", std::ranges::data(data),
        detail::checked_bytes("send_init", rank_, std::ranges::size(data), sizeof(T)), dest, tag);
  }
  /// Rejected: a temporary container would be destroyed while the handle still sends it.
  template <detail::contiguous_data R>
  requires(!std::ranges::borrowed_range<R>) persistent_p2p send_init(R&&, int, int = 0) {
    static_assert(detail::dangling_buffer<R>,
                  "cairn::send_init: the buffer must outlive the persistent handle, but this "
                  "temporary container is destroyed at the end of the statement; pass an "
                  "lvalue, a std::span or a view");
    return {};
  }
  /// A persistent send of `count` elements at `data`.
  template <detail::transferable T>
  persistent_p2p send_init(const T* data, std::int64_t count, int dest, int tag = 0) {
    return send_init_bytes("send_init", data,
                           detail::checked_bytes("send_init", rank_, count, sizeof(T)), dest, tag);
  }
  /// A persistent receive into `data` from `source` with `tag` (wildcards and proc_null
  /// allowed; as MPI_Recv_init). `data` is bound (an lvalue, a span or a view).
  template <detail::writable_data R>
  requires std::ranges::borrowed_range<R> persistent_p2p recv_init(R&& data, int source,
                                                                   int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    return recv_init_bytes(
        "recv_init", std::ranges::data(data),
        detail::checked_bytes("recv_init", rank_, std::ranges::size(data), sizeof(T)), source, tag);
  }
  /// Rejected: a temporary container would be destroyed while the handle still receives into it.
  template <detail::writable_data R>
  requires(!std::ranges::borrowed_range<R>) persistent_p2p recv_init(R&&, int, int = 0) {
    static_assert(detail::dangling_buffer<R>,
                  "cairn::recv_init: the buffer must outlive the persistent handle, but this "
                  "temporary container is destroyed at the end of the statement; pass an "
                  "lvalue, a std::span or a view");
    return {};
  }
  /// A persistent receive of at most `count` elements into `data`.
  template <detail::transferable T>
  persistent_p2p recv_init(T* data, std::int64_t count, int source, int tag = 0) {
    return recv_init_bytes("recv_init", data,
                           detail::checked_bytes("recv_init", rank_, count, sizeof(T)), source,
                           tag);
  }

  /// Status of the first message that a receive(source, tag) would match, if one has arrived.
  /// From proc_null: at once, source proc_null, tag any_tag, 0 bytes.
  std::optional<status> iprobe(int source = any_source, int tag = any_tag);
  /// Blocks until a message matching (source, tag) has arrived and returns its status (from
  /// proc_null: at once, as iprobe).
  status probe(int source = any_source, int tag = any_tag);

  /// Advances all outstanding operations of this rank without blocking.
  void progress();

  /// Global termination of aggregated messages (collective over all ranks): returns once every
  /// item sent on any channel — including items sent by handlers, to any depth, and items
  /// forwarded or combined on the way — has been delivered everywhere. Delivers incoming items
  /// while it waits. A counting algorithm over non-blocking allreduces (AP 3.6, SKR-style):
  /// ranks flush, then sum (messages sent, messages handled) until two consecutive waves agree
  /// and the sums are equal. Not callable from a handler.
  void quiesce();

  /// Byte-level forms of the calls above (`call` names the user-facing call in errors).
  request isend_bytes(const char* call, const void* data, std::size_t bytes, int dest, int tag);
  /// Byte-level irecv.
  request irecv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag);
  /// Byte-level send.
  void send_bytes(const char* call, const void* data, std::size_t bytes, int dest, int tag);
  /// Byte-level recv.
  status recv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag);
  /// Starts a receive whose size the message tells: once a message matches, `sink.buffer`
  /// makes room for it, and `sink.complete` unpacks it when it arrived. Such receives match
  /// in the order they were posted (among themselves; a buffer receive posted later may take
  /// a message first). From proc_null it completes at once without calling the sink.
  request irecv_sized(const char* call, int source, int tag, const detail::sized_sink& sink);
  /// Byte-level sendrecv.
  status sendrecv_bytes(const char* call, const void* send_data, std::size_t send_bytes, int dest,
                        int send_tag, void* recv_data, std::size_t recv_bytes, int source,
                        int recv_tag);
  /// Byte-level sendrecv_replace.
  status sendrecv_replace_bytes(const char* call, void* buf, std::size_t bytes, int dest,
                                int send_tag, int source, int recv_tag);
  /// Byte-level send_init.
  persistent_p2p send_init_bytes(const char* call, const void* data, std::size_t bytes, int dest,
                                 int tag);
  /// Byte-level recv_init.
  persistent_p2p recv_init_bytes(const char* call, void* data, std::size_t bytes, int source,
                                 int tag);

  /// The group of the given ranks (created locally, no communication). Every listed rank must
  /// be in [0, size()) and appear once.
  [[nodiscard]] cairn::group group(ranks r) const;
  /// The group of the listed world ranks, in this order (group rank i is members[i]).
  [[nodiscard]] cairn::group group(std::vector<int> members) const;

  /// Internal: where a collective on all ranks runs.
  [[nodiscard]] detail::coll_target coll_target(const char* call) const;
  /// Internal: the rank's runtime state (for cairn's own layers).
  [[nodiscard]] detail::rank_context& context(const char* call) const;
  /// Internal: wraps a rank context (done by launch).
  explicit world(std::shared_ptr<detail::rank_context> ctx);

 private:
  std::shared_ptr<detail::rank_context> ctx_;
  int rank_ = -1;
  int size_ = 0;
};

}  // namespace cairn
