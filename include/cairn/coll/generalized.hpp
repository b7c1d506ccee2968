#pragma once
/// \file
/// Aspen's generalized collectives (Aspen paper, sections 3.2-3.3) on the world: a reduce whose
/// participants P and receivers R are any sets of ranks. R may be a subset of P, disjoint from
/// it (receivers that contribute nothing) or both; every rank of P ∪ R calls, and nobody else.
/// Planned by src/coll/algorithms/reduce_generalized.cpp; on one node, short ones run on the node
/// board (src/coll/board/shared_memory_group.cpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/coll/persistent.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/group.hpp"
#include "cairn/runtime/request.hpp"

namespace cairn {

/// A set of world ranks for the generalized collectives: the members of a group
/// (`w.group(...)`), a vector or a braced list of ranks. Order and the handle used do not
/// matter, only the set. A view made for the call it is passed to (not copyable): the group or
/// vector must outlive the call, which it does when passed directly.
class rank_set {
 public:
  /// The members of `g`.
  rank_set(const cairn::group& g) : ranks_(g.members()) {}
  /// The ranks in `v`.
  rank_set(const std::vector<int>& v) : ranks_(v) {}
  /// The ranks of a braced list, e.g. `{0, 2}` (copied: the list lives only as long as the call;
  /// short lists in place, so that a call with literal sets allocates nothing).
  rank_set(std::initializer_list<int> l) {
    if (l.size() <= small_.size()) {
      std::size_t i = 0;
      for (int r : l) small_[i++] = r;
      ranks_ = std::span<const int>(small_.data(), l.size());
    } else {
      owned_.assign(l.begin(), l.end());
      ranks_ = owned_;
    }
  }
  /// Not copyable: it may point into its own storage.
  rank_set(const rank_set&) = delete;
  /// Not assignable.
  rank_set& operator=(const rank_set&) = delete;

  /// The ranks, as given.
  [[nodiscard]] std::span<const int> ranks() const noexcept { return ranks_; }

 private:
  std::array<int, 8> small_{};
  std::vector<int> owned_;
  std::span<const int> ranks_;
};

class reduce_balancer;

/// Algorithms of the generalized reduce.
enum class generalized_reduce_algorithm {
  automatic,      ///< the selection table's choice (cairn-info): without load balancing, on
                  ///< one node shared_memory_staged past 16384 bytes across processes, else
                  ///< shared_memory (past 16384 bytes only where ranks can copy straight
                  ///< between buffers: threads, MPI with CAIRN_CMA); hierarchical when P ∪ R
                  ///< spans several nodes and some node holds two of its ranks; else butterfly
  butterfly,      ///< section 3.2's messages: fold, halving, pruned butterfly, delivery
                  ///< (src/coll/algorithms/reduce_generalized.cpp)
  shared_memory,  ///< on one node, no messages: up to 16384 bytes every receiver combines the
                  ///< participants' inputs from the node board in rank order
                  ///< (src/coll/board/shared_memory_group.cpp); past that every member combines a
                  ///< segment of them straight from the buffers into the receivers' outputs
                  ///< (src/coll/board/shared_memory_direct.cpp)
  hierarchical,   ///< section 3.1 for ranks on several nodes: the participants of each node
                  ///< reduce to one of them, the butterfly's messages run among those leaders
                  ///< to one receiver per node, which broadcasts to its node's other receivers;
                  ///< no load balancing (src/coll/algorithms/reduce_generalized_hierarchical.cpp)
  shared_memory_staged,  ///< on one node, no messages, no load balancing: the participants
                         ///< stage their inputs through node memory in pipelined chunks, every
                         ///< member of P ∪ R combines a segment of each chunk in rank order and
                         ///< the receivers copy the segments out
                         ///< (src/coll/board/shared_memory_staged.cpp)
};

/// Options of the generalized reduce.
struct generalized_reduce_options {
  /// The algorithm (load_balance, balancer and direct_delivery shape the butterfly's messages).
  generalized_reduce_algorithm algorithm = generalized_reduce_algorithm::automatic;
  /// Section 3.3's greedy load balancing: where the algorithm leaves a choice (which node of a
  /// fold or halving pair receives and reduces, which nodes hold the result for delivery, which
  /// send it to the non-participant receivers), take the least loaded one by the count of
  /// incoming and outgoing messages so far. Same stage count; other messages.
  bool load_balance = false;
  /// Balance against the graphs of earlier (e.g. concurrent) reductions recorded here, and
  /// record this one's (implies load_balance). Every rank that calls must pass a balancer with the
  /// same history, so that all build the same graph: see reduce_balancer.
  reduce_balancer* balancer = nullptr;
  /// Skip forwarding hops: where the paper's graph has a participant that is not a receiver
  /// reduce one last operand only to pass the result on to one non-participant receiver, both
  /// operands go to that receiver, which reduces them itself. One stage less on that path (the
  /// Figure 5 pair's r2, {1, 2} -> {3}: one stage instead of two), the same messages and work;
  /// that receiver takes two messages in one stage. false: the paper's graph exactly.
  bool direct_delivery = true;
  /// The sequence space the reduction is numbered in. Generalized reduces on the same P ∪ R
  /// must be started in the same order on every rank of it, unless their streams differ:
  /// reductions of different streams match independently, so ranks may start them in any
  /// order relative to each other (the flow layer gives each reduce module its own stream).
  /// 0: the stream of the collectives on the group of P ∪ R.
  std::uint64_t stream = 0;
};

/// The messages sent and received per world rank by the communication graphs of a series of
/// generalized reduces: section 3.3's load balancing across concurrent reductions (Figure 6:
/// the graph of r2 avoids the nodes that already receive in r1's). Create one on every rank,
/// pass it (generalized_reduce_options::balancer) to each reduction of the series that the rank
/// calls, and record() the ones it does not call, in the same order everywhere: every rank then
/// holds the same counts and plans the same graphs. No communication.
class reduce_balancer {
 public:
  /// Messages world rank `r` receives in the recorded graphs.
  [[nodiscard]] int incoming(int r) const noexcept {
    return r >= 0 && static_cast<std::size_t>(r) < in_.size() ? in_[static_cast<std::size_t>(r)]
                                                              : 0;
  }
  /// Messages world rank `r` sends in the recorded graphs.
  [[nodiscard]] int outgoing(int r) const noexcept {
    return r >= 0 && static_cast<std::size_t>(r) < out_.size() ? out_[static_cast<std::size_t>(r)]
                                                               : 0;
  }
  /// Counts one message from world rank `from` to `to` (other traffic may be accounted too).
  void add_edge(int from, int to);
  /// Records the load-balanced graph of the generalized reduce from `participants` to
  /// `receivers` without running it (for the ranks that do not call it); `direct_delivery` as
  /// the callers pass it (generalized_reduce_options::direct_delivery).
  void record(const rank_set& participants, const rank_set& receivers, bool direct_delivery = true);
  /// Forgets everything recorded.
  void clear() noexcept {
    in_.clear();
    out_.clear();
  }

