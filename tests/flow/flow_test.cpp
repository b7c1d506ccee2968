// Flow graphs on both engines, against sequential references computed from the same seeds:
// Aspen's Figure 5 (two concurrent reduces on overlapping instances), random layered DAGs with
// fan-out and fan-in (every item delivered exactly once per path, in order per path, with
// checksums), a ring with a back-edge, random concurrent reduces on overlapping instance sets,
// an iterative solver that stops on a reduced residual, serialized items, flow control between
// ranks, and every building error. Instance counts below, equal to and above the rank count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cairn/flow/graph.hpp"
#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::run;
namespace flow = cairn::flow;

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// ---- Figure 5: p ||| r1(sum) ||| p[0], p[2];  p[1:2].outQueue1 ||| r2(multiply) ||| p[3] ----

double value_of(std::uint64_t seed, int instance, int round, int which) {
  return static_cast<double>(mix(seed + static_cast<std::uint64_t>(instance) * 1000 +
                                 static_cast<std::uint64_t>(round) * 10 +
                                 static_cast<std::uint64_t>(which)) %
                             7) +
         1.0;
}

struct parallel {
  static constexpr flow::input<double> in{};
  static constexpr flow::output<double> out{};
  static constexpr flow::output<double> out1{"outQueue1"};
  std::uint64_t seed = 0;
  int rounds = 0;
  int* checked = nullptr;
  flow::task run(flow::context& ctx) {
    const int me = ctx.index(), n = ctx.count();
    for (int k = 0; k < rounds; ++k) {
      ctx.send(out, value_of(seed, me, k, 1));                           // S18: joins r1
      if (me == 1 || me == 2) ctx.send(out1, value_of(seed, me, k, 2));  // S19: joins r2
      if (me == 0 || me == 2) {
        double want = 0;
        for (int i = 0; i < n; ++i) want += value_of(seed, i, k, 1);
        EXPECT_EQ(co_await ctx.dequeue(in), want) << ctx.name() << " round " << k;
        ++*checked;
      }
      if (me == 3) {
        EXPECT_EQ(co_await ctx.dequeue(in), value_of(seed, 1, k, 2) * value_of(seed, 2, k, 2))
            << ctx.name() << " round " << k;
        ++*checked;
      }
    }
  }
};

TEST(Flow, Figure5ConcurrentReducesOnOverlappingInstances) {
  run([](cairn::world& w) {
    for (const int extra : {0, 2, 5}) {  // 4, 6, 9 instances: fewer and more than the ranks
      const int n = 4 + extra, rounds = 20;
      int checked = 0;
      flow::graph g(w);
      auto p = g.add<parallel>("p", n, [&](int) {
        return parallel{7u + static_cast<unsigned>(extra), rounds, &checked};
      });
      auto r1 = g.reduce<double>("r1", cairn::plus{});
      auto r2 = g.reduce<double>("r2", cairn::multiplies{});
      g.flow(p, r1, {p[0], p[2]});
      g.flow(p.slice(1, 3).port(parallel::out1), r2, p[3]);
      g.run();
      int mine = 0;
      for (int i : {0, 2, 3}) mine += g.rank_of(p[i]) == w.rank() ? rounds : 0;
      EXPECT_EQ(checked, mine) << "rank " << w.rank();
      const std::string dot = g.to_dot();
      EXPECT_TRUE(has_text(dot, "generalized reduce r1")) << dot;
    }
  });
}

// ---- Random layered DAGs: producers, forwarders, sinks; fan-out and fan-in ----

struct item {
  std::int32_t origin = 0, seq = 0;
  std::uint64_t path = 0;   // hash of the instances passed
  std::uint64_t check = 0;  // a function of origin, seq and path
};

std::uint64_t check_of(const item& x) {
  return mix(static_cast<std::uint64_t>(x.origin) * 1000003 + static_cast<std::uint64_t>(x.seq)) ^
         x.path;
}

struct dag_plan {
  std::vector<int> layer_size;
  std::vector<int> first;                 // first instance of each layer
  std::vector<std::vector<int>> targets;  // per instance: instances of the next layer
  int items = 0;
  int total() const { return first.back() + layer_size.back(); }
  int layer_of(int i) const {
    int l = 0;
    while (l + 1 < static_cast<int>(first.size()) && first[static_cast<std::size_t>(l) + 1] <= i)
      ++l;
    return l;
  }
};

