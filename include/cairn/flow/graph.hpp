#pragma once
/// \file
/// `cairn::flow`: Aspen's flow graphs (Aspen paper, section 2.2 and Figures 3, 5, 7). A program
/// is a set of *module instances* that send on output queues and dequeue from input queues; a
/// graph built the same way on every rank states alone who talks to whom. Whether a send is
/// point-to-point or part of a collective is the graph's business, never the module's:
///
///     struct parallel {
///       static constexpr cairn::flow::input<double> in{};                // the default input
///       static constexpr cairn::flow::output<double> out{};              // the default output
///       static constexpr cairn::flow::output<double> out1{"outQueue1"};  // a named one
///       cairn::flow::task run(cairn::flow::context& ctx) {
///         ctx.send(out, 1.0);                       // joins r1
///         ctx.send(out1, 2.0);                      // joins r2 (p[1], p[2] only)
///         double r = co_await ctx.dequeue(in);      // r1's sum on p[0], p[2]; r2's on p[3]
///       }
///     };
///     cairn::flow::graph g(w);
///     auto p = g.add<parallel>("p", 4);
///     auto r1 = g.reduce<double>("r1", cairn::plus{});
///     auto r2 = g.reduce<double>("r2", cairn::multiplies{});
///     g.flow(p, r1, {p[0], p[2]});                 // Aspen: p ||| r1(sum) ||| p[0], p[2]
///     g.flow(p.slice(1, 3).port(parallel::out1), r2, p[3]);
///     g.run();
///
/// Lowering (src/flow/lower.cpp): instances are placed on ranks (balanced blocks, or the user's
/// map); a flow between instances becomes items on one aggregated record channel (or a push
/// into the queue when both ends share a rank); a reduce becomes cairn's generalized reduce over
/// the ranks of its participants and receivers, after the participants on one rank combined
/// locally, each reduce module in a sequence space of its own so that reductions on overlapping
/// sets run concurrently; a reduce with one participant vanishes (its sends go straight to the
/// receivers, Figure 7); a bcast becomes one item per receiving rank.
///
/// Execution (src/flow/runner.cpp): every rank runs its instances' `run` coroutines
/// cooperatively on its thread; the run ends once every `run` returned, every item arrived
/// and every reduce completed. See ARCHITECTURE.md, "Flow graphs".

#include <algorithm>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "cairn/coll/op.hpp"
#include "cairn/flow/task.hpp"
#include "cairn/msg/channel.hpp"
#include "cairn/msg/detail/packing.hpp"
#include "cairn/msg/detail/record_channel.hpp"
#include "cairn/msg/route.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::detail {
class rank_context;
}

