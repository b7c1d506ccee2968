// The generalized reduce's planner on its own (Aspen section 3.2): every rank's schedule is run
// by a sequential simulator (copied from schedule_test.cpp: all ranks of the group in one loop,
// messages as FIFO queues per ordered pair) for random participant and receiver sets, and
// compared with a sequential reference; stage counts against the paper's bound; the paper's
// Figure 4 graph; the load-balancing heuristic of section 3.3 on the Figure 5/6 example.
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "coll/algorithms/generalized_planners.hpp"
#include "harness.hpp"

using namespace cairn::coll;

namespace {

void sum_i64(const void* from, void* to, std::size_t bytes) {
  auto* t = static_cast<std::int64_t*>(to);
  const auto* f = static_cast<const std::int64_t*>(from);
  for (std::size_t i = 0; i < bytes / 8; ++i) t[i] += f[i];
}

struct rank_buffers {
  std::vector<std::byte> in, out, temp;
  std::vector<std::byte>& of(const region& r) {
    return r.slot == slot::input ? in : r.slot == slot::output ? out : temp;
  }
  std::byte* at(const region& r) { return of(r).data() + r.offset; }
  bool holds(const region& r, std::size_t bytes) {
    const std::size_t size = of(r).size();
    return r.offset <= size && bytes <= size - r.offset;
  }
};

// Runs one schedule per rank to completion (eager sends); fails on a deadlock, a size mismatch,
// a message left over, a step outside its buffers (in and out sized by the caller: empty where
// the rank passes none) or a write to the input. `depth` gets the longest chain of dependent
// messages (the latency in stages).
void simulate(const std::vector<schedule>& plans, std::vector<rank_buffers>& bufs,
              std::size_t* depth) {
  const int p = static_cast<int>(plans.size());
  const auto u = [](int r) { return static_cast<std::size_t>(r); };
  struct message {
    std::vector<std::byte> data;
    std::size_t stage;
  };
  std::map<std::pair<int, int>, std::deque<message>> wire;
  std::vector<std::size_t> clock(u(p), 0), round(u(p), 0);
  std::vector<bool> started(u(p), false);
  for (int r = 0; r < p; ++r) bufs[u(r)].temp.assign(plans[u(r)].temp_bytes, std::byte{0xA5});
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const schedule& s = plans[u(r)];
      auto& b = bufs[u(r)];
      std::size_t& k = round[u(r)];
      while (k < s.rounds()) {
        const auto [first, last] = s.round(k);
        if (!started[u(r)]) {
          for (std::size_t i = first; i < last; ++i) {
            const step& st = s.steps[i];
            const bool reads = st.kind != step_kind::recv, writes = st.kind != step_kind::send;
            ASSERT_TRUE(!reads || b.holds(st.from, st.bytes))
                << "rank " << r << " round " << k << " reads outside\n"
                << s;
            ASSERT_TRUE(!writes || b.holds(st.to, st.bytes))
                << "rank " << r << " round " << k << " writes outside\n"
                << s;
            ASSERT_TRUE(!writes || st.to.slot != slot::input)
                << "rank " << r << " writes its input\n"
                << s;
            if (st.kind == step_kind::copy && b.at(st.from) != b.at(st.to) && st.bytes)
              std::memmove(b.at(st.to), b.at(st.from), st.bytes);
            if (st.kind == step_kind::reduce) sum_i64(b.at(st.from), b.at(st.to), st.bytes);
          }
          for (std::size_t i = first; i < last; ++i) {
            const step& st = s.steps[i];
            if (st.kind == step_kind::send)
              wire[{r, st.peer}].push_back(
                  {{b.at(st.from), b.at(st.from) + st.bytes}, clock[u(r)] + 1});
          }
          started[u(r)] = true;
        }
        bool ready = true;
        std::map<int, std::size_t> need;
        for (std::size_t i = first; i < last; ++i)
          if (s.steps[i].kind == step_kind::recv)
            ready = ready && wire[{s.steps[i].peer, r}].size() > need[s.steps[i].peer]++;
        if (!ready) break;
        for (std::size_t i = first; i < last; ++i) {
          const step& st = s.steps[i];
          if (st.kind != step_kind::recv) continue;
          auto& q = wire[{st.peer, r}];
          ASSERT_EQ(q.front().data.size(), st.bytes) << "rank " << r << " round " << k;
          if (st.bytes) std::memcpy(b.at(st.to), q.front().data.data(), st.bytes);
          clock[u(r)] = std::max(clock[u(r)], q.front().stage);
          q.pop_front();
        }
        ++k;
        started[u(r)] = false;
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; ++r)
    ASSERT_EQ(round[u(r)], plans[u(r)].rounds()) << "rank " << r << " of " << p << " is stuck";
  for (auto& [pair, q] : wire) {
    ASSERT_TRUE(q.empty()) << "message left from " << pair.first << " to " << pair.second;
  }
  *depth = p ? *std::max_element(clock.begin(), clock.end()) : 0;
}

int floor_log2(int p) {
  int log = 0;
  while ((2 << log) <= p) ++log;
  return log;
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
std::vector<std::int64_t> values_of(const std::vector<std::byte>& b) {
  std::vector<std::int64_t> v(b.size() / 8);
  if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// A generalized reduce from world ranks P to R as the library sets it up: the group is P in
// increasing order, then R \ P in increasing order.
struct setup {
  std::vector<int> members;
  generalized_shape shape;
  int rp = 0, rnp = 0;  // |R ∩ P|, |R \ P|
};
setup make_setup(std::vector<int> p, std::vector<int> r) {
  std::sort(p.begin(), p.end());
  std::sort(r.begin(), r.end());
  setup s;
  s.members = p;
  for (int x : r)
    if (!std::binary_search(p.begin(), p.end(), x)) s.members.push_back(x);
  s.shape.participants = static_cast<int>(p.size());
  for (int m : s.members) s.shape.receives.push_back(std::binary_search(r.begin(), r.end(), m));
  for (std::size_t i = 0; i < s.members.size(); ++i)
    (static_cast<int>(i) < s.shape.participants ? s.rp : s.rnp) += s.shape.receives[i];
  return s;
}

struct outcome {
  std::size_t rounds = 0;  // most rounds that move data on one rank (the brief's "stages")
  std::size_t depth = 0;   // longest chain of dependent messages
  std::size_t stages = 0;  // stages of the whole graph
};

// Plans every rank, simulates on random integers and checks every receiver's result, the
// single-port model (one send, one receive per round; with direct delivery, two receives on
// non-participant receivers), that non-receivers end by sending (no message is wasted on them)
// and the stage counts against the graph's.
outcome run_case(const setup& s, std::size_t n, bool balance, unsigned seed,
                 const generalized_load* prior = nullptr, bool direct = false) {
  const int g = static_cast<int>(s.members.size());
  auto graph = graph_reduce_generalized(s.shape, balance, prior);
  if (direct) graph = deliver_directly(std::move(graph), s.shape);
  std::vector<schedule> plans;
  std::vector<rank_buffers> bufs(static_cast<std::size_t>(g));
  std::vector<std::int64_t> expect(n, 0);
  for (int r = 0; r < g; ++r) {
    plans.push_back(plan_reduce_generalized(graph, s.shape, r, n * 8, balance));
    auto& b = bufs[static_cast<std::size_t>(r)];
    if (r < s.shape.participants) {
      auto v = cairn::test::random_values<std::int64_t>(
          n, seed, static_cast<unsigned>(s.members[static_cast<std::size_t>(r)]));
      for (std::size_t i = 0; i < n; ++i) expect[i] += v[i];
      b.in = bytes_of(v);
    }
    if (s.shape.receives[static_cast<std::size_t>(r)]) b.out.assign(n * 8, std::byte{0x5A});
  }
  outcome o;
  simulate(plans, bufs, &o.depth);
  for (int r = 0; r < g; ++r) {
    const schedule& pl = plans[static_cast<std::size_t>(r)];
    if (s.shape.receives[static_cast<std::size_t>(r)]) {
      EXPECT_EQ(values_of(bufs[static_cast<std::size_t>(r)].out), expect)
          << "group rank " << r << "\n"
          << pl;
    }
    for (std::size_t k = 0; k < pl.rounds(); ++k) {
      const auto [first, last] = pl.round(k);
      int sends = 0, recvs = 0;
      for (std::size_t i = first; i < last; ++i) {
        sends += pl.steps[i].kind == step_kind::send;
        recvs += pl.steps[i].kind == step_kind::recv;
      }
      EXPECT_LE(sends, 1) << pl;
      EXPECT_LE(recvs, direct && r >= s.shape.participants ? 2 : 1) << pl;
    }
    if (!s.shape.receives[static_cast<std::size_t>(r)] && !pl.steps.empty()) {
      EXPECT_EQ(pl.steps.back().kind, step_kind::send) << "a non-receiver ends without sending\n"
                                                       << pl;
    }
    o.rounds = std::max(o.rounds, pl.message_rounds());
  }
  // A rank receives at most once per stage, so chains of dependent messages (depth) and the
  // rounds of one rank both fit in the graph's stages.
  EXPECT_LE(o.depth, graph.stages.size());
  EXPECT_LE(o.rounds, graph.stages.size());
  o.stages = graph.stages.size();
  return o;
}

// Random subset of [0, w) with each rank in it with probability `per_mille`/1000, never empty.
std::vector<int> random_subset(std::mt19937& g, int w, unsigned per_mille) {
  std::vector<int> s;
  for (int r = 0; r < w; ++r)
    if (g() % 1000 < per_mille) s.push_back(r);
  if (s.empty()) s.push_back(static_cast<int>(g() % static_cast<unsigned>(w)));
  std::shuffle(s.begin(), s.end(), g);  // the order given does not matter
  return s;
}

// Calls f(np, rp, rnp, shape) for every shape with |P| = np <= max_np, |R_p| = rp <= np and
// |R_np| = rnp <= 2 |P|, some receiver (the receiving participants first).
template <class F>
void for_each_shape(int max_np, F&& f) {
  for (int np = 1; np <= max_np; ++np)
    for (int rp = 0; rp <= np; ++rp)
      for (int rnp = 0; rnp <= 2 * np; ++rnp) {
        if (rp + rnp == 0) continue;
        generalized_shape s;
        s.participants = np;
        s.receives.assign(static_cast<std::size_t>(np + rnp), true);
        for (int i = rp; i < np; ++i) s.receives[static_cast<std::size_t>(i)] = false;
        f(np, rp, rnp, s);
      }
}

}  // namespace

// Figure 4: participants 1..8, receivers 1, 2 (participants) and 9, 10, 11 (not). Round 1
// halves 8 -> 4 (5..8 send to 1..4); rounds 2-3 are the butterfly among 1..4 whose last stage
// drops the link 2 -> 4; round 4 delivers to 9, 10, 11 from 1, 2, 3.
TEST(GeneralizedSchedules, Figure4Graph) {
  const setup s = make_setup({0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 8, 9, 10});
  const auto g = graph_reduce_generalized(s.shape, false);
  ASSERT_EQ(g.stages.size(), 4u);
  auto links = [&](std::size_t k) {
    std::vector<std::pair<int, int>> l;
    for (const auto& t : g.stages[k]) l.emplace_back(t.from, t.to);
    std::sort(l.begin(), l.end());
    return l;
  };
  using v = std::vector<std::pair<int, int>>;
  EXPECT_EQ(links(0), (v{{4, 0}, {5, 1}, {6, 2}, {7, 3}}));
  EXPECT_EQ(links(1), (v{{0, 1}, {1, 0}, {2, 3}, {3, 2}}));
  EXPECT_EQ(links(2), (v{{0, 2}, {2, 0}, {3, 1}}));  // 1 -> 3 (the paper's 2 -> 4) is pruned
  EXPECT_EQ(links(3), (v{{0, 8}, {1, 9}, {2, 10}}));
  EXPECT_FALSE(g.auxiliaries);
  const outcome o = run_case(s, 5, false, 1);
  EXPECT_EQ(o.rounds, 4u);  // participant 1 receives, exchanges twice and sends to 9
  EXPECT_EQ(o.depth, 4u);
}

// The two classic special cases: one receiver in P is a binomial-tree reduce (floor(log2 |P|)
// stages, one more to fold), R = P is the butterfly allreduce of section 2.1.
TEST(GeneralizedSchedules, ReduceAndAllreduceAsSpecialCases) {
  for (int p = 1; p <= 33; ++p) {
    std::vector<int> all(static_cast<std::size_t>(p));
    std::iota(all.begin(), all.end(), 0);
    const bool pow2 = (p & (p - 1)) == 0;
    const std::size_t log = static_cast<std::size_t>(floor_log2(p));
    for (int root : {0, p / 2, p - 1}) {
      const outcome o = run_case(make_setup(all, {root}), 3, false, static_cast<unsigned>(p));
      EXPECT_EQ(o.rounds, pow2 ? log : log + 1) << "p=" << p << " root=" << root;
      EXPECT_EQ(o.stages, pow2 ? log : log + 1) << "p=" << p << " root=" << root;
    }
    const outcome o = run_case(make_setup(all, all), 3, false, static_cast<unsigned>(p));
    EXPECT_EQ(o.rounds, pow2 ? log : log + 2) << "p=" << p;
    EXPECT_EQ(o.stages, pow2 ? log : log + 2) << "p=" << p;
  }
}

// Random P and R (fixed seeds) of every kind: R ⊂ P, R = P, R ∩ P = ∅, overlapping, |R| = 1,
// |P| = 1, and more non-participant receivers than participants; with and without load
// balancing; results against the sequential sum, stages against the paper's bound.
TEST(GeneralizedSchedules, RandomSetsResultsAndStageBound) {
  std::mt19937 g(2024);
  int cases = 0, bounded = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const int w = 1 + static_cast<int>(g() % 40);
    std::vector<int> p, r;
    switch (trial % 8) {
      case 0:  // R ⊂ P
        p = random_subset(g, w, 700);
        for (int x : p)
          if (g() % 3 == 0) r.push_back(x);
        if (r.empty()) r.push_back(p[0]);
        break;
      case 1:  // R = P
        p = random_subset(g, w, 600);
        r = p;
        break;
      case 2: {  // R ∩ P = ∅
        if (w < 2) continue;
        const int cut = 1 + static_cast<int>(g() % static_cast<unsigned>(w - 1));
        for (int x = 0; x < w; ++x) (x < cut ? p : r).push_back(x);
        std::shuffle(p.begin(), p.end(), g);
        break;
      }
      case 3:  // |R| = 1
        p = random_subset(g, w, 500);
        r = {static_cast<int>(g() % static_cast<unsigned>(w))};
        break;
      case 4:  // |P| = 1
        p = {static_cast<int>(g() % static_cast<unsigned>(w))};
        r = random_subset(g, w, 500);
        break;
      case 5: {  // few participants, many other receivers
        p = random_subset(g, w, 150);
        for (int x = 0; x < w; ++x)
          if (std::find(p.begin(), p.end(), x) == p.end() || g() % 2) r.push_back(x);
        if (r.empty()) r = p;
        break;
      }
      default:  // independent
        p = random_subset(g, w, 1000 * static_cast<unsigned>(1 + g() % 9) / 10);
        r = random_subset(g, w, 1000 * static_cast<unsigned>(1 + g() % 9) / 10);
    }
    const setup s = make_setup(p, r);
    const int np = s.shape.participants;
    for (bool balance : {false, true}) {
      const std::size_t n = trial % 16 == 0 ? 0 : 1 + g() % 9;
      const outcome o = run_case(s, n, balance, static_cast<unsigned>(trial));
      if (::testing::Test::HasFailure()) {
        FAIL() << "trial " << trial << ": |P|=" << np << " |R_p|=" << s.rp << " |R_np|=" << s.rnp;
      }
      ++cases;
      // Section 3.2: 2 + floor(log2 |P|) when |R_np| <= |P|, else 2 + floor(log2 |R_np|).
      const std::size_t bound = static_cast<std::size_t>(2 + floor_log2(s.rnp <= np ? np : s.rnp));
      bounded += s.rnp <= np;
      EXPECT_LE(o.rounds, bound) << "|P|=" << np << " |R_p|=" << s.rp << " |R_np|=" << s.rnp;
      EXPECT_LE(o.stages, bound) << "|P|=" << np << " |R_p|=" << s.rp << " |R_np|=" << s.rnp;
    }
  }
  EXPECT_GT(bounded, cases / 2);
}

// The bound over every shape up to |P| = 24, |R_np| <= 2 |P| (graphs only), and the cases
// where the fold alone would exceed it, which take the auxiliaries instead.
TEST(GeneralizedSchedules, StageBoundEveryShape) {
  for_each_shape(24, [](int np, int rp, int rnp, const generalized_shape& s) {
    const int rho = 1 << floor_log2(np);
    for (bool balance : {false, true}) {
      const auto g = graph_reduce_generalized(s, balance);
      const int bound = 2 + floor_log2(rnp <= np ? np : rnp);
      EXPECT_LE(static_cast<int>(g.stages.size()), bound) << np << " " << rp << " " << rnp;
      // The paper's fold leaves |R_np| + max(0, |R_p| - ρ) receivers for ρ holders.
      EXPECT_EQ(g.auxiliaries, np > rho && rnp + std::max(0, rp - rho) > rho)
          << np << " " << rp << " " << rnp;
    }
  });
  // Simulated, a few shapes where the paper's fold would need 3 + floor(log2 |P|) stages.
  for (auto [np, rp, rnp] : {std::tuple{3, 3, 2}, {7, 7, 3}, {7, 1, 6}, {13, 13, 13}, {5, 0, 5}}) {
    std::vector<int> p(static_cast<std::size_t>(np)), r;
    std::iota(p.begin(), p.end(), 0);
    for (int i = 0; i < rp; ++i) r.push_back(i);
    for (int i = 0; i < rnp; ++i) r.push_back(np + i);
    for (bool balance : {false, true}) {
      const outcome o = run_case(make_setup(p, r), 4, balance, 9);
      EXPECT_EQ(o.stages, static_cast<std::size_t>(2 + floor_log2(np)))
          << np << " " << rp << " " << rnp;
      EXPECT_EQ(o.rounds, o.stages) << np << " " << rp << " " << rnp;
    }
  }
}

// Section 3.3, Figure 5/6: r1 = all of {0, 1, 2, 3} to {0, 1} (a variant of the paper's
// receivers {0, 2} in which the direction matters), then r2 = {1, 2} to {3}. In r1, 2 and 3
// send to 0 and 1, which then exchange: 0 and 1 receive twice. By default r2's pair sends
// 2 -> 1 (the higher number to the lower), serializing receives at 1; balanced against r1's
// edges, 1 sends to 2, which only sent so far and receives on its other duplex direction.
TEST(GeneralizedSchedules, LoadBalancingAcrossConcurrentReductions) {
  const setup r1 = make_setup({0, 1, 2, 3}, {0, 1});
  const auto g1 = graph_reduce_generalized(r1.shape, true);
  generalized_load world_load;  // world ranks 0..3 (r1's group ranks are world ranks)
  world_load.in.assign(4, 0);
  world_load.out.assign(4, 0);
  for (const auto& st : g1.stages)
    for (const auto& t : st) {
      ++world_load.out[static_cast<std::size_t>(t.from)];
      ++world_load.in[static_cast<std::size_t>(t.to)];
    }
  EXPECT_EQ(world_load.in, (std::vector<int>{2, 2, 0, 0}));
  const setup r2 = make_setup({1, 2}, {3});  // group: world 1, 2, 3
  generalized_load prior;
  for (int w : r2.members) {
    prior.in.push_back(world_load.in[static_cast<std::size_t>(w)]);
    prior.out.push_back(world_load.out[static_cast<std::size_t>(w)]);
  }
  const auto plain = graph_reduce_generalized(r2.shape, false);
  const auto balanced = graph_reduce_generalized(r2.shape, true, &prior);
  ASSERT_EQ(plain.stages.size(), 2u);
  ASSERT_EQ(balanced.stages.size(), 2u);
  // Group ranks 0, 1, 2 are world ranks 1, 2, 3.
  EXPECT_EQ(plain.stages[0][0].from, 1);
  EXPECT_EQ(plain.stages[0][0].to, 0);
  EXPECT_EQ(plain.stages[1][0].from, 0);
  EXPECT_EQ(balanced.stages[0][0].from, 0);
  EXPECT_EQ(balanced.stages[0][0].to, 1);
  EXPECT_EQ(balanced.stages[1][0].from, 1);  // the node that reduced delivers
  EXPECT_EQ(balanced.stages[1][0].to, 2);
  run_case(r2, 6, true, 3, &prior);
  // The paper's own receivers {0, 2}: r1 makes 0 and 2 receive twice; r2's default direction
  // 2 -> 1 is already the balanced one, and the balancer keeps it.
  const setup f5 = make_setup({0, 1, 2, 3}, {0, 2});
  const auto f5g = graph_reduce_generalized(f5.shape, true);
  std::vector<int> in(4, 0);
  for (const auto& st : f5g.stages)
    for (const auto& t : st) ++in[static_cast<std::size_t>(t.to)];
  EXPECT_EQ(in, (std::vector<int>{2, 0, 2, 0}));
  generalized_load p5{{0, 2, 0}, {1, 1, 0}};  // world 1, 2, 3 after r1
  const auto r2f5 = graph_reduce_generalized(r2.shape, true, &p5);
  EXPECT_EQ(r2f5.stages[0][0].from, 1);  // world 2 -> world 1
  EXPECT_EQ(r2f5.stages[0][0].to, 0);
}

// Within one graph: a halving pair of non-receivers whose lower node already received in the
// fold lets the other one receive. Stage counts never change with balancing.
TEST(GeneralizedSchedules, LoadBalancingWithinOneGraph) {
  // |P| = 6, receiver 0: fold 4 -> 0 and 5 -> 1, then halving pairs (0, 2) and (1, 3): 1 and
  // 3 are interchangeable non-receivers; 1 received in the fold, so 3 receives instead.
  const setup s = make_setup({0, 1, 2, 3, 4, 5}, {0});
  const auto plain = graph_reduce_generalized(s.shape, false);
  const auto balanced = graph_reduce_generalized(s.shape, true);
  ASSERT_EQ(plain.stages.size(), balanced.stages.size());
  auto has = [](const generalized_graph& g, std::size_t k, int from, int to) {
    for (const auto& t : g.stages[k])
      if (t.from == from && t.to == to) return true;
    return false;
  };
  EXPECT_TRUE(has(plain, 1, 3, 1));
  EXPECT_TRUE(has(balanced, 1, 1, 3));
  EXPECT_TRUE(has(balanced, 2, 3, 0));
  run_case(s, 4, true, 5);
}

TEST(GeneralizedSchedules, RejectsNonCommutativeAndMalformed) {
  const setup s = make_setup({0, 1, 2}, {3});
  EXPECT_THROW((void)plan_reduce_generalized(s.shape, 0, 8, false, false), std::invalid_argument);
  generalized_shape none{2, {false, false}};
  EXPECT_THROW((void)graph_reduce_generalized(none, false), std::invalid_argument);
  generalized_shape idle{1, {true, false}};  // a non-participant that does not receive
  EXPECT_THROW((void)graph_reduce_generalized(idle, false), std::invalid_argument);
  EXPECT_THROW((void)plan_reduce_generalized(s.shape, 4, 8, true, false), std::invalid_argument);
}

// Direct delivery on the Figure 5 pair: r1 ({0, 1, 2, 3} -> {0, 2}) has no forwarding hop and
// keeps its graph; r2 ({1, 2} -> {3}) becomes one stage in which 1 and 2 both send to 3, which
// reduces; a reduce to one non-participant loses its last stage; a shape whose holders exchange
// in the butterfly keeps its delivery stage.
TEST(GeneralizedSchedules, DirectDeliveryFigure5) {
  const setup r1 = make_setup({0, 1, 2, 3}, {0, 2});
  const auto g1 = graph_reduce_generalized(r1.shape, false);
  const auto d1 = deliver_directly(g1, r1.shape);
  EXPECT_FALSE(d1.direct);
  ASSERT_EQ(d1.stages.size(), g1.stages.size());
  const setup r2 = make_setup({1, 2}, {3});  // group: world 1, 2, 3
  const auto g2 = graph_reduce_generalized(r2.shape, false);
  ASSERT_EQ(g2.stages.size(), 2u);
  const auto d2 = deliver_directly(g2, r2.shape);
  EXPECT_TRUE(d2.direct);
  ASSERT_EQ(d2.stages.size(), 1u);
  std::vector<std::tuple<int, int, bool>> links;
  for (const auto& t : d2.stages[0]) links.emplace_back(t.from, t.to, t.combine);
  std::sort(links.begin(), links.end());
  EXPECT_EQ(links, (std::vector<std::tuple<int, int, bool>>{{0, 2, true}, {1, 2, false}}));
  // Group rank 2 (world 3) receives both operands in one round, reduces them in the next.
  const schedule p3 = plan_reduce_generalized(d2, r2.shape, 2, 16, false);
  EXPECT_EQ(p3.name, "reduce_generalized/aspen_direct");
  EXPECT_EQ(p3.message_rounds(), 1u) << p3;
  for (int r = 0; r < 2; ++r) {  // the participants only send, straight from their input
    const schedule pr = plan_reduce_generalized(d2, r2.shape, r, 16, false);
    ASSERT_EQ(pr.steps.size(), 1u) << pr;
    EXPECT_EQ(pr.steps[0].kind, step_kind::send);
    EXPECT_EQ(pr.temp_bytes, 0u);
  }
  for (bool balance : {false, true}) {
    const outcome o = run_case(r2, 7, balance, 11, nullptr, true);
    EXPECT_EQ(o.stages, 1u);
    EXPECT_EQ(o.depth, 1u);
  }
  // All of 0..7 to 8: three halvings then 0 -> 8; direct: 1 -> 8 and 0 -> 8 in the third.
  const setup to8 = make_setup({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  EXPECT_EQ(graph_reduce_generalized(to8.shape, false).stages.size(), 4u);
  EXPECT_EQ(run_case(to8, 5, false, 12, nullptr, true).stages, 3u);
  // {0..3} -> {4, 5}: holders 0 and 1 exchange in the butterfly, so both still deliver.
  const setup two = make_setup({0, 1, 2, 3}, {4, 5});
  const auto gtwo = graph_reduce_generalized(two.shape, false);
  EXPECT_EQ(deliver_directly(gtwo, two.shape).stages.size(), gtwo.stages.size());
}

// Direct delivery on every shape up to |P| = 12, |R_np| <= 2 |P| and on random sets: never more
// stages than the paper's graph, exactly the same messages, and (simulated) the right results.
TEST(GeneralizedSchedules, DirectDeliveryEveryShape) {
  auto edges = [](const generalized_graph& g) {
    std::size_t e = 0;
    for (const auto& st : g.stages) e += st.size();
    return e;
  };
  int shortened = 0;
  for_each_shape(12, [&](int np, int rp, int rnp, const generalized_shape& s) {
    for (bool balance : {false, true}) {
      const auto g = graph_reduce_generalized(s, balance);
      const auto d = deliver_directly(g, s);
      EXPECT_LE(d.stages.size(), g.stages.size()) << np << " " << rp << " " << rnp;
      EXPECT_EQ(edges(d), edges(g)) << np << " " << rp << " " << rnp;
      if (d.stages.size() < g.stages.size()) {
        EXPECT_TRUE(d.direct) << np << " " << rp << " " << rnp;
        ++shortened;
      }
    }
  });
  EXPECT_GT(shortened, 0);
  std::mt19937 g(77);
  for (int trial = 0; trial < 600; ++trial) {
    const int w = 1 + static_cast<int>(g() % 24);
    std::vector<int> p = random_subset(g, w, 1000 * static_cast<unsigned>(1 + g() % 9) / 10);
    std::vector<int> r = random_subset(g, w, 1000 * static_cast<unsigned>(1 + g() % 9) / 10);
    if (trial % 3 == 0) r = {static_cast<int>(g() % static_cast<unsigned>(w)) + w};  // one outsider
    const setup s = make_setup(p, r);
    const std::size_t paper = graph_reduce_generalized(s.shape, trial % 2 == 1).stages.size();
    const outcome o =
        run_case(s, 1 + g() % 6, trial % 2 == 1, static_cast<unsigned>(trial), nullptr, true);
    if (::testing::Test::HasFailure()) {
      FAIL() << "trial " << trial << ": |P|=" << s.shape.participants << " |R_p|=" << s.rp
             << " |R_np|=" << s.rnp;
    }
    EXPECT_LE(o.stages, paper) << "trial " << trial;
  }
}

// Section 3.1's hierarchical form on random sets and random placements (consecutive blocks or
// scattered ranks, 1 to 5 nodes): the right results on every receiver, the input never written,
// and between nodes only a node's leader and holder talk (one rank where a participant receives).
TEST(GeneralizedSchedules, HierarchicalOnRandomPlacements) {
  std::mt19937 g(31);
  int across = 0;
  for (int trial = 0; trial < 800; ++trial) {
    const int w = 1 + static_cast<int>(g() % 30);
    std::vector<int> p = random_subset(g, w, 1000 * static_cast<unsigned>(1 + g() % 9) / 10);
    std::vector<int> r = random_subset(g, w, 1000 * static_cast<unsigned>(1 + g() % 9) / 10);
    if (trial % 4 == 1) r = p;                                                   // an allreduce
    if (trial % 4 == 2) r = {static_cast<int>(g() % static_cast<unsigned>(w))};  // a reduce
    const setup s = make_setup(p, r);
    const int k = 1 + static_cast<int>(g() % 5);
    std::vector<int> node_of_world(static_cast<std::size_t>(w));
    for (int x = 0; x < w; ++x)
      node_of_world[static_cast<std::size_t>(x)] =
          trial % 2 ? x * k / w : static_cast<int>(g() % static_cast<unsigned>(k));
    std::vector<int> node_of;
    for (int m : s.members) node_of.push_back(node_of_world[static_cast<std::size_t>(m)]);
    const int n = static_cast<int>(s.members.size());
    const std::size_t count = trial % 16 == 0 ? 0 : 1 + g() % 9;
    const bool direct = trial % 3 == 0;
    std::vector<schedule> plans;
    std::vector<rank_buffers> bufs(static_cast<std::size_t>(n));
    std::vector<std::int64_t> expect(count, 0);
    for (int x = 0; x < n; ++x) {
      plans.push_back(plan_reduce_generalized_hierarchical(s.shape, node_of, x, count * 8, direct));
      auto& b = bufs[static_cast<std::size_t>(x)];
      if (x < s.shape.participants) {
        auto v = cairn::test::random_values<std::int64_t>(count, static_cast<unsigned>(trial),
                                                          static_cast<unsigned>(x));
        for (std::size_t i = 0; i < count; ++i) expect[i] += v[i];
        b.in = bytes_of(v);
      }
      if (s.shape.receives[static_cast<std::size_t>(x)]) b.out.assign(count * 8, std::byte{0x5A});
    }
    std::size_t depth = 0;
    simulate(plans, bufs, &depth);
    // Per node: the ranks that send to or receive from another node; one where a participant
    // of the node receives (leader and holder in one), else at most two.
    std::map<int, std::set<int>> talkers;
    std::set<int> one_speaker;
    for (int x = 0; x < n; ++x) {
      const int here = node_of[static_cast<std::size_t>(x)];
      if (x < s.shape.participants && s.shape.receives[static_cast<std::size_t>(x)])
        one_speaker.insert(here);
      if (s.shape.receives[static_cast<std::size_t>(x)]) {
        EXPECT_EQ(values_of(bufs[static_cast<std::size_t>(x)].out), expect)
            << "trial " << trial << " group rank " << x << "\n"
            << plans[static_cast<std::size_t>(x)];
      }
      for (const step& st : plans[static_cast<std::size_t>(x)].steps)
        if ((st.kind == step_kind::send || st.kind == step_kind::recv) &&
            node_of[static_cast<std::size_t>(st.peer)] != here)
          talkers[here].insert(x);
    }
    for (const auto& [node, ranks] : talkers) {
      EXPECT_LE(ranks.size(), one_speaker.count(node) ? 1u : 2u)
          << "trial " << trial << ": node " << node;
      ++across;
    }
    if (::testing::Test::HasFailure()) FAIL() << "trial " << trial;
  }
  EXPECT_GT(across, 500);
  EXPECT_EQ(plan_reduce_generalized_hierarchical(make_setup({0, 1}, {2}).shape,
                                                 std::vector<int>{0, 0, 1}, 2, 8, false)
                .name,
            "reduce_generalized/hierarchical");
  EXPECT_THROW((void)plan_reduce_generalized_hierarchical(make_setup({0, 1}, {2}).shape,
                                                          std::vector<int>{0, 0}, 0, 8, false),
               std::invalid_argument);
}
