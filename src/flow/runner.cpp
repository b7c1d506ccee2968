// Running a lowered flow graph on one rank: the instances' coroutines scheduled cooperatively,
// items arriving on the graph's record channel, reduce rounds, and the end of the run.
//
// Why coroutines: several instances share a rank's thread, and an instance waiting for an item
// that another instance of the same rank produces must let it run. A blocking dequeue could
// only progress communication, never that other instance; a coroutine suspends and the
// scheduler runs the next ready one (no thread or stack per instance).
#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "cairn/coll/op.hpp"
#include "coll/board/board_layout.hpp"
#include "flow/lowered.hpp"
#include "flow/round_buffers.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::flow::detail {

namespace {
constexpr const char* run_call = "flow::graph::run";
}

// A reduce module's state on a rank of its participants or receivers. Rounds are numbered
// from 0; round k combines the k-th item of every participant. A rank starts the generalized
// reduce of round k once all its participant instances contributed to it (after combining them
// here); a receiver rank that does not participate starts it when the lowest participant rank
// tells it the round began (a control record with the round's length). Either way at most
// lowered::reduce::rounds_in_flight rounds run at once on a rank (later ones wait): unbounded,
// a sender that never waits would start every round of its run at once, each running reduce
// costing every later progress step, and reduces sharing ranks could fill the board's slots.
struct runner::reduce_state {
  const lowered::reduce* plan = nullptr;
  const collective_decl* decl = nullptr;
  int index = 0;                    // in lowered::reduces
  std::vector<std::uint64_t> sent;  // per local participant: items contributed
  std::vector<int> participant_slots;
  std::vector<queue_base*> receivers_here;
  bool participates = false, receives = false, alone = false, announcer = false;
  std::vector<int> r_np;  // receiver ranks that do not participate
  // A reduce of vectors with receivers here: where its rounds reduce into (collective_decl::
  // results); before `rounds`, whose requests write into its vectors until they end.
  std::unique_ptr<round_results> results;
  struct round {
    round_buffers::buffer in, out;  // out: a receiving rank's result where `results` is null
    std::size_t n = 0;
    int contributed = 0;
    bool started = false, done = false;
    request req;
  };
  std::deque<round> rounds;
  std::uint64_t first = 0;    // number of rounds.front()
  std::uint64_t started = 0;  // rounds started
};

void record_sink::operator()(std::span<const std::byte> payload, int origin) const {
  r->on_record(payload, origin);
}