namespace cairn::flow {

/// An input queue of a module, carrying items of type T. Declare queues as static constexpr
/// members of the module (`static constexpr input<double> in{};`): the graph and the module
/// name the same object. The member named `in` is the module's default input.
template <class T>
struct input {
  using value_type = T;     ///< item type
  const char* name = "in";  ///< the queue's name in errors and drawings
};
/// An output queue of a module (see input); the member named `out` is the default output.
template <class T>
struct output {
  using value_type = T;      ///< item type
  const char* name = "out";  ///< the queue's name in errors and drawings
};

/// Options of a flow graph.
struct graph_options {
  /// Bytes per buffer of the graph's channels (0: the channels' default, 16 KiB).
  std::size_t buffer_bytes = 0;
  /// Section 3.3's greedy load balancing of the reduces' message graphs, across all reduce
  /// modules of the graph (each planned against the ones declared before it). It makes the
  /// reductions use messages where one node's board would serve (see
  /// generalized_reduce_options::load_balance): worth it across nodes.
  bool balance_reduces = false;
  /// Flow control: bytes of items a rank may have sent to another rank beyond what that rank
  /// took in. A rank takes in what arrived once it ran every instance that had items waiting
  /// (it then returns credit). While a rank is over the window toward any rank, its instances
  /// that yield wait at their yield; a send never waits. So a producer that yields cannot
  /// run ahead of its consumers' ranks by more than this. 0: no limit. The same on every rank,
  /// like the graph itself.
  std::size_t window_bytes = std::size_t{1} << 20;
};

class context;
class graph;
class scope;

namespace detail {

class runner;
struct lowered;
class round_buffers;
struct queue_base;
struct lane_base;
struct lane_plan;

/// What the runtime needs to know about a queue's item type without knowing the type.
struct type_ops {
  const char* (*name)() noexcept;         // the type's name (typeid)
  std::unique_ptr<queue_base> (*make)();  // an empty input queue of it
  // A lane of it (see lane_plan), or null for types that travel as records.
  std::unique_ptr<lane_base> (*make_lane)(runner&, const lane_plan&);
};

template <class T>
const char* type_name() noexcept {
  return typeid(T).name();
}
template <class T>
std::unique_ptr<queue_base> make_queue();
/// True if items of T travel between ranks on a lane: copied as they are, read in place
/// (an alignment a message keeps) and small enough that a buffer holds many.
template <class T>
inline constexpr bool lane_item = cairn::detail::transferable<T> &&
                                  alignof(T) <= msg::detail::message_align && sizeof(T) <= 4096;
template <class T>
std::unique_ptr<lane_base> make_lane(runner& r, const lane_plan& p);
template <class T>
constexpr auto lane_maker() noexcept {
  using maker = std::unique_ptr<lane_base> (*)(runner&, const lane_plan&);
  if constexpr (lane_item<T>)
    return maker{&make_lane<T>};
  else
    return maker{nullptr};
}
template <class T>
inline constexpr type_ops ops_of{&type_name<T>, &make_queue<T>, lane_maker<T>()};

/// A queue as the graph knows it: its object's address (the identity module and graph share),
/// its name and its item type.
struct queue_ref {
  const void* id = nullptr;
  const char* name = "";
  const type_ops* type = nullptr;
};

/// One input queue of one instance on this rank. `waiter`: the coroutine suspended in a
/// dequeue of it. `unpack`: takes a packed item from a record (set for queues fed from other
/// ranks).
struct queue_base {
  runner* owner = nullptr;
  int slot = -1;  // the instance's slot on this rank
  std::coroutine_handle<> waiter;
  std::uint32_t streak = 0;  // items dequeued since the instance last suspended on this queue
  void (*unpack)(queue_base&, std::span<const std::byte>, int rank) = nullptr;
  std::size_t (*size)(const queue_base&) noexcept = nullptr;
  virtual ~queue_base() = default;
  /// Makes the waiting coroutine ready (defined after runner).
  inline void wake();
};

/// A FIFO of items in one growing ring (no allocation per item once it has grown).
template <class T>
class item_ring {
 public:
  [[nodiscard]] bool empty() const noexcept { return n_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  template <class U>
  void push_back(U&& v) {
    if (n_ == cap_) grow();
    buf_[(head_ + n_) & (cap_ - 1)] = std::forward<U>(v);
    ++n_;
  }
  /// Appends `v`'s items in order.
  void append(std::span<const T> v) {
    while (cap_ - n_ < v.size()) grow();
    for (const T& x : v) {
      buf_[(head_ + n_) & (cap_ - 1)] = x;
      ++n_;
    }
  }
  T pop_front() {
    T v = std::move(buf_[head_]);
    head_ = (head_ + 1) & (cap_ - 1);
    --n_;
    return v;
  }

 private:
  void grow() {
    // Default-initialized, not value-initialized: a trivial item type's new slots are not
    // zeroed (a queue a producer runs ahead of grows to megabytes).
    const std::size_t cap = cap_ ? 2 * cap_ : 16;
    std::unique_ptr<T[]> b(new T[cap]);
    for (std::size_t i = 0; i < n_; ++i) b[i] = std::move(buf_[(head_ + i) & (cap_ - 1)]);
    buf_ = std::move(b);
    cap_ = cap;
    head_ = 0;
  }
  std::unique_ptr<T[]> buf_;  // cap_ slots, a power of two
  std::size_t cap_ = 0, head_ = 0, n_ = 0;
};

template <class T>
struct item_queue final : queue_base {
  item_ring<T> items;
  // Items that dequeue_into took back from its instance: a reduce delivery reuses their
  // storage (a vector's capacity) instead of allocating. At most spare_items.
  std::vector<T> spare;
};
/// Items a queue keeps for reuse (as many as a reduce has rounds in flight).
inline constexpr std::size_t spare_items = 4;

template <class T>
void unpack_item(queue_base& q, std::span<const std::byte> b, int rank) {
  auto& tq = static_cast<item_queue<T>&>(q);
  if constexpr (cairn::detail::transferable<T>) {
    if (b.size() != sizeof(T))
      cairn::detail::fail("flow::graph::run", rank, "an item of ", b.size(),
                          " bytes for a queue of ", sizeof(T), "-byte items");
    T v;
    std::memcpy(static_cast<void*>(&v), b.data(), sizeof(T));
    tq.items.push_back(v);
  } else {
    T v{};
    msg::detail::unpack_all(b, "flow::graph::run", rank, v);
    tq.items.push_back(std::move(v));
  }
  q.wake();
}
template <class T>
std::size_t queue_size(const queue_base& q) noexcept {
  return static_cast<const item_queue<T>&>(q).items.size();
}
template <class T>
std::unique_ptr<queue_base> make_queue() {
  auto q = std::make_unique<item_queue<T>>();
  q->unpack = &unpack_item<T>;
  q->size = &queue_size<T>;
  return q;
}

/// A module instance behind one interface (init and run are called once per instance).
struct module_box {
  virtual ~module_box() = default;
  virtual void init(context& c) = 0;
  virtual task run(context& c) = 0;
};
template <class M>
struct module_holder final : module_box {
  M m;
  template <class F>
  module_holder(F& make, int index) : m(make(index)) {}
  void init(context& c) override {
    if constexpr (requires { m.init(c); }) m.init(c);
  }
  task run(context& c) override { return m.run(c); }
};

/// The elements of a reduce module's items: a reduce of T reduces one T, a reduce of
/// std::vector<T> reduces the vectors element-wise (all of one length per round).
template <class Q>
struct reduce_payload {
  using element = Q;
  static const Q* data(const Q& q) noexcept { return &q; }
  static std::size_t size(const Q&) noexcept { return 1; }
  static Q make(const std::byte* p, std::size_t, std::vector<Q>&) {
    Q q;
    std::memcpy(static_cast<void*>(&q), p, sizeof(Q));
    return q;
  }
};
template <class E>
struct reduce_payload<std::vector<E>> {
  using element = E;
  static const E* data(const std::vector<E>& q) noexcept { return q.data(); }
  static std::size_t size(const std::vector<E>& q) noexcept { return q.size(); }
  /// Moves into `q` a spare with room for `n` elements, resized to n (no allocation, no page to
  /// fault in); false if none has the room.
  static bool reuse_spare(std::vector<std::vector<E>>& spare, std::size_t n, std::vector<E>& q) {
    if (spare.empty() || spare.back().capacity() < n) return false;
    q = std::move(spare.back());
    spare.pop_back();
    q.resize(n);
    return true;
  }
  static std::vector<E> make(const std::byte* p, std::size_t n,
                             std::vector<std::vector<E>>& spare) {
    if (std::vector<E> q; reuse_spare(spare, n, q)) {
      if (n) std::memcpy(static_cast<void*>(q.data()), p, n * sizeof(E));
      return q;
    }
    if constexpr (alignof(E) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      // Copied in one pass, not zeroed first: a round's buffer is aligned for E (operator new)
      // and holds its elements (copied or combined there as E).
      const E* first = reinterpret_cast<const E*>(p);
      return std::vector<E>(first, first + n);
    } else {
      std::vector<E> q(n);
      if (n) std::memcpy(static_cast<void*>(q.data()), p, n * sizeof(E));
      return q;
    }
  }
};

/// Where the rounds of a reduce module of vectors end on a rank with receivers: each round
/// reduces straight into a vector that then moves into the first receiving queue, so the
/// result is not copied again (the other receivers of the rank get copies, made from it before
/// it moves). The vectors come from that queue's spares (what dequeue_into gave back), so a
/// receiver that dequeues into a kept vector makes the rounds allocate nothing.
class round_results {
 public:
  virtual ~round_results() = default;
  /// Storage for the next round's `n` elements (rounds open and are delivered in order).
  virtual std::byte* open(std::size_t n) = 0;
  /// The oldest open round's elements.
  virtual const std::byte* oldest() const = 0;
  /// Moves the oldest open round's vector into the first receiving queue.
  virtual void deliver_oldest() = 0;
};
template <class E>
class vector_results final : public round_results {
 public:
  explicit vector_results(item_queue<std::vector<E>>& first) : first_(first) {}
  std::byte* open(std::size_t n) override {
    std::vector<E> v;
    // A new one is value-initialized; a spare only where it lacks elements.
    if (!reduce_payload<std::vector<E>>::reuse_spare(first_.spare, n, v)) v.resize(n);
    open_.push_back(std::move(v));
    return reinterpret_cast<std::byte*>(open_.back().data());
  }
  const std::byte* oldest() const override {
    return reinterpret_cast<const std::byte*>(open_.front().data());
  }
  void deliver_oldest() override {
    first_.items.push_back(std::move(open_.front()));
    open_.pop_front();
    first_.wake();
  }

