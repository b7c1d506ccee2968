// Tasks and inter-task array transfers: the descriptor exchange (HPF/MPI step 3: each rank of
// one task sends its layout to the ranks k of the other with k mod |own task| = its rank, so
// every rank gets the other task's layout in one message), then the parallel strategy (one
// plan between the two tasks) or the centralized one (gather on the first rank, one message,
// scatter), chosen identically on both sides.
#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <sstream>

#include "array/array_exec.hpp"
#include "cairn/array/tasks.hpp"
#include "runtime/rank_context.hpp"

namespace cairn {

namespace detail {

namespace {

// A layout on the wire (trivially copyable, fixed size).
struct wire_desc {
  std::int32_t ndim = 0;
  std::int32_t elem_size = 0;
  std::uint8_t strategy = 0;
  std::uint8_t pad[3] = {};
  std::int32_t chunks = 1;
  std::uint64_t centralized_max = 0;
  std::int64_t n[max_dims] = {};
  std::int64_t bsize[max_dims] = {};
  std::int32_t g[max_dims] = {};
  std::uint8_t kind[max_dims] = {};
};

wire_desc to_wire(const layout_desc& d, std::size_t elem, const transfer_options& o) {
  wire_desc w;
  w.ndim = d.ndim;
  w.elem_size = static_cast<std::int32_t>(elem);
  w.strategy = static_cast<std::uint8_t>(o.strategy);
  w.centralized_max = o.centralized_max_bytes;
  w.chunks = o.chunks;
  for (std::size_t i = 0; i < static_cast<std::size_t>(d.ndim); ++i) {
    w.n[i] = d.dims[i].n;
    w.g[i] = d.dims[i].g;
    w.kind[i] = static_cast<std::uint8_t>(d.dims[i].d.k);
    w.bsize[i] = d.dims[i].d.size;
  }
  return w;
}

layout_desc from_wire(const char* call, int rank, const wire_desc& w, int group_size) {
  if (w.ndim < 1 || w.ndim > max_dims)
    fail(call, rank, "corrupt array descriptor (", w.ndim, " dimensions)");
  dim_dist dists[max_dims];
  for (int i = 0; i < w.ndim; ++i) dists[i] = {static_cast<dim_dist::kind>(w.kind[i]), w.bsize[i]};
  return make_layout_desc(call, rank, group_size, w.ndim, w.n, dists, w.g);
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  a ^= b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2);
  return a * 0xBF58476D1CE4E5B9ull;
}

// Shared by the posting and the building step (and alive as long as the transfer).
struct exchange_state {
  task_transfer_args a;
  wire_desc mine;
  wire_desc peer;
  std::uint64_t key = 0;
};

void post_descriptors(array_exec& e, const std::shared_ptr<exchange_state>& x) {
  const task_transfer_args& a = x->a;
  const int me = a.w.rank();
  const int mine = static_cast<int>(a.my_members.size());
  const int other = static_cast<int>(a.peer_members.size());
  const int i = static_cast<int>(std::find(a.my_members.begin(), a.my_members.end(), me) -
                                 a.my_members.begin());
  const array_match tag{x->key, 2};
  e.pre.push_back(array_irecv(*e.ctx, a.call, &x->peer, sizeof x->peer,
                              a.peer_members[static_cast<std::size_t>(i % other)], tag));
  for (int k = i; k < other; k += mine)
    e.pre.push_back(array_isend(*e.ctx, a.call, &x->mine, sizeof x->mine,
                                a.peer_members[static_cast<std::size_t>(k)], tag));
}

void build_stages(array_exec& e, const std::shared_ptr<exchange_state>& x) {
  const task_transfer_args& a = x->a;
  const int me = a.w.rank();
  const layout_desc peer = from_wire(a.call, me, x->peer, static_cast<int>(a.peer_members.size()));
  if (static_cast<std::size_t>(x->peer.elem_size) != a.elem_size)
    fail(a.call, me, "element size mismatch: this task's array has ", a.elem_size,
         "-byte elements, task ", a.peer_task, "'s has ", x->peer.elem_size, "-byte elements");
  bool same = peer.ndim == a.desc.ndim;
  std::int64_t elements = 1;
  for (std::size_t d = 0; same && d < static_cast<std::size_t>(peer.ndim); ++d) {
    same = peer.dims[d].n == a.desc.dims[d].n;
    elements *= peer.dims[d].n;
  }
  if (!same) {
    std::ostringstream os;
    os << "shape mismatch: this task's array is " << a.desc << ", task " << a.peer_task << "'s is "
       << peer;
    fail(a.call, me, os.str());
  }
  // The strategy: an explicit choice wins (both explicit must agree), else the sender's size rule.
  const wire_desc& snd = a.sending ? x->mine : x->peer;
  const wire_desc& rcv = a.sending ? x->peer : x->mine;
  auto s_strat = static_cast<transfer_strategy>(snd.strategy);
  auto r_strat = static_cast<transfer_strategy>(rcv.strategy);
  if (s_strat != transfer_strategy::automatic && r_strat != transfer_strategy::automatic &&
      s_strat != r_strat)
    fail(a.call, me, "sender and receiver ask for different transfer strategies");
  transfer_strategy st = s_strat != transfer_strategy::automatic ? s_strat : r_strat;
  const std::uint64_t bytes = static_cast<std::uint64_t>(elements) * a.elem_size;
  if (st == transfer_strategy::automatic)
    st =
        bytes <= snd.centralized_max ? transfer_strategy::centralized : transfer_strategy::parallel;

  const layout_desc& sd = a.sending ? a.desc : peer;
  const layout_desc& rd = a.sending ? peer : a.desc;
  const std::vector<int>& sm = a.sending ? a.my_members : a.peer_members;
  const std::vector<int>& rm = a.sending ? a.peer_members : a.my_members;
  auto tags = [&](int stage_no, stage s) {
    const std::uint64_t k = mix(x->key, static_cast<std::uint64_t>(stage_no) + 1);
    s.data_tag = array_match{k, 0};
    s.ack_tag = array_match{k, 1};
    return s;
  };
  // Either side may ask for pipelining: the larger slab count wins.
  const int chunks = std::max(snd.chunks, rcv.chunks);
  check_chunks(a.call, me, chunks);  // a corrupt descriptor
  auto* data = static_cast<std::byte*>(a.data);
  if (st == transfer_strategy::parallel) {
    auto plan = cached_plan(a.call, me, a.elem_size, sd, sm, rd, rm, chunks);
    e.stages.push_back(
        tags(0, {plan, a.sending ? data : nullptr, a.sending ? nullptr : data, 0, 0}));
    return;
  }
  // Centralized: the whole array in row-major order on the first rank of each task.
  std::int64_t shape[max_dims];
  dim_dist dists[max_dims];
  int ones[max_dims];
  for (std::size_t d = 0; d < static_cast<std::size_t>(sd.ndim); ++d)
    shape[d] = sd.dims[d].n, dists[d] = dist::block, ones[d] = 1;
  const layout_desc root = make_layout_desc(a.call, me, 1, sd.ndim, shape, dists, ones);
  const std::vector<int> s0{sm[0]}, r0{rm[0]};
  std::byte* temp = nullptr;
  if (me == (a.sending ? s0[0] : r0[0])) {
    e.temps.push_back(std::make_unique<std::byte[]>(std::max<std::size_t>(bytes, 1)));
    temp = e.temps.back().get();
  }
  auto ship = cached_plan(a.call, me, a.elem_size, root, s0, root, r0, chunks);
  if (a.sending) {
    e.stages.push_back(tags(
        0, {cached_plan(a.call, me, a.elem_size, sd, sm, root, s0, chunks), data, temp, 0, 0}));
    e.stages.push_back(tags(1, {ship, temp, nullptr, 0, 0}));
  } else {
    e.stages.push_back(tags(1, {ship, nullptr, temp, 0, 0}));
    e.stages.push_back(tags(
        2, {cached_plan(a.call, me, a.elem_size, root, r0, rd, rm, chunks), temp, data, 0, 0}));
  }
}

}  // namespace

std::unique_ptr<array_exec> prepare_task_transfer(task_transfer_args args) {
  auto e = std::make_unique<array_exec>();
  e->ctx = &args.w.context(args.call);
  e->call = args.call;
  e->direct = copies_straight(*e->ctx, args.opts);
  e->steps = args.opts.steps;
  e->on_slab = args.opts.on_slab;
  auto x = std::make_shared<exchange_state>();
  x->a = std::move(args);
  const task_transfer_args& a = x->a;
  x->mine = to_wire(a.desc, a.elem_size, a.opts);
  const int s_task = a.sending ? a.my_task : a.peer_task;
  const int r_task = a.sending ? a.peer_task : a.my_task;
  x->key =
      mix(mix(static_cast<std::uint64_t>(s_task) + 0x51ull, static_cast<std::uint64_t>(r_task)),
          static_cast<std::uint64_t>(a.tag));
  e->post_pre = [x](array_exec& ex) {
    post_descriptors(ex, x);
    ex.after_pre = [x](array_exec& ey) { build_stages(ey, x); };
  };
  return e;
}

request start_prepared(std::unique_ptr<array_exec> e) { return start_request(std::move(e)); }

}  // namespace detail