runner::runner(const graph_data& g, const lowered& plan, round_buffers& buffers)
    : g_(g), plan_(plan), buffers_(buffers), w_(g.w), me_(g.w.rank()) {
  // This rank's instances, by increasing number.
  std::vector<int> slot_of(plan.rank_of.size(), -1);
  for (std::size_t i = 0; i < plan.rank_of.size(); ++i) {
    if (plan.rank_of[i] != me_) continue;
    slot_of[i] = static_cast<int>(instances_.size());
    instance_state s;
    s.instance = static_cast<int>(i);
    const group_decl& gr = g.groups[static_cast<std::size_t>(g.group_of[i])];
    s.index = s.instance - gr.first;
    s.count = gr.count;
    s.name = g.instance_name(s.instance);
    instances_.push_back(std::move(s));
  }
  const auto local = [&](int instance) { return slot_of[static_cast<std::size_t>(instance)]; };
  // Their input queues that something flows into.
  for (const in_port& p : plan.fed) {
    const int slot = local(p.instance);
    if (slot < 0) continue;
    std::unique_ptr<queue_base> q = p.q.type->make();
    q->owner = this;
    q->slot = slot;
    instances_[static_cast<std::size_t>(slot)].ins.emplace_back(p.q.id, std::move(q));
  }
  const auto queue_of = [&](const in_port& p) -> queue_base* {
    for (auto& [id, q] : instances_[static_cast<std::size_t>(local(p.instance))].ins)
      if (id == p.q.id) return q.get();
    return nullptr;
  };
  // Reduces this rank takes part in.
  reduces_.resize(plan.reduces.size());
  for (std::size_t k = 0; k < plan.reduces.size(); ++k) {
    const lowered::reduce& red = plan.reduces[k];
    auto st = std::make_unique<reduce_state>();
    st->plan = &red;
    st->decl = &g.collectives[static_cast<std::size_t>(red.module)];
    st->index = static_cast<int>(k);
    for (int i : red.participants)
      if (local(i) >= 0) st->participant_slots.push_back(local(i));
    st->sent.assign(st->participant_slots.size(), 0);
    for (const in_port& p : red.receivers)
      if (local(p.instance) >= 0) st->receivers_here.push_back(queue_of(p));
    st->participates = !st->participant_slots.empty();
    st->receives = !st->receivers_here.empty();
    if (!st->participates && !st->receives) continue;
    st->alone = red.p_ranks.size() == 1 && red.r_ranks.size() == 1 && red.p_ranks[0] == me_ &&
                red.r_ranks[0] == me_;
    if (st->receives && !st->alone && st->decl->results)
      st->results = st->decl->results(*st->receivers_here.front());
    st->announcer = red.p_ranks.front() == me_;
    for (int r : red.r_ranks)
      if (!std::binary_search(red.p_ranks.begin(), red.p_ranks.end(), r)) st->r_np.push_back(r);
    reduces_[k] = std::move(st);
  }
  // Bound output queues of local instances.
  for (std::size_t b = 0; b < plan.bindings.size(); ++b) {
    const lowered::binding& lb = plan.bindings[b];
    const int slot = local(lb.instance);
    if (slot < 0) continue;
    out_binding ob;
    ob.queue = lb.q.id;
    ob.name = lb.q.name;
    ob.wire = static_cast<std::uint32_t>(b);
    if (lb.reduce >= 0) {
      ob.reduce = lb.reduce;
      const reduce_state& st = *reduces_[static_cast<std::size_t>(lb.reduce)];
      ob.reduce_slot = static_cast<int>(
          std::find(st.participant_slots.begin(), st.participant_slots.end(), slot) -
          st.participant_slots.begin());
    }
    std::vector<int> remote;
    for (const in_port& t : lb.targets) {
      if (rank_of_target(plan, t) == me_)
        ob.local.push_back(queue_of(t));
      else
        remote.push_back(rank_of_target(plan, t));
    }
    std::sort(remote.begin(), remote.end());
    remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
    ob.remote = std::move(remote);
    instances_[static_cast<std::size_t>(slot)].outs.push_back(std::move(ob));
  }
  // Flow control toward every rank (no limit: a window no count reaches).
  window_ = g.opts.window_bytes ? g.opts.window_bytes : ~std::uint64_t{0};
  const auto p = static_cast<std::size_t>(w_.size());
  unacked_.assign(p, 0);
  owed_.assign(p, 0);
  released_.assign(p, false);
  // Where items of each binding land on this rank, and which other ranks send them.
  arrivals_.resize(plan.bindings.size());
  for (std::size_t b = 0; b < plan.bindings.size(); ++b) {
    const int from = plan.rank_of[static_cast<std::size_t>(plan.bindings[b].instance)];
    for (const in_port& t : plan.bindings[b].targets)
      if (rank_of_target(plan, t) == me_) {
        arrivals_[b].push_back(queue_of(t));
        if (from != me_) feeders_.push_back(from);
      }
  }
  std::sort(feeders_.begin(), feeders_.end());
  feeders_.erase(std::unique(feeders_.begin(), feeders_.end()), feeders_.end());
  plan_lanes();
}

void runner::plan_lanes() {
  const auto p = static_cast<std::size_t>(w_.size());
  for (const lowered::lane& ln : plan_.lanes) {
    lane_plan lp;
    lp.type = ln.q.type;
    lp.name = "flow lane " + g_.groups[static_cast<std::size_t>(ln.group)].name + "." + ln.q.name;
    lp.from.assign(p, nullptr);
    for (int b : ln.bindings)
      lp.from[static_cast<std::size_t>(plan_.rank_of[static_cast<std::size_t>(
          plan_.bindings[static_cast<std::size_t>(b)].instance)])] =
          &arrivals_[static_cast<std::size_t>(b)];
    lane_plans_.push_back(std::move(lp));
  }
}

std::size_t runner::buffer_bytes() const noexcept { return g_.opts.buffer_bytes; }