 private:
  item_queue<std::vector<E>>& first_;
  std::deque<std::vector<E>> open_;  // a vector per round in flight, oldest first
};

/// A built-in collective module as declared (reduce or bcast).
struct collective_decl {
  std::string name;
  bool is_reduce = false;
  const type_ops* type = nullptr;
  // reduce only: element size, the operation, and the typed steps the runner calls.
  std::size_t elem = 0;
  std::shared_ptr<const void> op;
  const char* op_name = "";
  void (*combine)(const void* op, const std::byte* from, std::byte* to, std::size_t n) = nullptr;
  request (*start)(world& w, const std::vector<int>& p, const std::vector<int>& r, std::byte* in,
                   std::size_t n_in, std::byte* out, std::size_t n_out, const void* op,
                   const generalized_reduce_options& opt) = nullptr;
  void (*deliver)(queue_base& q, const std::byte* elems, std::size_t n) = nullptr;
  /// A reduce of vectors: its rounds' results on a rank whose first receiving queue is `first`
  /// (null for other payloads, which deliver copies from a round buffer).
  std::unique_ptr<round_results> (*results)(queue_base& first) = nullptr;
};

/// One end of a flow statement: instances' queues, or a collective module.
struct end_desc {
  std::vector<int> instances;  // empty for a collective
  queue_ref q;
  int collective = -1;
};

/// An input queue of an instance.
struct in_port {
  int instance = -1;
  queue_ref q;
  bool operator==(const in_port& o) const noexcept {
    return instance == o.instance && q.id == o.q.id;
  }
};
/// An output queue of an instance bound by a flow statement: into a collective module, or to
/// input queues.
struct out_decl {
  int instance = -1;
  queue_ref q;
  int collective = -1;
  std::vector<in_port> targets;
};

/// A module vector as declared.
struct group_decl {
  std::string name;
  int first = 0, count = 0;
  bool vector = false;  // declared with a count: instances print as name[i]
  std::string module_type;
  std::function<std::unique_ptr<module_box>(int)> make;
};

/// Everything a graph was told, before lowering (src/flow/graph.cpp).
struct graph_data {
  explicit graph_data(const world& w, graph_options o);
  world w;  // a handle of the graph's world
  graph_options opts;
  std::vector<group_decl> groups;
  std::vector<int> group_of;  // instance -> group
  std::vector<int> placed;    // instance -> rank given by the user, or -1
  std::vector<collective_decl> collectives;
  std::vector<std::vector<in_port>> receivers;  // per collective: the queues it flows into
  std::vector<out_decl> outs;                   // bound output queues, in statement order

  int add_group(std::string name, int count, bool vector, const char* type,
                std::function<std::unique_ptr<module_box>(int)> make);
  int add_collective(collective_decl d);
  void connect(const char* call, const end_desc& from, const std::vector<end_desc>& to);
  void place(const std::vector<int>& instances, const std::vector<int>& ranks);
  [[nodiscard]] std::string instance_name(int instance) const;
  [[noreturn]] void fail(const char* call, const std::string& what) const;
  void check_index(const char* call, int group, int i, int count) const;
};

/// A wire record's first word with this bit set: a reduce round's start for a receiver that
/// does not participate (the rest of the word is the reduce module's number).
inline constexpr std::uint32_t control_bit = 0x80000000u;
/// A wire record's first word for a credit (graph_options::window_bytes): 8 bytes follow, the
/// bytes of items the sender took in since its last credit to the receiver.
inline constexpr std::uint32_t credit_word = 0xFFFFFFFFu;
/// A credit of this many bytes: the sender takes no more items through its instances.
inline constexpr std::uint64_t released = ~std::uint64_t{0};

/// Hands arriving records to the runner (src/flow/runner.cpp).
struct record_sink {
  runner* r;
  void operator()(std::span<const std::byte> payload, int origin) const;
};
using record_channel = msg::detail::record_channel<msg::route::direct, record_sink>;

/// A lane (lowered::lane) on this rank: the items that the instances of one module vector send
/// on one output queue to other ranks, on a typed channel of their own (no record framing, no
/// dispatch per item; a message's items join their queue in one batch). An item's source rank
/// names its binding. Made in the order of the plan's lanes, the same on every rank.
struct lane_plan {
  const type_ops* type = nullptr;
  std::string name;  // the channel's, "flow lane <vector>.<queue>"
  // Per source rank: the target queues on this rank of the binding placed there (null: none).
  std::vector<const std::vector<queue_base*>*> from;
};
/// A lane's channel behind one interface (the runner flushes it and ends its phase).
struct lane_base {
  virtual ~lane_base() = default;
  virtual void flush() = 0;
  virtual msg::channel_phase done() = 0;
};

/// A bound output queue of an instance on this rank: where its items go.
struct out_binding {
  const void* queue = nullptr;
  const char* name = "";
  std::uint32_t wire = 0;          // its number on the wire
  lane_base* lane = nullptr;       // the lane that carries its items to other ranks, or null
  int lane_only = -1;              // the one rank its items go to when that is all, or -1
  int reduce = -1;                 // the reduce it joins (runner's reduce state), or -1
  int reduce_slot = -1;            // the instance's place among the reduce's local participants
  std::vector<queue_base*> local;  // target queues on this rank
  std::vector<int> remote;         // other ranks with target queues
};

/// The instances of one rank and what drives them: the part of the runner the typed send and
/// dequeue reach inline; the rest is in src/flow/runner.cpp.
class runner {
 public:
  struct instance_state {
    int instance = -1;  // graph-wide number
    int index = 0;      // within its vector
    int count = 1;      // instances in its vector
    std::string name;
    std::vector<out_binding> outs;
    std::vector<std::pair<const void*, std::unique_ptr<queue_base>>> ins;
    std::unique_ptr<module_box> module;
    std::coroutine_handle<task::promise_type> top;  // its run, while it runs
  };