dag_plan make_dag(std::uint64_t seed) {
  std::mt19937_64 g(seed);
  dag_plan d;
  const int layers = 2 + static_cast<int>(g() % 3);
  int at = 0;
  for (int l = 0; l < layers; ++l) {
    d.layer_size.push_back(1 + static_cast<int>(g() % 4));
    d.first.push_back(at);
    at += d.layer_size.back();
  }
  d.targets.resize(static_cast<std::size_t>(at));
  for (int l = 0; l + 1 < layers; ++l)
    for (int i = 0; i < d.layer_size[static_cast<std::size_t>(l)]; ++i) {
      auto& t = d.targets[static_cast<std::size_t>(d.first[static_cast<std::size_t>(l)] + i)];
      const int next = d.layer_size[static_cast<std::size_t>(l) + 1];
      for (int j = 0; j < next; ++j)
        if (g() % 2) t.push_back(d.first[static_cast<std::size_t>(l) + 1] + j);
      if (t.empty())
        t.push_back(d.first[static_cast<std::size_t>(l) + 1] +
                    static_cast<int>(g() % static_cast<std::uint64_t>(next)));
    }
  d.items = 50 + static_cast<int>(g() % 300);
  return d;
}

// What each instance receives: count and the sum of checks (every path from every producer).
struct expected {
  std::uint64_t count = 0, sum = 0;
};
std::vector<expected> expect_dag(const dag_plan& d) {
  std::vector<expected> e(static_cast<std::size_t>(d.total()));
  // Walk every path from every producer item (small graphs: at most 4^4 paths).
  std::function<void(int, item)> walk = [&](int i, item x) {
    x.path = mix(x.path + static_cast<std::uint64_t>(i) + 1);
    for (int t : d.targets[static_cast<std::size_t>(i)]) {
      item y = x;
      y.check = check_of(y);
      e[static_cast<std::size_t>(t)].count++;
      e[static_cast<std::size_t>(t)].sum += y.check;
      walk(t, y);
    }
  };
  for (int i = 0; i < d.layer_size[0]; ++i)
    for (int s = 0; s < d.items; ++s) walk(i, item{i, s, 0, 0});
  return e;
}

struct stage {
  static constexpr flow::input<item> in{};
  static constexpr flow::output<item> out{};
  int instance = 0;
  bool producer = false, forwards = false;
  int items = 0;
  expected want;
  int* finished = nullptr;
  flow::task run(flow::context& ctx) {
    if (producer) {
      for (int s = 0; s < items; ++s) {
        ctx.send(out, item{instance, s, mix(static_cast<std::uint64_t>(instance) + 1), 0});
        if (s % 16 == 0) co_await ctx.yield();
      }
      ++*finished;
      co_return;
    }
    std::uint64_t sum = 0;
    std::map<std::pair<std::int32_t, std::uint64_t>, std::int32_t> last;  // per path: last seq
    for (std::uint64_t k = 0; k < want.count; ++k) {
      item x = co_await ctx.dequeue(in);
      x.check = check_of(x);
      sum += x.check;
      auto [it, fresh] = last.emplace(std::make_pair(x.origin, x.path), x.seq);
      if (!fresh) {
        EXPECT_LT(it->second, x.seq) << ctx.name() << ": out of order on a path";
        it->second = x.seq;
      }
      if (forwards) {
        x.path = mix(x.path + static_cast<std::uint64_t>(instance) + 1);
        ctx.send(out, x);
      }
    }
    EXPECT_EQ(sum, want.sum) << ctx.name();
    ++*finished;
  }
};

TEST(Flow, RandomDagsDeliverEveryItemOncePerPathInOrder) {
  run([](cairn::world& w) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
      const dag_plan d = make_dag(seed * 977);
      const std::vector<expected> want = expect_dag(d);
      int finished = 0;
      // Flow-control windows: none, one byte (every remote send waits for credit at the
      // producer's next yield), a few records, the default.
      const std::size_t windows[] = {0, 1, 100, flow::graph_options{}.window_bytes};
      flow::graph g(w, flow::graph_options{.buffer_bytes = seed % 2 ? 256u : 0u,
                                           .window_bytes = windows[seed % 4]});
      std::vector<flow::instances<stage>> layers;
      for (std::size_t l = 0; l < d.layer_size.size(); ++l) {
        std::string name = "layer";
        name += std::to_string(l);
        layers.push_back(g.add<stage>(name, d.layer_size[l], [&, l](int i) {
          const int inst = d.first[l] + i;
          stage s;
          s.instance = inst;
          s.producer = l == 0;
          s.forwards = l + 1 < d.layer_size.size();
          s.items = d.items;
          s.want = want[static_cast<std::size_t>(inst)];
          s.finished = &finished;
          return s;
        }));
      }
      for (std::size_t l = 0; l + 1 < d.layer_size.size(); ++l)
        for (int i = 0; i < d.layer_size[l]; ++i) {
          const int inst = d.first[l] + i;
          // One statement per output queue: a fan-out to the chosen instances.
          const auto& t = d.targets[static_cast<std::size_t>(inst)];
          if (t.size() == 1) {
            g.flow(layers[l][i], layers[l + 1][t[0] - d.first[l + 1]]);
          } else if (t.size() == 2) {
            g.flow(layers[l][i],
                   {layers[l + 1][t[0] - d.first[l + 1]], layers[l + 1][t[1] - d.first[l + 1]]});
          } else if (t.size() == 3) {
            g.flow(layers[l][i],
                   {layers[l + 1][t[0] - d.first[l + 1]], layers[l + 1][t[1] - d.first[l + 1]],
                    layers[l + 1][t[2] - d.first[l + 1]]});
          } else {
            g.flow(layers[l][i], layers[l + 1]);  // all four
          }
        }
      // Random explicit placement for odd seeds.
      if (seed % 3 == 0) {
        std::mt19937_64 pg(seed);
        for (auto& layer : layers)
          for (int i = 0; i < layer.size(); ++i)
            g.place(layer[i], static_cast<int>(pg() % static_cast<std::uint64_t>(w.size())));
      }
      g.run();
      int mine = 0;
      for (auto& layer : layers)
        for (int i = 0; i < layer.size(); ++i) mine += g.rank_of(layer[i]) == w.rank();
      EXPECT_EQ(finished, mine) << "seed " << seed << " rank " << w.rank();
      if (::testing::Test::HasFailure()) break;
    }
  });
}