void runner::flush_all() {
  if (channel_) channel_->flush();
  for (const auto& l : lanes_) l->flush();
}

runner::~runner() = default;

int runner::rank_of_target(const lowered& plan, const in_port& t) {
  return plan.rank_of[static_cast<std::size_t>(t.instance)];
}

bool runner::needs_channel(const lowered& plan) {
  for (const lowered::binding& b : plan.bindings)
    for (const in_port& t : b.targets)
      if (rank_of_target(plan, t) != plan.rank_of[static_cast<std::size_t>(b.instance)])
        return true;
  for (const lowered::reduce& r : plan.reduces)
    for (int x : r.r_ranks)
      if (!std::binary_search(r.p_ranks.begin(), r.p_ranks.end(), x)) return true;
  return false;
}

void runner::unbound(int slot, const char* queue, const char* what, const char* verb) const {
  cairn::detail::fail(run_call, me_, instances_[static_cast<std::size_t>(slot)].name, " ", what,
                      " '", queue, "', which no flow statement of the graph ", verb);
}

void runner::on_record(std::span<const std::byte> payload, int origin) {
  std::uint32_t word;
  if (payload.size() < 4)
    cairn::detail::fail(run_call, me_, "a record of ", payload.size(), " bytes from rank ", origin);
  std::memcpy(&word, payload.data(), 4);
  if (word == credit_word) {
    std::uint64_t bytes;
    if (payload.size() != 12)
      cairn::detail::fail(run_call, me_, "a credit record of ", payload.size(), " bytes");
    std::memcpy(&bytes, payload.data() + 4, 8);
    take_credit(origin, bytes);
    return;
  }
  if (word & control_bit) {
    control c{word & ~control_bit, 0, 0};
    if (payload.size() != 20)
      cairn::detail::fail(run_call, me_, "a reduce start of ", payload.size(), " bytes");
    std::memcpy(&c.round, payload.data() + 4, 8);
    std::memcpy(&c.n, payload.data() + 12, 8);
    controls_.push_back(c);  // started by the loop, outside the channel's handler
    return;
  }
  if (word >= arrivals_.size() || arrivals_[word].empty())
    cairn::detail::fail(run_call, me_, "an item of bound queue ", word, " from rank ", origin,
                        " that no instance of this rank takes (ranks built different graphs?)");
  for (queue_base* q : arrivals_[word]) q->unpack(*q, payload.subspan(4), me_);
  owed_[static_cast<std::size_t>(origin)] += payload.size();
  owed_total_ += payload.size();
}

void runner::take_credit(int origin, std::uint64_t bytes) {
  if (released_[static_cast<std::size_t>(origin)]) return;  // nothing counted toward it since
  std::uint64_t& u = unacked_[static_cast<std::size_t>(origin)];
  const bool was_over = u >= window_;
  if (bytes == released) {  // the rank takes no more through its instances: never wait for it
    released_[static_cast<std::size_t>(origin)] = true;
    u = 0;
  } else {
    if (bytes > u)
      cairn::detail::fail(run_call, me_, "rank ", origin, " returned credit for ", bytes,
                          " bytes of items, ", u, " were sent to it");
    u -= bytes;
  }
  if (was_over && u < window_) --over_window_;
}

void runner::return_credits() {
  // A sender waits only once a window's worth is owed to it: returning less, a record per
  // small batch (each ping of a ping-pong), would only add messages.
  if (owed_total_ < window_ / 4 || owed_total_ == 0) return;
  for (std::size_t o = 0; o < owed_.size(); ++o)
    if (owed_[o] > 0) {
      send_credit(static_cast<int>(o), owed_[o]);
      owed_[o] = 0;
    }
  owed_total_ = 0;
  channel_->flush();  // a sender may be waiting for it
}

void runner::send_credit(int dest, std::uint64_t bytes) {
  std::byte rec[12];
  std::memcpy(rec, &credit_word, 4);
  std::memcpy(rec + 4, &bytes, 8);
  channel_->send(dest, std::span<const std::byte>(rec, 12));
}