  runner(const graph_data& g, const lowered& plan, round_buffers& buffers);
  ~runner();
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;

  /// Runs the rank's instances to the end of the graph's run.
  void run();

  /// Where instance `slot`'s queue `q` sends (an error names a queue no flow binds).
  out_binding& out(int slot, const void* q, const char* name) {
    for (out_binding& b : instances_[static_cast<std::size_t>(slot)].outs)
      if (b.queue == q) return b;
    unbound(slot, name, "sends on output queue", "binds");
  }
  /// Instance `slot`'s input queue `q` (an error names a queue no flow feeds).
  queue_base& in(int slot, const void* q, const char* name) {
    for (auto& [id, queue] : instances_[static_cast<std::size_t>(slot)].ins)
      if (id == q) return *queue;
    unbound(slot, name, "dequeues from input queue", "feeds");
  }
  /// Queues `h` (of instance `slot`), which has items to take, to be resumed.
  void make_ready(int slot, std::coroutine_handle<> h) { woken_.push_back(ready_entry{slot, h}); }
  /// Queues `h` (of instance `slot`), which yielded, to be resumed once no instance of the
  /// rank has items waiting and the rank is within its window toward every rank.
  void make_yielded(int slot, std::coroutine_handle<> h) {
    yielded_.push_back(ready_entry{slot, h});
  }
  /// Counts `bytes` of a record sent to rank `dest` against the window.
  void count_sent(int dest, std::size_t bytes) {
    const auto d = static_cast<std::size_t>(dest);
    if (released_[d]) return;
    std::uint64_t& u = unacked_[d];
    const bool was_under = u < window_;
    u += bytes;
    if (was_under && u >= window_) ++over_window_;
  }
  /// A reduce contribution of `n` elements from instance `slot`.
  void contribute(const out_binding& b, int slot, const std::byte* elems, std::size_t n);
  /// Counts `bytes` of items that arrived from rank `origin` on a lane, to be credited back.
  void took_in(int origin, std::size_t bytes) noexcept {
    owed_[static_cast<std::size_t>(origin)] += bytes;
    owed_total_ += bytes;
  }
  /// The record channel of the graph.
  record_channel& channel() noexcept { return *channel_; }
  /// graph_options::buffer_bytes.
  [[nodiscard]] std::size_t buffer_bytes() const noexcept;
  /// This rank.
  [[nodiscard]] int rank() const noexcept { return me_; }
  /// The world.
  [[nodiscard]] const world& world_of() const noexcept { return w_; }
  /// The instance in `slot`.
  [[nodiscard]] const instance_state& instance(int slot) const noexcept {
    return instances_[static_cast<std::size_t>(slot)];
  }
  /// Takes one arrived record (record_sink).
  void on_record(std::span<const std::byte> payload, int origin);
  /// Scratch bytes for packing items of types without a size known up front.
  std::vector<std::byte>& scratch() noexcept { return scratch_; }

 private:
  [[noreturn]] void unbound(int slot, const char* queue, const char* what, const char* verb) const;
  struct reduce_state;
  struct ready_entry {
    int slot;
    std::coroutine_handle<> h;
  };
  static int rank_of_target(const lowered& plan, const in_port& t);
  /// True if the graph's channel would carry anything: items between ranks, or reduce starts
  /// to receivers that do not participate. Channels are made collectively in the same order
  /// on every rank: each decides from the plan, the same everywhere, and a graph without
  /// either makes none (nothing to poll while its instances wait for reduces).
  static bool needs_channel(const lowered& plan);
  void resume(const ready_entry& e);
  bool advance_reduces();
  void start_rounds(reduce_state& r);
  template <class Round>
  void start_round(reduce_state& r, Round& x);
  void finish(cairn::detail::rank_context& ctx);
  /// True if an instance can run now.
  [[nodiscard]] bool runnable() const noexcept {
    return !woken_.empty() || (!yielded_.empty() && over_window_ == 0);
  }
  void take_credit(int origin, std::uint64_t bytes);
  /// Returns the credit owed to other ranks once it reached a quarter of the window (called
  /// when no instance of the rank has items waiting).
  void return_credits();
  void send_credit(int dest, std::uint64_t bytes);
  void flush_all();
  void plan_lanes();  // lane_plans_

  const graph_data& g_;
  const lowered& plan_;
  round_buffers& buffers_;  // the graph's, kept between runs
  cairn::world w_;
  int me_;
  std::vector<instance_state> instances_;
  std::vector<std::unique_ptr<reduce_state>> reduces_;
  std::vector<std::vector<queue_base*>> arrivals_;  // per binding: its target queues here
  // Ready instances: those with items waiting run before those that yielded, as a channel's
  // handler runs when its items arrive. A rank takes in what reached it before it makes more
  // (producers yield), so its queues stay as short as the work in flight.
  item_ring<ready_entry> woken_, yielded_;   // rings: a deque allocates a chunk per 32 entries
  std::unique_ptr<record_channel> channel_;  // null when needs_channel() is false
  std::vector<lane_plan> lane_plans_;
  std::vector<std::unique_ptr<lane_base>> lanes_;  // while the graph runs
  std::vector<std::byte> scratch_;
  struct control {
    std::uint32_t reduce;
    std::uint64_t round, n;
  };
  std::vector<control> controls_;  // reduce starts that arrived, started by the loop
  // Flow control (graph_options::window_bytes), per rank: bytes sent to it not yet credited,
  // bytes arrived from it not yet credited back, whether it released this rank.
  std::uint64_t window_ = 0;
  std::vector<std::uint64_t> unacked_, owed_;
  std::vector<bool> released_;
  std::vector<int> feeders_;  // other ranks with instances that send to this rank's
  std::uint64_t owed_total_ = 0;
  int over_window_ = 0;  // ranks with unacked_ at or over the window
  int running_ = 0;
};

inline void queue_base::wake() {
  if (waiter) {
    owner->make_ready(slot, waiter);
    waiter = {};
  }
}

/// A lane of items of T.
template <class T>
class lane final : public lane_base {
  // The channel's handler: a message's items, all from one rank.
  struct take {
    lane* self;
    void operator()(std::span<const T> items, msg::channel_context& c) const {
      self->arrived(items, c.source());
    }
  };