// ---- Flow control: a producer cannot run ahead of a slow consumer by more than the window ----

struct flooder {
  static constexpr flow::output<item> out{};
  int items = 0, batch = 0;
  flow::task run(flow::context& ctx) {
    for (int s = 0; s < items; ++s) {
      ctx.send(out, item{ctx.index(), s, 0, 0});
      if (s % batch == batch - 1) co_await ctx.yield();
    }
  }
};
// What the slow consumer adds per item: slower to compute than the producer's send.
std::uint64_t slow_term(std::int32_t seq) {
  std::uint64_t h = static_cast<std::uint64_t>(seq);
  for (int j = 0; j < 200; ++j) h = mix(h);
  return static_cast<std::uint64_t>(seq) + (h & 1);
}
struct slow_sink {
  static constexpr flow::input<item> in{};
  int items = 0;
  std::size_t* most = nullptr;  // the longest queue seen before a dequeue
  std::uint64_t* sum = nullptr;
  flow::task run(flow::context& ctx) {
    for (int k = 0; k < items; ++k) {
      *most = std::max(*most, ctx.available(in));
      *sum += slow_term((co_await ctx.dequeue(in)).seq);
    }
  }
};

TEST(Flow, ProducersStayWithinTheWindowOfASlowConsumer) {
  run([](cairn::world& w) {
    const int p = w.size(), items = 20000, batch = 8;
    constexpr std::size_t window = 4096;
    std::size_t most = 0;
    std::uint64_t sum = 0;
    flow::graph g(w, flow::graph_options{.window_bytes = window});
    auto prod = g.add<flooder>("prod", p, [&](int) { return flooder{items, batch}; });
    auto sink = g.add<slow_sink>("sink", p, [&](int) { return slow_sink{items, &most, &sum}; });
    std::vector<int> at0, at1;
    for (int i = 0; i < p; ++i) {
      at0.push_back(i);
      at1.push_back((i + 1) % p);
    }
    g.place(prod, at0);
    g.place(sink, at1);
    g.flow(prod, sink);
    g.run();
    std::uint64_t want = 0;
    for (int s = 0; s < items; ++s) want += slow_term(s);
    EXPECT_EQ(sum, want);
    // Credit comes back only for items that arrived before the sink's queue last ran empty:
    // what waits in it was sent within the producer's window, plus one batch sent after its
    // yield passed. Items of a trivially copyable type travel on a lane, counted at their size.
    if (p > 1) {
      EXPECT_LE(most, window / sizeof(item) + batch) << "rank " << w.rank();
    }
  });
}

// ---- Lanes: the items of a vector with one instance per rank travel on a typed channel ----

struct tallying_sink {
  static constexpr flow::input<item> in{};
  int items = 0;
  std::uint64_t* sum = nullptr;
  flow::task run(flow::context& ctx) {
    for (int k = 0; k < items; ++k) {
      const item x = co_await ctx.dequeue(in);
      *sum += static_cast<std::uint64_t>(x.seq) * 3 + static_cast<std::uint64_t>(x.origin);
    }
  }
};