// ---- persistent_transfer ----

persistent_transfer::persistent_transfer() noexcept = default;
persistent_transfer::persistent_transfer(std::unique_ptr<detail::array_exec> e) noexcept
    : e_(std::move(e)) {}
persistent_transfer::persistent_transfer(persistent_transfer&&) noexcept = default;
persistent_transfer& persistent_transfer::operator=(persistent_transfer&& o) noexcept {
  if (this != &o) {
    if (e_) e_->settle();
    e_ = std::move(o.e_);
  }
  return *this;
}
persistent_transfer::~persistent_transfer() {
  if (e_) e_->settle();
}

void persistent_transfer::start() {
  if (!e_) throw error("cairn::persistent_transfer::start: empty handle");
  if (e_->running)
    detail::fail(e_->call, e_->ctx->rank(), "start while the previous transfer is still running");
  e_->ctx->check_alive(e_->call);
  e_->start();
}

bool persistent_transfer::test() {
  if (!e_ || !e_->running) return true;
  try {
    return e_->advance();
  } catch (...) {
    e_->running = false;
    throw;
  }
}

void persistent_transfer::wait() {
  if (!e_ || !e_->running) return;
  try {
    e_->wait();
  } catch (...) {
    e_->running = false;
    throw;
  }
}

std::shared_ptr<const redistribution_plan> persistent_transfer::plan() const {
  if (!e_ || e_->stages.empty()) return nullptr;
  return e_->stages.front().plan;
}