 public:
  lane(runner& r, const lane_plan& p)
      : r_(r),
        plan_(p),
        ch_(r.world_of(),
            block_distribution(static_cast<std::uint64_t>(r.world_of().size()),
                               r.world_of().size()),
            take{this}, msg::route::direct{}, msg::combine::none{}, options(r, p)) {}
  /// Sends `v` to rank `dest`, not this one.
  void send(int dest, const T& v) { ch_.send_to(dest, v); }
  void flush() override { ch_.flush(); }
  msg::channel_phase done() override { return ch_.done(); }

 private:
  static msg::channel_options options(const runner& r, const lane_plan& p) {
    msg::channel_options o;
    o.name = p.name.c_str();
    if (const std::size_t bytes = r.buffer_bytes())
      o.buffer_items = std::max<std::size_t>(1, bytes / sizeof(T));
    return o;
  }
  void arrived(std::span<const T> items, int origin) {
    const std::vector<queue_base*>* to = plan_.from[static_cast<std::size_t>(origin)];
    if (!to || to->empty())
      cairn::detail::fail("flow::graph::run", r_.rank(), items.size(), " items on ", plan_.name,
                          " from rank ", origin,
                          ", where no instance of this rank takes them (ranks built different "
                          "graphs?)");
    for (queue_base* q : *to) {
      static_cast<item_queue<T>*>(q)->items.append(items);
      q->wake();
    }
    r_.took_in(origin, items.size_bytes());
  }

  runner& r_;
  const lane_plan& plan_;
  msg::channel<T, block_distribution, take> ch_;
};
template <class T>
std::unique_ptr<lane_base> make_lane(runner& r, const lane_plan& p) {
  return std::make_unique<lane<T>>(r, p);
}

/// Items an instance dequeues in a row before the rank's other ready instances get a turn.
/// Without it, an instance whose sends bring it new items (each full buffer polls) could run
/// indefinitely while the instances it feeds on this rank wait and their queues grow.
inline constexpr std::uint32_t dequeue_quantum = 256;

template <class T>
class dequeue_awaiter {
 public:
  dequeue_awaiter(item_queue<T>& q, int slot) : q_(q), slot_(slot) {}
  bool await_ready() const noexcept { return !q_.items.empty() && ++q_.streak < dequeue_quantum; }
  void await_suspend(std::coroutine_handle<> h) {
    q_.streak = 0;
    if (!q_.items.empty()) {  // its turn is over: the rank's other instances run first
      q_.owner->make_ready(slot_, h);
      return;
    }
    q_.waiter = h;
    q_.slot = slot_;
  }
  T await_resume() { return q_.items.pop_front(); }

 protected:
  item_queue<T>& q_;
  int slot_;
};

/// co_await ctx.dequeue_into(q, v): the next item into v; v's old value is kept for reuse.
template <class T>
class dequeue_into_awaiter : public dequeue_awaiter<T> {
 public:
  dequeue_into_awaiter(item_queue<T>& q, int slot, T& to) : dequeue_awaiter<T>(q, slot), to_(to) {}
  void await_resume() {
    T next = this->q_.items.pop_front();
    std::swap(to_, next);
    if (this->q_.spare.size() < spare_items) this->q_.spare.push_back(std::move(next));
  }

 private:
  T& to_;
};

/// co_await ctx.yield(): back of the rank's ready list.
class yield_awaiter {
 public:
  yield_awaiter(runner& r, int slot) : r_(r), slot_(slot) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { r_.make_yielded(slot_, h); }
  void await_resume() const noexcept {}

 private:
  runner& r_;
  int slot_;
};

}  // namespace detail

/// What a module instance sees of the graph while it runs: its queues and its place.
class context {
 public:
  /// Sends `v` on output queue `q`. Never blocks on a receiver: the item goes to the queues the
  /// graph connected `q` to (or joins the reduce it is bound to). A queue no flow binds gets a
  /// cairn::error naming the instance and queue.
  template <class T, class U>
  requires std::convertible_to<const U&, T>
  void send(const output<T>& q, const U& value) {
    detail::out_binding& b = r_->out(slot_, &q, q.name);
    if constexpr (detail::lane_item<T> && std::is_same_v<U, T>) {
      // The common case first: all to one other rank on a lane, without send_bound's general
      // path (local queues, a reduce, several ranks, records).
      if (b.lane_only >= 0) {
        r_->count_sent(b.lane_only, sizeof(T));  // first: the send may poll and bring its credit
        static_cast<detail::lane<T>&>(*b.lane).send(b.lane_only, value);
        return;
      }
    }
    if constexpr (std::is_same_v<U, T>)
      send_bound(b, value);
    else
      send_bound(b, static_cast<T>(value));
  }
  /// Awaitable: the next item of input queue `q` (`T v = co_await ctx.dequeue(q);`). Items
  /// from one sending instance arrive in the order sent. A queue no flow feeds gets a
  /// cairn::error naming the instance and queue.
  template <class T>
  [[nodiscard]] detail::dequeue_awaiter<T> dequeue(const input<T>& q) {
    return {static_cast<detail::item_queue<T>&>(r_->in(slot_, &q, q.name)), slot_};
  }
  /// Awaitable: the next item of input queue `q` into `v` (`co_await ctx.dequeue_into(q, v);`),
  /// as dequeue. `v`'s old value goes back to the queue, whose later reduce results reuse its
  /// storage: a module that dequeues vectors this way every round allocates nothing (a fresh
  /// vector per round would fault its pages in each time the allocator returned them).
  template <class T>
  [[nodiscard]] detail::dequeue_into_awaiter<T> dequeue_into(const input<T>& q, T& v) {
    return {static_cast<detail::item_queue<T>&>(r_->in(slot_, &q, q.name)), slot_, v};
  }
  /// Items waiting in input queue `q` now.
  template <class T>
  [[nodiscard]] std::size_t available(const input<T>& q) {
    return static_cast<detail::item_queue<T>&>(r_->in(slot_, &q, q.name)).items.size();
  }
  /// Awaitable: lets the rank's other instances run (a long producer should yield now and then).
  [[nodiscard]] detail::yield_awaiter yield() { return {*r_, slot_}; }
  /// This instance's index in its module vector.
  [[nodiscard]] int index() const noexcept { return r_->instance(slot_).index; }
  /// The number of instances in its module vector.
  [[nodiscard]] int count() const noexcept { return r_->instance(slot_).count; }
  /// Its name, e.g. "p[2]".
  [[nodiscard]] const std::string& name() const noexcept { return r_->instance(slot_).name; }
  /// The rank it runs on.
  [[nodiscard]] int rank() const noexcept { return r_->rank(); }
  /// The world of the graph.
  [[nodiscard]] const cairn::world& world() const noexcept { return r_->world_of(); }