TEST(Flow, LanesCarryTheItemsOfVectorsWithOneInstancePerRank) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank(), items = 3000;
    std::uint64_t sum = 0;
    // Small buffers: many messages, each a batch joining its queue at once.
    flow::graph g(w, flow::graph_options{.buffer_bytes = 512});
    auto one = g.add<flooder>("one", p, [&](int) { return flooder{items, 64}; });
    auto two = g.add<flooder>("two", 2 * p, [&](int) { return flooder{items, 64}; });
    auto s1 = g.add<tallying_sink>("s1", p, [&](int) { return tallying_sink{items, &sum}; });
    auto s2 = g.add<tallying_sink>("s2", 2 * p, [&](int) { return tallying_sink{items, &sum}; });
    std::vector<int> at0, at1, two_at, s2_at;
    for (int i = 0; i < p; ++i) {
      at0.push_back(i);
      at1.push_back((i + 1) % p);
    }
    for (int i = 0; i < 2 * p; ++i) {
      two_at.push_back(i / 2);  // two instances per rank: records with their binding number
      s2_at.push_back((i / 2 + 1) % p);
    }
    g.place(one, at0);
    g.place(s1, at1);
    g.place(two, two_at);
    g.place(s2, s2_at);
    g.flow(one, s1);
    g.flow(two, s2);
    g.run();
    // This rank's sinks: s1[me - 1] and s2[2(me - 1)], s2[2(me - 1) + 1] (modulo p).
    const auto from = static_cast<std::uint64_t>((me + p - 1) % p);
    const auto n = static_cast<std::uint64_t>(items);
    const std::uint64_t seqs = 3 * (n * (n - 1) / 2);
    EXPECT_EQ(sum, 3 * seqs + n * (from + 2 * from + 2 * from + 1)) << "rank " << me;
    const std::string d = g.describe();
    EXPECT_EQ(has_text(d, "lane one.out: the items of " + std::to_string(p) + " instances"), p > 1)
        << d;
    EXPECT_FALSE(has_text(d, "lane two.out")) << d;
  });
}

// ---- A ring with a back-edge: a token goes around `laps` times ----

struct ring_member {
  static constexpr flow::input<std::int64_t> in{};
  static constexpr flow::output<std::int64_t> out{};
  int laps = 0;
  std::int64_t* final_value = nullptr;
  flow::task run(flow::context& ctx) {
    const int n = ctx.count();
    if (ctx.index() == 0) ctx.send(out, std::int64_t{1});
    for (int lap = 0; lap < laps; ++lap) {
      std::int64_t t = co_await ctx.dequeue(in);
      // ring[0] starts with 1; ring[i] sees lap * n + i, ring[0] (lap + 1) * n.
      const std::int64_t want = ctx.index() == 0 ? static_cast<std::int64_t>(lap + 1) * n
                                                 : static_cast<std::int64_t>(lap) * n + ctx.index();
      EXPECT_EQ(t, want) << ctx.name();
      if (ctx.index() != 0 || lap + 1 < laps) ctx.send(out, t + 1);
      if (ctx.index() == 0 && lap + 1 == laps) *final_value = t;
    }
  }
};

TEST(Flow, RingWithBackEdge) {
  run([](cairn::world& w) {
    for (const int n : {1, 3, 8}) {
      std::int64_t final_value = -1;
      const int laps = 25;
      flow::graph g(w);
      auto ring = g.add<ring_member>("ring", n, [&](int) {
        return ring_member{laps, &final_value};
      });
      if (n > 1) g.flow(ring.slice(0, n - 1), ring.slice(1, n));
      g.flow(ring[n - 1], ring[0]);  // the back-edge
      g.run();
      if (g.rank_of(ring[0]) == w.rank()) {
        EXPECT_EQ(final_value, static_cast<std::int64_t>(laps) * n);
      }
    }
  });
}

// ---- Random concurrent reduces on overlapping instance sets, in random orders ----

constexpr int max_reduces = 4;
using vec = std::vector<std::int64_t>;

vec contribution(std::uint64_t seed, int instance, int reduce, int round, std::size_t len) {
  vec v(len);
  for (std::size_t e = 0; e < len; ++e)
    v[e] = static_cast<std::int64_t>(mix(seed ^ (static_cast<std::uint64_t>(instance) << 40) ^
                                         (static_cast<std::uint64_t>(reduce) << 32) ^
                                         (static_cast<std::uint64_t>(round) << 16) ^ e) %
                                     1000) -
           500;
  return v;
}

struct reduce_spec {
  std::vector<int> participants, receivers;
  std::size_t len = 1;
  bool use_max = false;
};