void runner::contribute(const out_binding& b, int slot, const std::byte* elems, std::size_t n) {
  reduce_state& r = *reduces_[static_cast<std::size_t>(b.reduce)];
  const std::uint64_t k = r.sent[static_cast<std::size_t>(b.reduce_slot)]++;
  while (r.first + r.rounds.size() <= k) r.rounds.emplace_back();
  reduce_state::round& x = r.rounds[static_cast<std::size_t>(k - r.first)];
  const std::size_t bytes = n * r.decl->elem;
  if (x.contributed == 0) {
    x.n = n;
    x.in = buffers_.take(bytes);
    if (bytes) std::memcpy(x.in.get(), elems, bytes);
  } else {
    if (n != x.n)
      cairn::detail::fail(run_call, me_, instances_[static_cast<std::size_t>(slot)].name, " sends ",
                          n, " elements to reduce '", r.decl->name, "' in round ", k,
                          ", another participant on this rank ", x.n);
    r.decl->combine(r.decl->op.get(), elems, x.in.get(), n);
  }
  if (++x.contributed == static_cast<int>(r.participant_slots.size())) start_rounds(r);
}

template <class Round>
void runner::start_round(reduce_state& r, Round& x) {
  const collective_decl& d = *r.decl;
  x.started = true;
  ++r.started;
  if (r.alone) {  // participants and receivers all here: nothing to send (delivered from in)
    x.done = true;
    return;
  }
  if (r.announcer && !r.r_np.empty()) {
    std::byte rec[20];
    const std::uint32_t word = control_bit | static_cast<std::uint32_t>(r.index);
    const std::uint64_t round = r.started - 1, n = x.n;
    std::memcpy(rec, &word, 4);
    std::memcpy(rec + 4, &round, 8);
    std::memcpy(rec + 12, &n, 8);
    for (int dest : r.r_np) channel_->send(dest, std::span<const std::byte>(rec, 20));
    channel_->flush();
  }
  std::byte* out = nullptr;
  if (r.receives && r.results) {
    out = r.results->open(x.n);
  } else if (r.receives) {
    x.out = buffers_.take(x.n * d.elem);
    out = x.out.get();
  }
  generalized_reduce_options opt = r.plan->opt;
  if (r.plan->long_rounds_on_board && x.n * d.elem > cairn::detail::node_board::payload_max)
    opt.algorithm = generalized_reduce_algorithm::automatic;  // every rank decides alike
  reduce_balancer history;
  if (opt.load_balance) {  // planned against the graph's earlier reduces, the same everywhere
    history = r.plan->history;
    opt.balancer = &history;
  }
  x.req = d.start(w_, r.plan->p_ranks, r.plan->r_ranks, x.in.get(), r.participates ? x.n : 0, out,
                  r.receives ? x.n : 0, d.op.get(), opt);
}

void runner::start_rounds(reduce_state& r) {
  const auto full = static_cast<int>(r.participant_slots.size());  // 0: started by controls
  while (r.started - r.first < r.rounds.size() && r.started - r.first < r.plan->rounds_in_flight) {
    reduce_state::round& x = r.rounds[static_cast<std::size_t>(r.started - r.first)];
    if (x.contributed < full) return;
    start_round(r, x);
  }
}

bool runner::advance_reduces() {
  bool moved = false;
  for (const control& c : controls_) {  // receivers that do not participate: the round begins
    reduce_state* r = c.reduce < reduces_.size() ? reduces_[c.reduce].get() : nullptr;
    if (!r || r->participates || c.round != r->first + r->rounds.size())
      cairn::detail::fail(run_call, me_, "a start of round ", c.round, " of reduce ", c.reduce,
                          " this rank does not expect (ranks built different graphs?)");
    r->rounds.emplace_back();
    r->rounds.back().n = static_cast<std::size_t>(c.n);
    start_rounds(*r);
    moved = true;
  }
  controls_.clear();
  for (auto& rp : reduces_) {
    if (!rp) continue;
    reduce_state& r = *rp;
    while (!r.rounds.empty() && r.rounds.front().started) {
      reduce_state::round& x = r.rounds.front();
      if (!x.done && !x.req.test()) break;
      if (r.results) {  // copies for the rank's other receivers, then the vector moves
        for (std::size_t i = 1; i < r.receivers_here.size(); ++i)
          r.decl->deliver(*r.receivers_here[i], r.results->oldest(), x.n);
        r.results->deliver_oldest();
      } else {
        const std::byte* result = r.alone ? x.in.get() : x.out.get();
        for (queue_base* q : r.receivers_here) r.decl->deliver(*q, result, x.n);
      }
      buffers_.give(std::move(x.in));
      buffers_.give(std::move(x.out));
      r.rounds.pop_front();
      ++r.first;
      moved = true;
    }
    start_rounds(r);  // rounds held back by the window
  }
  return moved;
}