  /// Internal: made by the runner.
  context(detail::runner& r, int slot) : r_(&r), slot_(slot) {}

 private:
  template <class T>
  void send_bound(detail::out_binding& b, const T& value) {
    if (b.reduce >= 0) {
      // Only a reduce module of T binds a queue of T (graph::flow checks the types).
      using P = detail::reduce_payload<T>;
      if constexpr (cairn::detail::transferable<typename P::element>)
        r_->contribute(b, slot_, reinterpret_cast<const std::byte*>(P::data(value)),
                       P::size(value));
      return;
    }
    for (detail::queue_base* q : b.local) {
      static_cast<detail::item_queue<T>*>(q)->items.push_back(value);
      q->wake();
    }
    if (b.remote.empty()) return;
    if constexpr (detail::lane_item<T>) {
      if (b.lane) {
        auto& ln = static_cast<detail::lane<T>&>(*b.lane);
        for (int dest : b.remote) {
          r_->count_sent(dest, sizeof(T));  // first: the send may poll and bring its credit
          ln.send(dest, value);
        }
        return;
      }
    }
    detail::record_channel& ch = r_->channel();
    if constexpr (msg::detail::sized_packable<T>) {
      const std::size_t n = 4 + msg::detail::packed_size(value);
      for (int dest : b.remote) {
        r_->count_sent(dest, n);  // first: the send may poll and bring this record's credit
        ch.send_written(dest, n, [&](std::byte* at) {
          std::memcpy(at, &b.wire, 4);
          at += 4;
          msg::detail::pack_to(at, value);
        });
      }
    } else {
      std::vector<std::byte>& s = r_->scratch();
      s.resize(4);
      std::memcpy(s.data(), &b.wire, 4);
      {
        cairn::detail::byte_writer out(s);
        msg::detail::pack(out, value);
      }
      for (int dest : b.remote) {
        r_->count_sent(dest, s.size());
        ch.send(dest, s);
      }
    }
  }

  detail::runner* r_;
  int slot_;
};

template <class T>
struct in_end;
template <class T>
struct out_end;

/// Instances of one module vector: all of it (`g.add` returns that), one (`p[i]`) or a slice
/// (`p.slice(1, 3)`). Used as a flow's end it means the default queue (`M::in`, `M::out`);
/// `port(M::queue)` names another.
template <class M>
class instances {
 public:
  /// Instance `i` of the selection.
  instances operator[](int i) const {
    g_->check_index("flow instances[]", group_, i, end_ - begin_);
    return instances(g_, group_, begin_ + i, begin_ + i + 1);
  }
  /// Instances [b, e) of the selection.
  instances slice(int b, int e) const {
    if (b < 0 || e < b || e > end_ - begin_)
      g_->fail("flow instances::slice", "slice [" + std::to_string(b) + ", " + std::to_string(e) +
                                            ") of " + std::to_string(end_ - begin_) +
                                            " instances of '" + group_name() + "'");
    return instances(g_, group_, begin_ + b, begin_ + e);
  }
  /// Number of instances selected.
  [[nodiscard]] int size() const noexcept { return end_ - begin_; }
  /// The selection's output queue `q`.
  template <class T>
  out_end<T> port(const output<T>& q) const {
    return {ends(&q, q.name, &detail::ops_of<T>)};
  }
  /// The selection's input queue `q`.
  template <class T>
  in_end<T> port(const input<T>& q) const {
    return {ends(&q, q.name, &detail::ops_of<T>)};
  }
  /// The default input queue (M::in).
  template <class T>
  operator in_end<T>() const {
    static_assert(
        requires { M::in; },
        "this module has no default input queue `in`: name one "
        "with instances.port(M::queue)");
    return port(M::in);
  }
  /// The graph-wide numbers of the selected instances.
  [[nodiscard]] std::vector<int> numbers() const {
    std::vector<int> v;
    const int first = g_->groups[static_cast<std::size_t>(group_)].first;
    for (int i = begin_; i < end_; ++i) v.push_back(first + i);
    return v;
  }

  /// Internal: made by graph::add.
  instances(detail::graph_data* g, int group, int b, int e)
      : g_(g), group_(group), begin_(b), end_(e) {}