struct member {
  static constexpr flow::input<vec> in0{"in0"}, in1{"in1"}, in2{"in2"}, in3{"in3"};
  static constexpr flow::output<vec> out0{"out0"}, out1{"out1"}, out2{"out2"}, out3{"out3"};
  static constexpr const flow::output<vec>* outs[max_reduces] = {&out0, &out1, &out2, &out3};
  static constexpr const flow::input<vec>* ins[max_reduces] = {&in0, &in1, &in2, &in3};
  std::uint64_t seed = 0;
  int rounds = 0;
  const std::vector<reduce_spec>* specs = nullptr;
  int* results = nullptr;
  flow::task run(flow::context& ctx) {
    const int me = ctx.index();
    std::mt19937_64 order(seed + static_cast<std::uint64_t>(me));
    // Half the instances dequeue into vectors kept across rounds (their storage is reused
    // for later results), the others take a new vector each time.
    const bool into = (seed + static_cast<std::uint64_t>(me)) % 2 == 0;
    std::vector<vec> kept(max_reduces, vec(3, -1));
    for (int k = 0; k < rounds; ++k) {
      std::vector<int> mine;  // this round's contributions, in a random order
      for (std::size_t r = 0; r < specs->size(); ++r) {
        const auto& p = (*specs)[r].participants;
        if (std::find(p.begin(), p.end(), me) != p.end()) mine.push_back(static_cast<int>(r));
      }
      std::shuffle(mine.begin(), mine.end(), order);
      for (int r : mine)
        ctx.send(*outs[r], contribution(seed, me, r, k, (*specs)[static_cast<std::size_t>(r)].len));
      for (std::size_t r = 0; r < specs->size(); ++r) {
        const reduce_spec& s = (*specs)[r];
        if (std::find(s.receivers.begin(), s.receivers.end(), me) == s.receivers.end()) continue;
        vec want = contribution(seed, s.participants[0], static_cast<int>(r), k, s.len);
        for (std::size_t j = 1; j < s.participants.size(); ++j) {
          const vec c = contribution(seed, s.participants[j], static_cast<int>(r), k, s.len);
          for (std::size_t e = 0; e < s.len; ++e)
            want[e] = s.use_max ? std::max(want[e], c[e]) : want[e] + c[e];
        }
        if (into) {
          co_await ctx.dequeue_into(*ins[r], kept[r]);
          EXPECT_EQ(kept[r], want) << ctx.name() << " reduce " << r << " round " << k;
        } else {
          EXPECT_EQ(co_await ctx.dequeue(*ins[r]), want)
              << ctx.name() << " reduce " << r << " round " << k;
        }
        ++*results;
      }
    }
  }
};

TEST(Flow, RandomConcurrentReducesMatchTheSequentialReference) {
  run([](cairn::world& w) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      std::mt19937_64 g(seed * 31337);
      const int n = 1 + static_cast<int>(g() % 9);
      const int nr = 1 + static_cast<int>(g() % max_reduces);
      std::vector<reduce_spec> specs(static_cast<std::size_t>(nr));
      for (auto& s : specs) {
        for (int i = 0; i < n; ++i)
          if (g() % 2) s.participants.push_back(i);
        if (s.participants.empty())
          s.participants.push_back(static_cast<int>(g() % static_cast<std::uint64_t>(n)));
        for (int i = 0; i < n; ++i)
          if (g() % 3 == 0) s.receivers.push_back(i);
        if (s.receivers.empty())
          s.receivers.push_back(static_cast<int>(g() % static_cast<std::uint64_t>(n)));
        s.len = g() % 4 == 0 ? 3000 : 1 + g() % 5;
        s.use_max = g() % 2;
      }
      int results = 0;
      const int rounds = 6;
      flow::graph g2(w, flow::graph_options{.balance_reduces = seed % 2 == 0});
      auto m = g2.add<member>("m", n, [&](int) { return member{seed, rounds, &specs, &results}; });
      for (int r = 0; r < nr; ++r) {
        const reduce_spec& s = specs[static_cast<std::size_t>(r)];
        std::string name = "r";
        name += std::to_string(r);
        auto connect = [&](auto red) {
          for (int i : s.participants) g2.flow(m[i].port(*member::outs[r]), red);
          std::vector<int> rs = s.receivers;
          for (int i : rs) g2.flow(red, m[i].port(*member::ins[r]));
        };
        if (s.use_max)
          connect(g2.reduce<vec>(name, cairn::max{}));
        else
          connect(g2.reduce<vec>(name, cairn::plus{}));
      }
      g2.run();
      int mine = 0;
      for (const auto& s : specs)
        for (int i : s.receivers) mine += g2.rank_of(m[i]) == w.rank() ? rounds : 0;
      EXPECT_EQ(results, mine) << "seed " << seed << " rank " << w.rank();
      if (::testing::Test::HasFailure()) break;
    }
  });
}

// ---- Long rounds of reduces that share ranks: the board's slots never run out ----