void runner::resume(const ready_entry& e) {
  instance_state& s = instances_[static_cast<std::size_t>(e.slot)];
  e.h.resume();
  if (!s.top.done()) return;
  if (std::exception_ptr err = s.top.promise().error) {
    try {
      std::rethrow_exception(err);
    } catch (const std::exception& ex) {
      cairn::detail::fail(run_call, me_, "module ", s.name, " threw: ", ex.what());
    } catch (...) {
      cairn::detail::fail(run_call, me_, "module ", s.name, " threw a non-standard exception");
    }
  }
  --running_;
}

void runner::run() {
  cairn::detail::rank_context& ctx = w_.context(run_call);
  msg::channel_options copts;
  copts.buffer_bytes = g_.opts.buffer_bytes;
  copts.name = "flow";
  if (needs_channel(plan_))
    channel_ = std::make_unique<record_channel>(w_, msg::route::direct{}, record_sink{this}, copts);
  for (const lane_plan& lp : lane_plans_) lanes_.push_back(lp.type->make_lane(*this, lp));
  for (instance_state& s : instances_)
    for (out_binding& ob : s.outs)
      if (const int k = plan_.bindings[ob.wire].lane; k >= 0) {
        ob.lane = lanes_[static_cast<std::size_t>(k)].get();
        if (ob.local.empty() && ob.remote.size() == 1) ob.lane_only = ob.remote.front();
      }
  std::vector<context> contexts;
  contexts.reserve(instances_.size());
  for (std::size_t s = 0; s < instances_.size(); ++s)
    contexts.emplace_back(*this, static_cast<int>(s));
  for (std::size_t s = 0; s < instances_.size(); ++s) {
    instance_state& st = instances_[s];
    const group_decl& gr =
        g_.groups[static_cast<std::size_t>(g_.group_of[static_cast<std::size_t>(st.instance)])];
    try {
      st.module = gr.make(st.index);
      st.module->init(contexts[s]);
    } catch (const std::exception& ex) {
      cairn::detail::fail(run_call, me_, "module ", st.name, " threw in its init: ", ex.what());
    }
  }
  std::vector<task> tasks;
  tasks.reserve(instances_.size());
  for (std::size_t s = 0; s < instances_.size(); ++s) {
    tasks.push_back(instances_[s].module->run(contexts[s]));
    instances_[s].top = tasks.back().handle();
    yielded_.push_back(ready_entry{static_cast<int>(s), instances_[s].top});
  }
  running_ = static_cast<int>(instances_.size());
  std::uint64_t spins = 0;
  bool sent_since_flush = false;
  while (running_ > 0) {
    // Run what is ready, polling now and then so that a busy rank still takes its items.
    for (int k = 0; k < 64 && runnable(); ++k) {
      resume(woken_.empty() ? yielded_.pop_front() : woken_.pop_front());
      sent_since_flush = true;
    }
    if (woken_.empty()) return_credits();
    if (!runnable() && sent_since_flush && channel_) {
      // Nothing here runs until something arrives: what is buffered goes now (latency over
      // batching), before the poll that may bring the answer.
      flush_all();
      sent_since_flush = false;
    }
    w_.progress();
    const bool moved = advance_reduces();
    if (runnable() || moved || running_ == 0) {
      spins = 0;
      continue;
    }
    cairn::detail::rank_entry guard(ctx);
    ctx.idle(nullptr, spins);
  }
  finish(ctx);
  tasks.clear();  // the coroutine frames first: they refer to their modules
  instances_.clear();
  lanes_.clear();
  channel_.reset();
}