 private:
  std::vector<int> in_, out_;
};

namespace coll {

/// The generalized collectives (a mixin of `world`: `Derived` provides `coll_target(call)` of
/// the world; ranks are world ranks).
template <class Derived>
class generalized_collectives {
 public:
  /// Generalized reduce: every rank of `participants` contributes `in` (n elements, the same n
  /// everywhere) and every rank of `receivers` gets the element-wise reduction with `op` of all
  /// participants' inputs in `out` (n elements). Every rank in either set calls; a receiver that
  /// does not participate passes an empty `in`, a participant that does not receive may pass an
  /// empty `out`. `op` must be commutative. Fold, halving while |P| >= 2 max(|R_p|, |R_np|),
  /// pruned butterfly, delivery to R_np: at most 2 + floor(log2 |P|) stages when |R_np| <= |P|
  /// (one less where direct delivery skips a forwarding hop). Plans are cached per rank by
  /// (P, R, size, options): a repeated call plans nothing.
  template <detail::lasting_input In, detail::lasting_output Out, class Op = plus>
  request ireduce(rank_set participants, rank_set receivers, In&& in, Out&& out, Op op = {},
                  generalized_reduce_options opt = {}) {
    return detail::start_prepared(
        reduce_impl("ireduce", participants, receivers, in, out, op, opt));
  }
  /// Blocking generalized reduce.
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  void reduce(rank_set participants, rank_set receivers, const In& in, Out&& out, Op op = {},
              generalized_reduce_options opt = {}) {
    detail::run_blocking(reduce_impl("reduce", participants, receivers, in, out, op, opt));
  }
  /// Persistent generalized reduce (as MPI-4's MPI_Reduce_init): checks and plans once, binding
  /// `in` and `out`; every start() runs the same schedule on their current contents. Every rank
  /// of P ∪ R makes it, and starts it in the same order as the others relative to the other
  /// generalized reduces on the same P ∪ R. A balancer (opt.balancer) records the graph once,
  /// here. (Named ireduce_init: a reduce_init beside the rooted one would need the world to
  /// import both overload sets.)
  template <detail::contiguous_data In, detail::writable_data Out, class Op = plus>
  requires std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out> persistent_request
  ireduce_init(rank_set participants, rank_set receivers, In&& in, Out&& out, Op op = {},
               generalized_reduce_options opt = {}) {
    return persistent_request(
        reduce_impl("ireduce_init", participants, receivers, in, out, op, opt));
  }

 private:
  template <class In, class Out, class Op>
  detail::prepared reduce_impl(const char* call, const rank_set& participants,
                               const rank_set& receivers, const In& in, Out& out, const Op& op,
                               const generalized_reduce_options& opt) {
    using T = std::ranges::range_value_t<In>;
    static_assert(std::is_same_v<T, std::ranges::range_value_t<Out>>,
                  "cairn::reduce: input and output element types differ");
    const detail::coll_target t = static_cast<const Derived&>(*this).coll_target(call);
    return detail::prepare_reduce_generalized(t, call, participants.ranks(), receivers.ranks(),
                                              std::ranges::data(in), std::ranges::size(in),
                                              std::ranges::data(out), std::ranges::size(out),
                                              detail::bind_op<T>(op), opt);
  }
};

}  // namespace coll
}  // namespace cairn
