#pragma once
/// \file
/// `cairn::tasks`: the world split into data-parallel tasks (each a group of ranks), and the
/// transfers of distributed arrays between tasks (HPF/MPI): send/recv, isend/irecv, persistent
/// send_init/recv_init, the centralized strategy for small arrays, and inter-task collectives.

#include <cstdint>
#include <functional>
#include <memory>
#include <ranges>
#include <vector>

#include "cairn/array/detail/tasks.hpp"
#include "cairn/array/transfer.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn {

/// A transfer set up once and started many times (HPF/MPI's persistent requests): the
/// descriptor exchange and the plan happen on the first start only. Move-only; destroying it
/// while started waits for completion.
class persistent_transfer {
 public:
  /// An empty handle.
  persistent_transfer() noexcept;
  /// Wraps a prepared transfer (internal).
  explicit persistent_transfer(std::unique_ptr<detail::array_exec> e) noexcept;
  /// Takes over `other`'s transfer.
  persistent_transfer(persistent_transfer&& other) noexcept;
  /// Waits for this transfer if started (unless unwinding), then takes over `other`'s.
  persistent_transfer& operator=(persistent_transfer&& other) noexcept;
  /// Waits for a started transfer (during exception unwinding: withdraws it).
  ~persistent_transfer();
  /// Starts one transfer (the previous one must be complete).
  void start();
  /// Advances; true when the started transfer is complete.
  bool test();
  /// Blocks until the started transfer is complete.
  void wait();
  /// This rank's plan of the data movement once the first start has exchanged descriptors
  /// (for the centralized strategy: the plan of its first stage on this rank), else null.
  [[nodiscard]] std::shared_ptr<const redistribution_plan> plan() const;

 private:
  std::unique_ptr<detail::array_exec> e_;
};

/// The world split into tasks: each task is a group of ranks running its own data-parallel
/// code; every rank knows its task, its task's group and the others'. A value (cheap to copy).
class tasks {
 public:
  /// No tasks.
  tasks() = default;
  /// Consecutive blocks of world ranks of the given sizes (which must sum to the world size):
  /// `cairn::tasks t(w, {4, 4})`. Local, no communication.
  tasks(const world& w, const std::vector<int>& sizes);
  /// Tasks by color (collective over the world): ranks with equal colors form a task; tasks
  /// are numbered by increasing color, members in world rank order.
  static tasks by_color(world& w, int color);

  /// Number of tasks.
  [[nodiscard]] int count() const noexcept { return static_cast<int>(groups_.size()); }
  /// This rank's task.
  [[nodiscard]] int task() const noexcept { return me_; }
  /// Task of world rank r.
  [[nodiscard]] int task_of(int r) const { return task_of_.at(static_cast<std::size_t>(r)); }
  /// The group of task t.
  [[nodiscard]] const cairn::group& group(int t) const {
    return groups_.at(static_cast<std::size_t>(t));
  }
  /// This rank's task group.
  [[nodiscard]] const cairn::group& my_group() const { return group(me_); }
  /// The world.
  [[nodiscard]] cairn::world& get_world() noexcept { return w_; }

  /// Starts sending distributed array `a` (laid out over this rank's task) to task `to`, which
  /// receives it with the same tag into an array of the same global shape and element type.
  template <class T, int N>
  array_request isend(const darray<T, N>& a, int to, int tag = 0, const transfer_options& o = {}) {
    return start(a.get_layout().desc(), a.get_layout().group(), sizeof(T), const_cast<T*>(a.data()),
                 true, to, tag, o, "isend");
  }
  /// Starts receiving from task `from` into `b`.
  template <class T, int N>
  array_request irecv(darray<T, N>& b, int from, int tag = 0, const transfer_options& o = {}) {
    return start(b.get_layout().desc(), b.get_layout().group(), sizeof(T), b.data(), false, from,
                 tag, o, "irecv");
  }
  /// Blocking isend.
  template <class T, int N>
  void send(const darray<T, N>& a, int to, int tag = 0, const transfer_options& o = {}) {
    isend(a, to, tag, o).wait();
  }
  /// Blocking irecv.
  template <class T, int N>
  void recv(darray<T, N>& b, int from, int tag = 0, const transfer_options& o = {}) {
    irecv(b, from, tag, o).wait();
  }
  /// A persistent send of `a` to task `to` (the array must outlive it).
  template <class T, int N>
  persistent_transfer send_init(const darray<T, N>& a, int to, int tag = 0,
                                const transfer_options& o = {}) {
    return init(a.get_layout().desc(), a.get_layout().group(), sizeof(T), const_cast<T*>(a.data()),
                true, to, tag, o, "send_init");
  }
  /// A persistent receive into `b` from task `from`.
  template <class T, int N>
  persistent_transfer recv_init(darray<T, N>& b, int from, int tag = 0,
                                const transfer_options& o = {}) {
    return init(b.get_layout().desc(), b.get_layout().group(), sizeof(T), b.data(), false, from,
                tag, o, "recv_init");
  }