// ---- tasks ----

tasks::tasks(const world& w, const std::vector<int>& sizes) : w_(w) {
  long long sum = 0;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] < 1)
      detail::fail("tasks", w.rank(), "task ", t, " has size ", sizes[t], " (must be >= 1)");
    sum += sizes[t];
  }
  if (sum != w.size())
    detail::fail("tasks", w.rank(), "task sizes sum to ", sum, ", the world has ", w.size(),
                 " ranks");
  std::vector<std::vector<int>> members(sizes.size());
  int r = 0;
  for (std::size_t t = 0; t < sizes.size(); ++t)
    for (int i = 0; i < sizes[t]; ++i) members[t].push_back(r++);
  build(members);
}

tasks tasks::by_color(world& w, int color) {
  std::vector<int> mine{color}, all(static_cast<std::size_t>(w.size()));
  w.allgather(mine, all);
  std::map<int, std::vector<int>> by;
  for (int r = 0; r < w.size(); ++r) by[all[static_cast<std::size_t>(r)]].push_back(r);
  std::vector<std::vector<int>> members;
  for (auto& [c, m] : by) members.push_back(std::move(m));
  tasks t;
  t.w_ = w;
  t.build(members);
  return t;
}

void tasks::build(const std::vector<std::vector<int>>& members) {
  task_of_.assign(static_cast<std::size_t>(w_.size()), -1);
  std::vector<int> leaders;
  for (std::size_t t = 0; t < members.size(); ++t) {
    groups_.push_back(w_.group(members[t]));
    leaders.push_back(members[t][0]);
    for (int r : members[t]) task_of_[static_cast<std::size_t>(r)] = static_cast<int>(t);
  }
  leaders_ = w_.group(leaders);
  me_ = task_of_[static_cast<std::size_t>(w_.rank())];
}

void tasks::check_task(const char* call, int t) const {
  if (t < 0 || t >= count())
    detail::fail(call, w_.rank(), "task ", t, " out of range [0, ", count(), ")");
}

array_request tasks::start(const detail::layout_desc& d, const cairn::group& g, std::size_t elem,
                           void* data, bool sending, int peer, int tag, const transfer_options& o,
                           const char* call) {
  return detail::start_prepared(prepare(d, g, elem, data, sending, peer, tag, o, call));
}

persistent_transfer tasks::init(const detail::layout_desc& d, const cairn::group& g,
                                std::size_t elem, void* data, bool sending, int peer, int tag,
                                const transfer_options& o, const char* call) {
  return persistent_transfer(prepare(d, g, elem, data, sending, peer, tag, o, call));
}

std::unique_ptr<detail::array_exec> tasks::prepare(const detail::layout_desc& d,
                                                   const cairn::group& g, std::size_t elem,
                                                   void* data, bool sending, int peer, int tag,
                                                   const transfer_options& o, const char* call) {
  check_task(call, peer);
  if (peer == me_)
    detail::fail(call, w_.rank(), "task ", peer, " is this rank's own task (use redistribute)");
  if (tag < 0) detail::fail(call, w_.rank(), "negative tag ", tag);
  detail::check_chunks(call, w_.rank(), o.chunks);
  if (g.members() != my_group().members())
    detail::fail(call, w_.rank(), "the array is laid out over ", g.size(),
                 " ranks that are not this rank's task ", me_, " (", my_group().size(), " ranks)");
  detail::task_transfer_args a;
  a.call = call;
  a.w = w_;
  a.my_members = my_group().members();
  a.peer_members = group(peer).members();
  a.my_task = me_;
  a.peer_task = peer;
  a.sending = sending;
  a.tag = tag;
  a.desc = d;
  a.elem_size = elem;
  a.data = data;
  a.opts = o;
  return detail::prepare_task_transfer(std::move(a));
}

}  // namespace cairn