void runner::finish(cairn::detail::rank_context& ctx) {
  // Every participant instance of this rank sent as many items to each reduce.
  for (const auto& rp : reduces_) {
    if (!rp || rp->sent.empty()) continue;
    const auto [lo, hi] = std::minmax_element(rp->sent.begin(), rp->sent.end());
    if (*lo != *hi) {
      const auto name = [&](auto it) {
        return instances_[static_cast<std::size_t>(rp->participant_slots[static_cast<std::size_t>(
                              it - rp->sent.begin())])]
            .name;
      };
      cairn::detail::fail(run_call, me_, "reduce '", rp->decl->name, "': ", name(lo), " sent ", *lo,
                          " items to it, ", name(hi), " ", *hi,
                          " (each participant sends one per round)");
    }
  }
  // Waits until `done()`, advancing the reduces meanwhile (their rounds move on, and rounds
  // the window held back start, while the rank waits for the others).
  const auto drive = [&](auto done) {
    std::uint64_t spins = 0;
    while (!done()) {
      if (advance_reduces()) {
        spins = 0;
        continue;
      }
      w_.progress();
      cairn::detail::rank_entry guard(ctx);
      ctx.idle(nullptr, spins);
    }
  };
  // Every item of the graph arrives (a termination phase of its channel). This rank's
  // instances take nothing more: the others' yields no longer wait for its credit.
  if (channel_) {
    if (g_.opts.window_bytes != 0)
      for (int r : feeders_) send_credit(r, released);
    channel_->flush();
    msg::channel_phase phase(channel_->core());
    drive([&] { return phase.test(); });
  }
  // Then every lane's, one after the other (a phase's waves are collectives: two tested at
  // once could interleave differently on different ranks).
  for (const auto& l : lanes_) {
    l->flush();
    msg::channel_phase phase = l->done();
    drive([&] { return phase.test(); });
  }
  advance_reduces();
  // Every rank's participants sent as many items to each reduce (else a round never ends).
  const std::size_t nr = plan_.reduces.size();
  if (nr > 0) {
    std::vector<std::uint64_t> mine(2 * nr, 0), all(2 * nr);
    for (std::size_t k = 0; k < nr; ++k)
      if (reduces_[k] && !reduces_[k]->sent.empty()) {
        mine[2 * k] = reduces_[k]->sent.front();
        mine[2 * k + 1] = ~reduces_[k]->sent.front();
      }
    // Non-blocking and driven: without a channel, no termination phase above kept this rank
    // going until the others arrived, and they may wait for rounds it held back.
    request counted = w_.iallreduce(std::span<const std::uint64_t>(mine),
                                    std::span<std::uint64_t>(all), cairn::max{});
    drive([&] { return counted.test(); });
    for (std::size_t k = 0; k < nr; ++k)
      if (all[2 * k] != ~all[2 * k + 1])
        cairn::detail::fail(run_call, me_, "reduce '",
                            g_.collectives[static_cast<std::size_t>(plan_.reduces[k].module)].name,
                            "': its participants sent between ", ~all[2 * k + 1], " and ",
                            all[2 * k], " items (each sends one per round)");
  }
  // Every round completes.
  drive([&] {
    for (const auto& rp : reduces_)
      if (rp && !rp->rounds.empty()) return false;
    return true;
  });
  // Nothing left undequeued, on any rank.
  std::uint64_t left = 0;
  std::string where;
  for (const instance_state& s : instances_)
    for (const auto& [id, q] : s.ins)
      if (const std::size_t n = q->size(*q)) {
        left += n;
        if (where.empty()) where = s.name + " holds " + std::to_string(n);
      }
  const std::vector<std::uint64_t> mine{left, left ? static_cast<std::uint64_t>(me_) + 1 : 0};
  std::vector<std::uint64_t> sum(2), at(2);
  w_.allreduce(mine, sum, cairn::plus{});
  w_.allreduce(mine, at, cairn::max{});
  if (sum[0] != 0) {
    if (left)
      cairn::detail::fail(run_call, me_, sum[0], " items were never dequeued (", where,
                          " after its run returned)");
    cairn::detail::fail(run_call, me_, sum[0], " items were never dequeued (some on rank ",
                        at[1] - 1, ")");
  }
}

}  // namespace cairn::flow::detail