  /// Broadcasts `buf` (a value every rank holds, not distributed) from task `root` to all
  /// ranks: the first rank of each task joins a broadcast among tasks, then each task
  /// broadcasts inside (HPF/MPI section 4.1). Collective over the world.
  template <detail::writable_data R>
  void bcast(R&& buf, int root) {
    check_task("tasks::bcast", root);
    if (leaders_.rank() >= 0) leaders_.bcast(buf, root);
    cairn::group mine = my_group();
    mine.bcast(buf, 0);
  }
  /// Reduces `inout` (one value per task: the first rank's) over the tasks with `op`; every
  /// rank gets the result. Collective over the world.
  template <detail::writable_data R, class Op>
  void allreduce(R&& inout, Op op) {
    if (leaders_.rank() >= 0) leaders_.allreduce(inout, op);
    cairn::group mine = my_group();
    mine.bcast(inout, 0);
  }
  /// Reduces `inout` (one value per task: the first rank's) over the tasks with `op` into task
  /// `root`, whose ranks all get the result (other tasks' `inout` is left as is). Collective
  /// over the world.
  template <detail::writable_data R, class Op>
  void reduce(R&& inout, int root, Op op) {
    check_task("tasks::reduce", root);
    if (leaders_.rank() >= 0) {
      using T = std::ranges::range_value_t<R>;
      const std::vector<T> in(std::ranges::begin(inout), std::ranges::end(inout));
      leaders_.reduce(in, inout, root, op);
    }
    if (me_ == root) {
      cairn::group mine = my_group();
      mine.bcast(inout, 0);
    }
  }
  /// Element-wise reduction of one distributed array per task into `result` on task `root`
  /// (any layouts): every other task sends its part to the root task, which combines them in
  /// task order. Collective over the world; `result` is only written on the root task.
  template <class T, int N, class Op>
  void reduce(const darray<T, N>& part, darray<T, N>& result, int root, Op op, int tag = 0) {
    check_task("tasks::reduce", root);
    if (me_ != root) {
      send(part, root, tag);
      return;
    }
    redistribute(part, result);
    darray<T, N> incoming(result.get_layout());
    for (int t = 0; t < count(); ++t) {
      if (t == root) continue;
      recv(incoming, t, tag);
      auto out = result.local();
      auto in = incoming.local();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = op(out[i], in[i]);
    }
  }

 private:
  array_request start(const detail::layout_desc& d, const cairn::group& g, std::size_t elem,
                      void* data, bool sending, int peer, int tag, const transfer_options& o,
                      const char* call);
  persistent_transfer init(const detail::layout_desc& d, const cairn::group& g, std::size_t elem,
                           void* data, bool sending, int peer, int tag, const transfer_options& o,
                           const char* call);
  std::unique_ptr<detail::array_exec> prepare(const detail::layout_desc& d, const cairn::group& g,
                                              std::size_t elem, void* data, bool sending, int peer,
                                              int tag, const transfer_options& o, const char* call);
  void check_task(const char* call, int t) const;
  void build(const std::vector<std::vector<int>>& members);

  world w_;
  std::vector<cairn::group> groups_;
  std::vector<int> task_of_;
  cairn::group leaders_;
  int me_ = -1;
};

}  // namespace cairn