// Two reduces over every instance, `a` received by the first and `b` by the last. The first
// half sends every round of `a`, then every round of `b`; the second half sends round k of `a`
// only after round k of `b` (the last instance waits for its result first). Were a rank's keyed
// board slots filled with rounds of `a`, no round of `b` could start there: a deadlock. Rounds
// of 3000 elements (past a slot's payload) go on the board on one node.
struct ahead_or_behind {
  static constexpr flow::input<vec> in{};
  static constexpr flow::output<vec> to_a{"to_a"}, to_b{"to_b"};
  int rounds = 0;
  std::size_t len = 0;
  int* checked = nullptr;
  vec item(int who, int k, int which) const {
    vec v(len);
    for (std::size_t e = 0; e < len; ++e)
      v[e] = who * 7 + k * 3 + which + static_cast<std::int64_t>(e % 5);
    return v;
  }
  vec sum(int n, int k, int which) const {
    vec s(len, 0);
    for (int i = 0; i < n; ++i) {
      const vec v = item(i, k, which);
      for (std::size_t e = 0; e < len; ++e) s[e] += v[e];
    }
    return s;
  }
  flow::task run(flow::context& ctx) {
    const int me = ctx.index(), n = ctx.count();
    if (me < n / 2) {
      for (int k = 0; k < rounds; ++k) ctx.send(to_a, item(me, k, 0));
      for (int k = 0; k < rounds; ++k) ctx.send(to_b, item(me, k, 1));
      if (me == 0)
        for (int k = 0; k < rounds; ++k) {
          EXPECT_EQ(co_await ctx.dequeue(in), sum(n, k, 0)) << "a, round " << k;
          ++*checked;
        }
    } else {
      for (int k = 0; k < rounds; ++k) {
        ctx.send(to_b, item(me, k, 1));
        if (me == n - 1) {
          EXPECT_EQ(co_await ctx.dequeue(in), sum(n, k, 1)) << "b, round " << k;
          ++*checked;
        }
        ctx.send(to_a, item(me, k, 0));
      }
    }
  }
};

TEST(Flow, LongRoundsOfReducesSharingRanksNeverRunOutOfSlots) {
  run([](cairn::world& w) {
    for (const int n : {4, 6}) {
      const int rounds = 12;  // more than a rank's 8 keyed slots
      int checked = 0;
      flow::graph g(w);
      auto p = g.add<ahead_or_behind>("p", n, [&](int) {
        return ahead_or_behind{rounds, 3000, &checked};
      });
      auto a = g.reduce<vec>("a", cairn::plus{});
      auto b = g.reduce<vec>("b", cairn::plus{});
      g.flow(p.port(ahead_or_behind::to_a), a, p[0]);
      g.flow(p.port(ahead_or_behind::to_b), b, p[n - 1]);
      g.run();
      const int mine = (g.rank_of(p[0]) == w.rank() ? rounds : 0) +
                       (g.rank_of(p[n - 1]) == w.rank() ? rounds : 0);
      EXPECT_EQ(checked, mine) << "rank " << w.rank() << ", " << n << " instances";
    }
  });
}

// ---- An iterative solver: a back-edge through an all-reduce of the residual ----

struct solver_cell {
  static constexpr flow::input<double> in{};
  static constexpr flow::output<double> out{};
  int* iterations = nullptr;
  flow::task run(flow::context& ctx) {
    // x <- x/2 + c converges to 2c; the residual is the largest change of any cell.
    double x = 0;
    const double c = 1.0 + ctx.index();
    for (int it = 1;; ++it) {
      const double next = x / 2 + c;
      ctx.send(out, std::abs(next - x));
      x = next;
      if (co_await ctx.dequeue(in) < 1e-9) {
        *iterations = it;
        break;
      }
    }
    EXPECT_NEAR(x, 2 * c, 1e-8);
  }
};

TEST(Flow, SolverStopsOnAReducedResidual) {
  run([](cairn::world& w) {
    for (const int n : {1, 2, 5, 11}) {
      int iterations = -1;
      flow::graph g(w);
      auto cells = g.add<solver_cell>("cell", n, [&](int) { return solver_cell{&iterations}; });
      g.flow(cells, g.reduce<double>("residual", cairn::max{}), cells);  // all-reduce
      g.run();
      // The largest c (= n) decides: iteration k's change is n / 2^(k-1).
      int want = 1;
      while (n / std::ldexp(1.0, want - 1) >= 1e-9) ++want;
      bool here = false;
      for (int i = 0; i < n; ++i) here |= g.rank_of(cells[i]) == w.rank();
      if (here) {
        EXPECT_EQ(iterations, want) << "n " << n;
      }
    }
  });
}

// ---- Serialized items through fan-in, and a bcast module ----