 private:
  std::string group_name() const { return g_->groups[static_cast<std::size_t>(group_)].name; }
  detail::end_desc ends(const void* id, const char* name, const detail::type_ops* t) const {
    return detail::end_desc{numbers(), detail::queue_ref{id, name, t}, -1};
  }
  detail::graph_data* g_;
  int group_, begin_, end_;
};

/// Output queue `q` of some instances (instances::port).
template <class T>
struct out_end {
  detail::end_desc d;  ///< the instances and queue
};
/// Input queue `q` of some instances (instances::port).
template <class T>
struct in_end {
  detail::end_desc d;  ///< the instances and queue
};

/// A reduce module of items of type Q (a T, or std::vector<T> reduced element-wise).
template <class Q>
struct reduce_module {
  int id;  ///< its number in the graph
};
/// A bcast module of items of type T.
template <class T>
struct bcast_module {
  int id;  ///< its number in the graph
};

namespace detail {
template <class X>
struct end_traits;
template <class T>
struct end_traits<out_end<T>> {
  using type = T;
  static constexpr bool source = true, sink = false;
  static end_desc desc(const out_end<T>& e) { return e.d; }
};
template <class T>
struct end_traits<in_end<T>> {
  using type = T;
  static constexpr bool source = false, sink = true;
  static end_desc desc(const in_end<T>& e) { return e.d; }
};
template <class T>
struct end_traits<reduce_module<T>> {
  using type = T;
  static constexpr bool source = true, sink = true;
  static end_desc desc(const reduce_module<T>& e) { return {{}, {}, e.id}; }
};
template <class T>
struct end_traits<bcast_module<T>> {
  using type = T;
  static constexpr bool source = true, sink = true;
  static end_desc desc(const bcast_module<T>& e) { return {{}, {}, e.id}; }
};
// Instances as a source: their default output; as a sink: their default input.
template <class M>
auto as_source(const instances<M>& s) {
  static_assert(
      requires { M::out; },
      "this module has no default output queue `out`: name one "
      "with instances.port(M::queue)");
  return s.port(M::out);
}
template <class X>
const X& as_source(const X& x) {
  return x;
}
template <class M>
auto as_sink(const instances<M>& s) {
  static_assert(
      requires { M::in; },
      "this module has no default input queue `in`: name one "
      "with instances.port(M::queue)");
  return s.port(M::in);
}
template <class X>
const X& as_sink(const X& x) {
  return x;
}
template <class X>
using source_type =
    typename end_traits<std::remove_cvref_t<decltype(as_source(std::declval<const X&>()))>>::type;
}  // namespace detail

/// A flow graph: module instances, built-in reduce and bcast modules, and flows between them.
/// Built identically on every rank of the world (an SPMD program does so naturally), then run
/// collectively. Building errors are cairn::error naming the modules and queues.
class graph {
 public:
  /// An empty graph on `w`'s ranks.
  explicit graph(const world& w, graph_options opts = {});
  ~graph();
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

  /// One instance of module M (default-constructed), named `name`.
  template <class M>
  instances<M> add(std::string name) {
    return add_impl<M>(std::move(name), 1, false, [](int) { return M{}; });
  }
  /// A vector of `count` instances of M (default-constructed), named name[0] ... name[count-1].
  template <class M>
  instances<M> add(std::string name, int count) {
    return add_impl<M>(std::move(name), count, true, [](int) { return M{}; });
  }
  /// A vector of `count` instances of M, instance i made as `make(i)` on the rank it runs on.
  template <class M, class F>
  requires std::is_invocable_r_v<M, F&, int> instances<M> add(std::string name, int count, F make) {
    return add_impl<M>(std::move(name), count, true, std::move(make));
  }

  /// A reduce module: each round, every instance whose queue flows into it sends one item; every
  /// instance it flows into dequeues the reduction with `op` (commutative) of that round's
  /// items. Q is a trivially copyable T or std::vector<T> (element-wise, one length per round).
  template <class Q, class Op>
  reduce_module<Q> reduce(std::string name, Op op) {
    using P = detail::reduce_payload<Q>;
    using E = typename P::element;
    static_assert(cairn::detail::transferable<E>,
                  "a reduce module reduces trivially copyable values or vectors of them");
    static_assert(is_commutative<Op>::value,
                  "a reduce module's operation must be commutative (mark a user operation with "
                  "cairn::is_commutative)");
    detail::collective_decl d;
    d.name = std::move(name);
    d.is_reduce = true;
    d.type = &detail::ops_of<Q>;
    d.elem = sizeof(E);
    d.op = std::make_shared<const Op>(std::move(op));
    d.op_name = typeid(Op).name();
    d.combine = [](const void* o, const std::byte* from, std::byte* to, std::size_t n) {
      const Op& f = *static_cast<const Op*>(o);
      const E* a = reinterpret_cast<const E*>(from);
      E* b = reinterpret_cast<E*>(to);
      for (std::size_t i = 0; i < n; ++i) b[i] = f(b[i], a[i]);
    };
    d.start = [](cairn::world& w, const std::vector<int>& p, const std::vector<int>& r,
                 std::byte* in, std::size_t n_in, std::byte* out, std::size_t n_out, const void* o,
                 const generalized_reduce_options& opt) {
      return w.ireduce(p, r, std::span<const E>(reinterpret_cast<const E*>(in), n_in),
                       std::span<E>(reinterpret_cast<E*>(out), n_out), *static_cast<const Op*>(o),
                       opt);
    };
    d.deliver = [](detail::queue_base& q, const std::byte* elems, std::size_t n) {
      auto& tq = static_cast<detail::item_queue<Q>&>(q);
      tq.items.push_back(P::make(elems, n, tq.spare));
      q.wake();
    };
    if constexpr (!std::is_same_v<Q, E>)
      d.results = [](detail::queue_base& first) -> std::unique_ptr<detail::round_results> {
        return std::make_unique<detail::vector_results<E>>(
            static_cast<detail::item_queue<Q>&>(first));
      };
    return {data_->add_collective(std::move(d))};
  }
  /// A bcast module: every item sent into it reaches every instance it flows into, once.
  template <class T>
  bcast_module<T> bcast(std::string name) {
    detail::collective_decl d;
    d.name = std::move(name);
    d.type = &detail::ops_of<T>;
    return {data_->add_collective(std::move(d))};
  }

