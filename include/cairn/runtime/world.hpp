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
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/group.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"

namespace cairn {

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
class world : public coll::collectives<world>, public coll::generalized_collectives<world> {
 public:
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

  /// Starts sending `data` to rank `dest`. The buffer must stay untouched until completion.
  template <detail::contiguous_data R>
  request isend(const R& data, int dest, int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    return isend_bytes("isend", std::ranges::data(data),
                       detail::checked_bytes("isend", rank_, std::ranges::size(data), sizeof(T)),
                       dest, tag);
  }
  /// Starts sending `count` elements at `data` to rank `dest`.
  template <detail::transferable T>
  request isend(const T* data, std::int64_t count, int dest, int tag = 0) {
    return isend_bytes("isend", data, detail::checked_bytes("isend", rank_, count, sizeof(T)), dest,
                       tag);
  }
  /// Sends `data` to rank `dest`; returns once the buffer may be reused.
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

  /// Starts receiving into `data` from `source` (or any_source) with `tag` (or any_tag). A
  /// message larger than the buffer is an error (cairn::error from test/wait), never truncated.
  template <detail::writable_data R>
  request irecv(R&& data, int source, int tag = 0) {
    using T = std::ranges::range_value_t<R>;
    return irecv_bytes("irecv", std::ranges::data(data),
                       detail::checked_bytes("irecv", rank_, std::ranges::size(data), sizeof(T)),
                       source, tag);
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

  /// Status of the first message that a receive(source, tag) would match, if one has arrived.
  std::optional<status> iprobe(int source = any_source, int tag = any_tag);
  /// Blocks until a message matching (source, tag) has arrived and returns its status.
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
  request irecv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag);
  void send_bytes(const char* call, const void* data, std::size_t bytes, int dest, int tag);
  status recv_bytes(const char* call, void* data, std::size_t bytes, int source, int tag);

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