struct talker {
  static constexpr flow::output<std::string> out{};
  flow::task run(flow::context& ctx) {
    for (int k = 0; k < 30; ++k)
      ctx.send(out, ctx.name() + ":" + std::string(static_cast<std::size_t>(k * 37 % 2000), 'x'));
    co_return;
  }
};
struct listener {
  static constexpr flow::input<std::string> in{};
  int expect = 0;
  std::uint64_t* sum = nullptr;
  flow::task run(flow::context& ctx) {
    for (int k = 0; k < expect; ++k) {
      const std::string s = co_await ctx.dequeue(in);
      *sum += s.size() + static_cast<std::uint64_t>(s[s.find(':') - 2] - '0');
    }
  }
};

TEST(Flow, SerializedItemsThroughBcastAndFanIn) {
  run([](cairn::world& w) {
    std::uint64_t sum = 0;
    flow::graph g(w, flow::graph_options{.buffer_bytes = 512});
    auto t = g.add<talker>("t", 3);
    auto b = g.bcast<std::string>("b");
    auto l = g.add<listener>("l", 4, [&](int) { return listener{90, &sum}; });
    g.flow(t, b, l);  // every talker's items to every listener
    g.run();
    std::uint64_t want = 0;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 30; ++k)
        want += 5 + static_cast<std::uint64_t>(k * 37 % 2000) + static_cast<std::uint64_t>(i);
    int mine = 0;
    for (int i = 0; i < 4; ++i) mine += g.rank_of(l[i]) == w.rank();
    EXPECT_EQ(sum, want * static_cast<std::uint64_t>(mine));
  });
}

// ---- Sub-graphs: one builder used twice, under nested scopes ----

struct emitter {
  static constexpr flow::output<std::int64_t> out{};
  int items = 0;
  flow::task run(flow::context& ctx) {
    for (int k = 1; k <= items; ++k) ctx.send(out, std::int64_t{k});
    co_return;
  }
};
struct doubler {
  static constexpr flow::input<std::int64_t> in{};
  static constexpr flow::output<std::int64_t> out{};
  int items = 0;
  flow::task run(flow::context& ctx) {
    for (int k = 0; k < items; ++k) ctx.send(out, 2 * co_await ctx.dequeue(in));
  }
};
struct collector {
  static constexpr flow::input<std::int64_t> in{};
  int items = 0;
  std::int64_t* sum = nullptr;
  flow::task run(flow::context& ctx) {
    for (int k = 0; k < items; ++k) *sum += co_await ctx.dequeue(in);
  }
};

// Two doublers in series: the sub-graph's inner flow, and its ends for its user.
struct doubling_ports {
  flow::instances<doubler> first, last;
};
doubling_ports doubling(flow::scope s, int items) {
  auto a = s.add<doubler>("a", 1, [=](int) { return doubler{items}; });
  auto b = s.add<doubler>("b", 1, [=](int) { return doubler{items}; });
  s.root().flow(a, b);
  return {a, b};
}

TEST(Flow, SubGraphsComposeUnderScopes) {
  run([](cairn::world& w) {
    const int items = 100;
    std::int64_t sum = 0;
    flow::graph g(w);
    auto e = g.add<emitter>("e", 1, [&](int) { return emitter{items}; });
    const doubling_ports left = doubling(g.nest("left"), items);
    const doubling_ports right = doubling(g.nest("right").nest("inner"), items);
    auto c = g.add<collector>("c", 1, [&](int) { return collector{items, &sum}; });
    g.flow(e, left.first);
    g.flow(left.last, right.first);
    g.flow(right.last, c);
    g.run();
    if (g.rank_of(c) == w.rank()) {
      EXPECT_EQ(sum, 16 * items * (items + 1) / 2);
    }
    const std::string d = g.describe();
    EXPECT_TRUE(has_text(d, "left/a[0] on rank") && has_text(d, "right/inner/b[0] on rank")) << d;
  });
}

// ---- Building errors: a cairn::error naming the modules and queues, on every rank ----

struct two_out {
  static constexpr flow::input<int> in{};
  static constexpr flow::output<int> out{};
  static constexpr flow::output<int> other{"other"};
  flow::task run(flow::context&) { co_return; }
};