  /// A flow statement from `from` to `to`:
  /// - instances' output queue to instances' input queue: one to one when both select the same
  ///   number, else fan-out from one instance or fan-in to one instance (other counts: error);
  ///   a fan-out copies every item to every target;
  /// - instances' output queue into a reduce (participants) or bcast (sources);
  /// - a reduce or bcast into instances' input queues (receivers).
  /// Instances stand for their default queue (`in`, `out`). Item types must match (checked at
  /// compile time); an output queue of an instance may be bound by one statement only.
  template <class From, class To>
  void flow(const From& from, const To& to) {
    using F = std::remove_cvref_t<decltype(detail::as_source(from))>;
    using D = std::remove_cvref_t<decltype(detail::as_sink(to))>;
    using FT = detail::end_traits<F>;
    using DT = detail::end_traits<D>;
    static_assert(FT::source, "a flow starts at an output queue, a reduce or a bcast");
    static_assert(DT::sink, "a flow ends at an input queue, a reduce or a bcast");
    static_assert(std::is_same_v<typename FT::type, typename DT::type>,
                  "a flow connects queues of different item types");
    data_->connect("flow::graph::flow", FT::desc(detail::as_source(from)),
                   {DT::desc(detail::as_sink(to))});
  }
  /// A flow statement to several receivers: `g.flow(r1, {p[0], p[2]})`.
  template <class From>
  void flow(const From& from,
            std::type_identity_t<std::initializer_list<in_end<detail::source_type<From>>>> to) {
    flow_list(from, to);
  }
  /// Aspen's three-part statement `from ||| via ||| to`: flow(from, via) and flow(via, to).
  template <class From, class Via, class To>
  void flow(const From& from, const Via& via, const To& to) {
    flow(from, via);
    flow(via, to);
  }
  /// `g.flow(p, r1, {p[0], p[2]})`.
  template <class From, class Via>
  void flow(const From& from, const Via& via,
            std::type_identity_t<std::initializer_list<in_end<detail::source_type<Via>>>> to) {
    flow(from, via);
    flow_list(via, to);
  }

  /// A named part of the graph for a sub-graph (Aspen: roots compose into bigger graphs): the
  /// modules added through it are named "<name>/<module>".
  [[nodiscard]] scope nest(const std::string& name);

  /// Places the selected instances on `ranks` (one rank each, in order), instead of the
  /// default balanced blocks.
  template <class M>
  void place(const instances<M>& sel, const std::vector<int>& ranks) {
    data_->place(sel.numbers(), ranks);
  }
  /// Places every selected instance on `rank`.
  template <class M>
  void place(const instances<M>& sel, int rank) {
    data_->place(sel.numbers(), std::vector<int>(static_cast<std::size_t>(sel.size()), rank));
  }
  /// The rank instance `sel[0]` runs on (lowers the graph if it was not yet).
  template <class M>
  [[nodiscard]] int rank_of(const instances<M>& sel) {
    return rank_of_instance(sel.numbers().at(0));
  }

  /// Runs the graph (collective over the world): makes this rank's instances, calls their
  /// init, then runs their run coroutines until every run returned, every item arrived and
  /// every reduce completed. A module that throws ends the run with a cairn::error naming it;
  /// an item left in a queue that nobody dequeued is an error on every rank. The first run
  /// checks that every rank built the same graph with the same graph_options (one allreduce),
  /// else raises a cairn::error naming what differs on every rank before anything runs. May be
  /// run again.
  void run();

  /// Graphviz text of the module graph as declared and of the rank graph it lowers to (Figure
  /// 7's before and after): instances, reduce and bcast modules, flows labelled with queue
  /// names; then ranks with their instances, the reduces that remain as generalized reduces
  /// over rank sets, and the reduces that vanished.
  [[nodiscard]] std::string to_dot();
  /// One line per lowering decision: placement, bound queues, reduce rank sets.
  [[nodiscard]] std::string describe();

 private:
  template <class M, class F>
  instances<M> add_impl(std::string name, int count, bool vector, F make) {
    static_assert(
        requires(M & m, context & c) {
          { m.run(c) } -> std::same_as<task>;
        },
        "a flow module needs `cairn::flow::task run(cairn::flow::context&)`");
    auto factory = [make = std::move(make)](int i) mutable -> std::unique_ptr<detail::module_box> {
      return std::make_unique<detail::module_holder<M>>(make, i);
    };
    const int g =
        data_->add_group(std::move(name), count, vector, typeid(M).name(), std::move(factory));
    return instances<M>(data_.get(), g, 0, count);
  }
  template <class From, class T>
  void flow_list(const From& from, std::initializer_list<in_end<T>> to) {
    using F = std::remove_cvref_t<decltype(detail::as_source(from))>;
    static_assert(detail::end_traits<F>::source,
                  "a flow starts at an output queue, a reduce or a bcast");
    std::vector<detail::end_desc> ends;
    for (const auto& t : to) ends.push_back(t.d);
    data_->connect("flow::graph::flow", detail::end_traits<F>::desc(detail::as_source(from)), ends);
  }
  int rank_of_instance(int instance);
  const detail::lowered& lower();

  std::unique_ptr<detail::graph_data> data_;
  std::unique_ptr<detail::lowered> plan_;
  std::unique_ptr<detail::round_buffers> buffers_;  // the reduces' rounds', between runs
  bool agreed_ = false;  // every rank built the same graph with the same options (run)
};

/// A named part of a graph: a function that builds a sub-graph takes a scope, adds its modules
/// through it (named "<scope>/<name>", so that the same sub-graph can be built twice) and
/// states its inner flows on root(); it returns the selections its user connects. Nested
/// scopes join their names.
class scope {
 public:
  /// The scope `name` of `g` (graph::nest).
  scope(graph& g, std::string name) : g_(&g), prefix_(std::move(name)) { prefix_ += '/'; }
  /// graph::add, with the scope's name in front.
  template <class M>
  instances<M> add(const std::string& name) {
    return g_->add<M>(prefix_ + name);
  }
  /// graph::add, with the scope's name in front.
  template <class M>
  instances<M> add(const std::string& name, int count) {
    return g_->add<M>(prefix_ + name, count);
  }
  /// graph::add, with the scope's name in front.
  template <class M, class F>
  requires std::is_invocable_r_v<M, F&, int> instances<M> add(const std::string& name, int count,
                                                              F make) {
    return g_->add<M>(prefix_ + name, count, std::move(make));
  }
  /// graph::reduce, with the scope's name in front.
  template <class Q, class Op>
  reduce_module<Q> reduce(const std::string& name, Op op) {
    return g_->reduce<Q>(prefix_ + name, std::move(op));
  }
  /// graph::bcast, with the scope's name in front.
  template <class T>
  bcast_module<T> bcast(const std::string& name) {
    return g_->bcast<T>(prefix_ + name);
  }
  /// A scope inside this one.
  [[nodiscard]] scope nest(const std::string& name) const { return scope(*g_, prefix_ + name); }
  /// The graph (for flow statements and placement).
  [[nodiscard]] graph& root() const noexcept { return *g_; }

 private:
  graph* g_;
  std::string prefix_;
};

inline scope graph::nest(const std::string& name) { return scope(*this, name); }

}  // namespace cairn::flow