// Ranks that pass different options or build different graphs: the first run reports it on
// every rank before anything runs (else a window that differs could leave a rank waiting for
// credit that never comes); the same graph built alike then runs.
TEST(Flow, RanksThatDisagreeOnTheGraphFailEverywhere) {
  run([](cairn::world& w) {
    const int me = w.rank();
    const auto build = [](flow::graph& g, int n) {
      auto p = g.add<two_out>("p", n);
      auto q = g.add<two_out>("q", n);
      g.flow(p, q);
    };
    const std::string here = "flow::graph::run: rank " + std::to_string(me) + ": ";
    std::string m = message_of([&] {
      flow::graph g(w, flow::graph_options{.window_bytes = me == 0 ? 4096u : 8192u});
      build(g, 2);
      g.run();
    });
    if (w.size() > 1) {
      EXPECT_TRUE(has_text(m, here +
                                  "ranks pass different graph_options::window_bytes: from "
                                  "4096 to 8192 (this rank " +
                                  std::string(me == 0 ? "4096" : "8192") + ")"))
          << m;
    } else {
      EXPECT_EQ(m, "no error");
    }
    m = message_of([&] {
      flow::graph g(w);
      build(g, me == 0 ? 3 : 2);
      g.run();
    });
    if (w.size() > 1) {
      EXPECT_TRUE(has_text(m, here + "ranks built different graphs") &&
                  has_text(m, std::string("this rank has ") + (me == 0 ? "6" : "4") + " instances"))
          << m;
    } else {
      EXPECT_EQ(m, "no error");
    }
    m = message_of([&] {
      flow::graph g(w, flow::graph_options{.window_bytes = 4096});
      build(g, 2);
      g.run();
      g.run();
    });
    EXPECT_EQ(m, "no error");
  });
}

TEST(Flow, BuildingErrorsNameModulesAndQueues) {
  run([](cairn::world& w) {
    const auto error_of = [&](auto build) {
      return message_of([&] {
        flow::graph g(w);
        build(g);
      });
    };
    std::string m = error_of([](flow::graph& g) {
      auto p = g.add<two_out>("p", 3);
      auto r = g.reduce<int>("r", cairn::plus{});
      g.flow(p, r, p[0]);
      g.flow(p[1], p[2]);
    });
    EXPECT_TRUE(has_text(m, "output queue p[1].out is bound twice (first to reduce 'r')")) << m;
    EXPECT_TRUE(has_text(m, "rank " + std::to_string(w.rank()))) << m;
    m = error_of([](flow::graph& g) {
      auto p = g.add<two_out>("p", 3);
      auto q = g.add<two_out>("q", 2);
      g.flow(p, q);
    });
    EXPECT_TRUE(has_text(m, "cannot connect 3 instances' out to 2 input queues")) << m;
    m = error_of([](flow::graph& g) {
      auto p = g.add<two_out>("p", 2);
      auto r = g.reduce<int>("r", cairn::plus{});
      g.flow(p.port(two_out::other), r);
      g.run();
    });
    EXPECT_TRUE(has_text(m, "reduce 'r' has no receiver")) << m;
    m = error_of([](flow::graph& g) {
      auto p = g.add<two_out>("p", 2);
      auto r = g.reduce<int>("r", cairn::plus{});
      g.flow(r, p);
      g.run();
    });
    EXPECT_TRUE(has_text(m, "reduce 'r' has no participant")) << m;
    m = error_of([](flow::graph& g) {
      auto p = g.add<two_out>("p", 2);
      auto r = g.reduce<int>("r", cairn::plus{});
      auto b = g.bcast<int>("b");
      g.flow(p, r);
      g.flow(r, b);
    });
    EXPECT_TRUE(has_text(m, "reduce 'r' flows into bcast 'b'")) << m;
    m = error_of([](flow::graph& g) {
      auto p = g.add<two_out>("p", 2);
      auto r = g.reduce<int>("r", cairn::plus{});
      g.flow(p, r, p[0]);
      g.flow(r, p[0]);
    });
    EXPECT_TRUE(has_text(m, "reduce 'r' flows into p[0].in twice")) << m;
    m = error_of([&](flow::graph& g) { g.place(g.add<two_out>("p", 2), w.size()); });
    EXPECT_TRUE(has_text(m, "p[0] placed on rank " + std::to_string(w.size()))) << m;
    m = error_of([](flow::graph& g) { (void)g.add<two_out>("p", 2)[2]; });
    EXPECT_TRUE(has_text(m, "index 2 outside the 2 instances of 'p'")) << m;
    m = error_of([](flow::graph& g) {
      (void)g.add<two_out>("p", 2);
      (void)g.reduce<int>("p", cairn::plus{});
    });
    EXPECT_TRUE(has_text(m, "a module and a reduce or bcast named 'p'")) << m;
    m = error_of([](flow::graph& g) {
      auto p = g.add<two_out>("p", 2);
      auto r = g.reduce<int>("r", cairn::plus{});
      g.flow(p, r, p[0]);
      g.flow(p.port(two_out::other), r);
      g.run();
    });
    EXPECT_TRUE(has_text(m, "p[0] flows into reduce 'r' from two output queues")) << m;
  });
}

}  // namespace
