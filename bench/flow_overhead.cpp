// `cairn-bench flow-overhead`: what cairn::flow (Aspen flow graphs) costs over the calls it
// lowers to, per round, in two programs. Both sides run the same rounds on the same ranks;
// samples alternate between the sides (the order rotates), each after a barrier; the figure is
// the slowest rank's time of a sample divided by its rounds, median over the samples.
//
// Figure 5 (rows `flow-overhead` and `flow-overhead-butterfly`, sizes 8 B and 1 MiB): four
// instances p[0..3] of a module placed in balanced blocks (2 ranks: p[0], p[1] on rank 0, p[2],
// p[3] on rank 1). Each round every p[i] sends a value (a double, or a std::vector<double> of
// size / 8 elements) into reduce r1 (sum), p[1] and p[2] also one into r2 (product); p[0] and
// p[2] dequeue r1's sum, p[3] r2's product; p[1] dequeues nothing (as in the figure, so it may
// run ahead of the others by any number of rounds). Receivers dequeue into a value kept across
// rounds (ctx.dequeue_into), as the baseline keeps its output buffer: a fresh 1 MiB vector per
// round costs its page faults whenever the allocator returned the memory (glibc trims the heap
// when freed chunks at its top exceed its trim threshold, 2 MiB once it adapted).
//   cairn::flow: one g.run() of `rounds` rounds of that module graph, timed whole: it includes
//   making the instances and the graph's channel and the run's collective end, which the many
//   rounds amortize (`run_1_round_us` in the rows: one g.run() of one round, the fixed part).
//   The lowering makes r1 and r2 generalized reduces over the instances' ranks, and, because
//   they share ranks, forces them onto the butterfly (messages; src/flow/lower.cpp).
//   Baseline `ireduce` (row `flow-overhead`): the same rank-level program written by hand:
//   every rank combines its instances' values (a copy of the first, the others added into it,
//   as the flow layer does), starts w.ireduce(r1's ranks, its receivers' ranks, ..., plus) and
//   w.ireduce(r2's ranks, ..., multiplies) with the default algorithm, waits for both and checks
//   the result once per receiving instance. Baseline `ireduce-butterfly` (row
//   `flow-overhead-butterfly`): the same with generalized_reduce_algorithm::butterfly, the
//   flow's algorithm, so that the layer's own cost shows apart from the algorithm's.
//   Row `flow-overhead-lockstep` (2 and 3 ranks, where it is the same rank-level program as
//   the baseline `ireduce-butterfly`): r1 flows into p[1] too, so p[1] waits for each round's
//   sum like the others instead of running ahead (as drawn, p[1] starts all its rounds of r2
//   at once, and the exact figure's time per round grows with the rounds per run).
// Ping-pong (row `flow-pingpong`, 8 B): two instances pp[0] on rank 0 and pp[1] on rank 1, flows
// pp[0] -> pp[1] -> pp[0]; pp[0] sends a std::uint64_t, pp[1] dequeues it and sends it back
// plus one, pp[0] dequeues that: one round trip per round, `pingpong-rounds` per g.run(),
// timed whole as above. Baseline `send-recv`: w.send / w.recv of one std::uint64_t between
// ranks 0 and 1, the same round trips.
//
// Verified, both sides: every received value is checked (element 0, which changes from round
// to round, and the last element every round; every element in the last round of a run);
// the count of mismatches over all ranks must be 0 and the count of checks the expected one, or
// the benchmark throws.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cairn/cairn.hpp"
#include "cairn/flow/graph.hpp"
#include "flow_common.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

namespace flow = cairn::flow;

constexpr int instances = 4;  // the figure's p[0..3]

// Exact inputs: element j of p[i]'s r1 value in round k is v1(i, j == 0 ? k : j) (small
// integers, so any order of the sum is exact); its r2 value v2(i, ...) (a product of two
// numbers with few significant bits, exact).
double v1(int i, std::size_t k) { return static_cast<double>(i + 1) + static_cast<double>(k % 17); }
double v2(int i, std::size_t k) {
  return i == 1 ? 2.0 + static_cast<double>(k % 3) : 0.5 * (1.0 + static_cast<double>(k % 5));
}
double sum1(std::size_t k) {
  double s = 0;
  for (int i = 0; i < instances; ++i) s += v1(i, k);
  return s;
}
double prod2(std::size_t k) { return v2(1, k) * v2(2, k); }

// Counts of one side on one rank.
struct tally {
  std::uint64_t checked = 0, wrong = 0;
};

// A value of Q (double, or a vector of n doubles) for instance i and reduce `which` (1 or 2).
template <class Q>
Q initial(std::size_t n, int i, int which) {
  if constexpr (std::is_same_v<Q, double>) {
    (void)n;
    return which == 1 ? v1(i, 0) : v2(i, 0);
  } else {
    Q q(n);
    for (std::size_t j = 0; j < n; ++j) q[j] = which == 1 ? v1(i, j) : v2(i, j);
    return q;
  }
}
template <class Q>
double& first(Q& q) {
  if constexpr (std::is_same_v<Q, double>)
    return q;
  else
    return q[0];
}
// Checks a received r1 (sum) or r2 (product) value of round k: element 0 and the last, or all.
template <class Q>
void check(const Q& q, std::size_t n, std::size_t k, bool sum, bool all, tally& t) {
  ++t.checked;
  const auto want = [&](std::size_t j) { return sum ? sum1(j) : prod2(j); };
  if constexpr (std::is_same_v<Q, double>) {
    (void)n;
    (void)all;
    t.wrong += q != want(k);
  } else {
    if (q.size() != n || q[0] != want(k)) {
      ++t.wrong;
      return;
    }
    if (n > 1 && q[n - 1] != want(n - 1)) ++t.wrong;
    if (all)
      for (std::size_t j = 1; j < n; ++j)
        if (q[j] != want(j)) {
          ++t.wrong;
          return;
        }
  }
}

// Aspen's Figure 5 `parallel` module, `rounds` rounds.
template <class Q>
struct parallel {
  static constexpr flow::input<Q> in{};
  static constexpr flow::output<Q> out{};
  static constexpr flow::output<Q> out1{"outQueue1"};
  std::size_t n = 1;
  const int* rounds = nullptr;
  tally* t = nullptr;
  bool lockstep = false;  // p[1] dequeues r1's sum too
  flow::task run(flow::context& ctx) {
    const int me = ctx.index();
    Q a = initial<Q>(n, me, 1), b = initial<Q>(n, me, 2), got{};
    const auto r = static_cast<std::size_t>(*rounds);
    for (std::size_t k = 0; k < r; ++k) {
      first(a) = v1(me, k);
      ctx.send(out, a);  // joins r1
      if (me == 1 || me == 2) {
        first(b) = v2(me, k);
        ctx.send(out1, b);  // joins r2
      }
      if (me == 0 || me == 2 || (lockstep && me == 1)) {
        co_await ctx.dequeue_into(in, got);
        check(got, n, k, true, k + 1 == r, *t);
      }
      if (me == 3) {
        co_await ctx.dequeue_into(in, got);
        check(got, n, k, false, k + 1 == r, *t);
      }
    }
  }
};

std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The Figure 5 measurement for one size: rows flow-overhead and flow-overhead-butterfly.
template <class Q>
void figure5(cairn::world& w, std::size_t bytes, int rounds, int samples, std::vector<row>& rows) {
  const std::size_t n = bytes / sizeof(double);
  const int me = w.rank();
  tally tf, tl, td;
  int flow_rounds = rounds;
  flow::graph g(w), gl(w);
  auto p = g.add<parallel<Q>>("p", instances, [&](int) {
    return parallel<Q>{n, &flow_rounds, &tf, false};
  });
  auto r1 = g.reduce<Q>("r1", cairn::plus{});
  auto r2 = g.reduce<Q>("r2", cairn::multiplies{});
  g.flow(p, r1, {p[0], p[2]});
  g.flow(p.slice(1, 3).port(parallel<Q>::out1), r2, p[3]);
  // The lockstep variant: r1 flows into p[1] too, so p[1] cannot run ahead of the others.
  auto pl = gl.add<parallel<Q>>("p", instances, [&](int) {
    return parallel<Q>{n, &rounds, &tl, true};
  });
  auto l1 = gl.reduce<Q>("r1", cairn::plus{});
  auto l2 = gl.reduce<Q>("r2", cairn::multiplies{});
  gl.flow(pl, l1, {pl[0], pl[1], pl[2]});
  gl.flow(pl.slice(1, 3).port(parallel<Q>::out1), l2, pl[3]);

  // The hand-written rank-level program: the ranks the lowering chose, this rank's instances.
  std::vector<int> rank_of;
  for (int i = 0; i < instances; ++i) rank_of.push_back(g.rank_of(p[i]));
  const auto ranks = [&](std::initializer_list<int> is) {
    std::vector<int> v;
    for (int i : is) v.push_back(rank_of[static_cast<std::size_t>(i)]);
    return sorted_unique(std::move(v));
  };
  const std::vector<int> p1 = ranks({0, 1, 2, 3}), rr1 = ranks({0, 2}), p2 = ranks({1, 2}),
                         rr2 = ranks({3});
  const auto has = [me](const std::vector<int>& v) {
    return std::find(v.begin(), v.end(), me) != v.end();
  };
  std::vector<int> local1, local2;  // this rank's instances in r1 and r2
  for (int i = 0; i < instances; ++i)
    if (rank_of[static_cast<std::size_t>(i)] == me) {
      local1.push_back(i);
      if (i == 1 || i == 2) local2.push_back(i);
    }
  std::vector<std::vector<double>> a, b;  // per local instance: its r1 and r2 values
  for (int i : local1) a.push_back(initial<std::vector<double>>(n, i, 1));
  for (int i : local2) b.push_back(initial<std::vector<double>>(n, i, 2));
  std::vector<double> in1(n), in2(n), out1(has(rr1) ? n : 0), out2(has(rr2) ? n : 0);
  const int receivers1 = static_cast<int>(rank_of[0] == me) + static_cast<int>(rank_of[2] == me);
  const bool receiver2 = rank_of[3] == me;
  // Combines the local values of round k into `in` (a copy of the first, the others added).
  const auto combine = [&](std::vector<std::vector<double>>& vals, const std::vector<int>& who,
                           std::vector<double>& in, std::size_t k, bool sum) {
    for (std::size_t x = 0; x < vals.size(); ++x) vals[x][0] = sum ? v1(who[x], k) : v2(who[x], k);
    std::copy(vals[0].begin(), vals[0].end(), in.begin());
    for (std::size_t x = 1; x < vals.size(); ++x) {
      const double* v = vals[x].data();
      if (sum)
        for (std::size_t j = 0; j < n; ++j) in[j] += v[j];
      else
        for (std::size_t j = 0; j < n; ++j) in[j] *= v[j];
    }
  };
  const auto direct = [&](cairn::generalized_reduce_algorithm alg) {
    cairn::generalized_reduce_options opt;
    opt.algorithm = alg;
    for (std::size_t k = 0; k < static_cast<std::size_t>(rounds); ++k) {
      const bool last = k + 1 == static_cast<std::size_t>(rounds);
      cairn::request q1, q2;
      if (has(p1) || has(rr1)) {
        if (!local1.empty()) combine(a, local1, in1, k, true);
        q1 = w.ireduce(p1, rr1, std::span<const double>(in1).first(local1.empty() ? 0 : n),
                       std::span<double>(out1), cairn::plus{}, opt);
      }
      if (has(p2) || has(rr2)) {
        if (!local2.empty()) combine(b, local2, in2, k, false);
        q2 = w.ireduce(p2, rr2, std::span<const double>(in2).first(local2.empty() ? 0 : n),
                       std::span<double>(out2), cairn::multiplies{}, opt);
      }
      q1.wait();
      q2.wait();
      for (int x = 0; x < receivers1; ++x) check(out1, n, k, true, last, td);
      if (receiver2) check(out2, n, k, false, last, td);
    }
    return static_cast<double>(rounds);
  };
  int flow_runs = 0, lock_runs = 0, direct_runs = 0;
  const auto flow_side = [&] {
    ++flow_runs;
    g.run();
    return static_cast<double>(rounds);
  };
  const auto lock_side = [&] {
    ++lock_runs;
    gl.run();
    return static_cast<double>(rounds);
  };
  const auto direct_default = [&] {
    ++direct_runs;
    return direct(cairn::generalized_reduce_algorithm::automatic);
  };
  const auto direct_butterfly = [&] {
    ++direct_runs;
    return direct(cairn::generalized_reduce_algorithm::butterfly);
  };
  // Warm-up, then the fixed part of a run (one round), then the alternating samples.
  flow_side();
  lock_side();
  direct_default();
  direct_butterfly();
  flow_rounds = 1;
  std::vector<double> one;
  for (int s = 0; s < 5; ++s) {
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    g.run();
    one.push_back(
        slowest(w, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  flow_rounds = rounds;
  const std::vector<double> t =
      flowb::time_sides(w, samples, {flow_side, direct_default, direct_butterfly, lock_side});

  // Every check passed, and as many were made as the runs' receivers had rounds.
  std::vector<std::uint64_t> mine{tf.checked, tf.wrong, td.checked, td.wrong, tl.checked, tl.wrong},
      all(6);
  w.allreduce(std::span<const std::uint64_t>(mine), std::span<std::uint64_t>(all), cairn::plus{});
  const std::uint64_t per_run = 3 * static_cast<std::uint64_t>(rounds);
  const auto want_flow = per_run * static_cast<std::uint64_t>(flow_runs) + 3 * 5;
  const auto want_direct = per_run * static_cast<std::uint64_t>(direct_runs);
  const auto want_lock =
      4 * static_cast<std::uint64_t>(rounds) * static_cast<std::uint64_t>(lock_runs);
  if (all[5] != 0 || all[4] != want_lock)
    throw std::runtime_error("flow-overhead (" + human_size(bytes) + ", lockstep): " +
                             std::to_string(all[5]) + " wrong of " + std::to_string(all[4]) +
                             " checks (expected " + std::to_string(want_lock) + ")");
  if (all[1] != 0 || all[3] != 0 || all[0] != want_flow || all[2] != want_direct)
    throw std::runtime_error("flow-overhead (" + human_size(bytes) + "): flow " +
                             std::to_string(all[1]) + " wrong of " + std::to_string(all[0]) +
                             " checks (expected " + std::to_string(want_flow) + "), ireduce " +
                             std::to_string(all[3]) + " wrong of " + std::to_string(all[2]) +
                             " (expected " + std::to_string(want_direct) + ")");
  if (me != 0) return;
  const std::string engine(cairn::to_string(w.engine()));
  const char* names[] = {"flow-overhead", "flow-overhead-butterfly"};
  const char* bases[] = {"ireduce", "ireduce-butterfly"};
  for (int v = 0; v < 2; ++v) {
    row r{names[v],
          engine,
          w.size(),
          bytes,
          "time_per_round_us",
          "lower",
          t[0] * 1e6,
          bases[v],
          t[static_cast<std::size_t>(v) + 1] * 1e6};
    r.set("rounds_per_run", std::to_string(rounds));
    r.set("samples", std::to_string(samples));
    r.set("run_1_round_us", json_text(std::optional<double>(median(one) * 1e6)));
    r.set("flow_algorithm", json_text("butterfly"));
    rows.push_back(std::move(r));
  }
  // The lockstep graph against the butterfly program: where p[1]'s rank also receives r1 (as on
  // 2 and 3 ranks), that is the same rank-level program.
  if (rank_of[1] == rank_of[0] || rank_of[1] == rank_of[2]) {
    row r{"flow-overhead-lockstep",
          engine,
          w.size(),
          bytes,
          "time_per_round_us",
          "lower",
          t[3] * 1e6,
          "ireduce-butterfly",
          t[2] * 1e6};
    r.set("rounds_per_run", std::to_string(rounds));
    r.set("samples", std::to_string(samples));
    r.set("flow_algorithm", json_text("butterfly"));
    rows.push_back(std::move(r));
  }
}

// The ping-pong module: pp[0] sends and awaits the echo, pp[1] echoes plus one.
struct pp_module {
  static constexpr flow::input<std::uint64_t> in{};
  static constexpr flow::output<std::uint64_t> out{};
  const int* rounds = nullptr;
  tally* t = nullptr;
  flow::task run(flow::context& ctx) {
    const auto r = static_cast<std::uint64_t>(*rounds);
    for (std::uint64_t k = 0; k < r; ++k) {
      if (ctx.index() == 0) {
        ctx.send(out, 3 * k + 1);
        const std::uint64_t v = co_await ctx.dequeue(in);
        ++t->checked;
        t->wrong += v != 3 * k + 2;
      } else {
        const std::uint64_t v = co_await ctx.dequeue(in);
        ++t->checked;
        t->wrong += v != 3 * k + 1;
        ctx.send(out, v + 1);
      }
    }
  }
};

void pingpong(cairn::world& w, int rounds, int samples, std::vector<row>& rows) {
  const int me = w.rank();
  tally tf, td;
  flow::graph g(w);
  auto pp = g.add<pp_module>("pp", 2, [&](int) { return pp_module{&rounds, &tf}; });
  g.place(pp, std::vector<int>{0, 1});
  g.flow(pp[0], pp[1]);
  g.flow(pp[1], pp[0]);
  int runs = 0;
  constexpr int tag = 7;
  const auto flow_side = [&] {
    ++runs;
    g.run();
    return static_cast<double>(rounds);
  };
  const auto direct_side = [&] {
    for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(rounds); ++k) {
      std::uint64_t v = 0;
      if (me == 0) {
        const std::uint64_t x = 3 * k + 1;
        w.send(&x, 1, 1, tag);
        w.recv(&v, 1, 1, tag);
        ++td.checked;
        td.wrong += v != 3 * k + 2;
      } else if (me == 1) {
        w.recv(&v, 1, 0, tag);
        ++td.checked;
        td.wrong += v != 3 * k + 1;
        ++v;
        w.send(&v, 1, 0, tag);
      }
    }
    return static_cast<double>(rounds);
  };
  flow_side();
  direct_side();
  const std::vector<double> t = flowb::time_sides(w, samples, {flow_side, direct_side});
  std::vector<std::uint64_t> mine{tf.checked, tf.wrong, td.checked, td.wrong}, all(4);
  w.allreduce(std::span<const std::uint64_t>(mine), std::span<std::uint64_t>(all), cairn::plus{});
  const auto want = 2 * static_cast<std::uint64_t>(rounds) * static_cast<std::uint64_t>(runs);
  if (all[1] != 0 || all[3] != 0 || all[0] != want || all[2] != want)
    throw std::runtime_error("flow-pingpong: flow " + std::to_string(all[1]) + " wrong of " +
                             std::to_string(all[0]) + " checks, send-recv " +
                             std::to_string(all[3]) + " wrong of " + std::to_string(all[2]) +
                             " (expected " + std::to_string(want) + " each)");
  if (me != 0) return;
  row r{"flow-pingpong", std::string(cairn::to_string(w.engine())),
        w.size(),        sizeof(std::uint64_t),
        "round_trip_us", "lower",
        t[0] * 1e6,      "send-recv",
        t[1] * 1e6};
  r.set("rounds_per_run", std::to_string(rounds));
  r.set("samples", std::to_string(samples));
  rows.push_back(std::move(r));
}

int run_flow_overhead(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // both baselines are cairn calls, measured in the run
  const bool quick = inv.opts.quick;
  const int small =
      static_cast<int>(count_param(inv.opts, "rounds", quick ? 300 : 3000, 1, 1 << 24));
  const int big = static_cast<int>(count_param(inv.opts, "big-rounds", quick ? 5 : 40, 1, 1 << 16));
  const int pp =
      static_cast<int>(count_param(inv.opts, "pingpong-rounds", quick ? 2000 : 20000, 1, 1 << 26));
  const int samples = static_cast<int>(count_param(inv.opts, "samples", quick ? 3 : 11, 1, 1001));
  const std::size_t mib = std::size_t{1} << 20;
  return flowb::run_probed(inv, {}, [&](cairn::world& w, std::vector<row>& rows) {
    figure5<double>(w, sizeof(double), small, samples, rows);
    figure5<std::vector<double>>(w, mib, big, samples, rows);
    if (w.size() >= 2) pingpong(w, pp, samples, rows);
  });
}

const param_registrar params{
    "flow-overhead",
    {{"rounds", "Figure 5 rounds per g.run() at 8 B", "3000, 300 with --quick"},
     {"big-rounds", "Figure 5 rounds per g.run() at 1 MiB", "40, 5 with --quick"},
     {"pingpong-rounds", "round trips per g.run() of the ping-pong", "20000, 2000 with --quick"},
     {"samples", "timed samples per side, alternating (the median is reported)",
      "11, 3 with --quick"}}};

const registrar reg{{"flow-overhead",
                     "flow graph vs the calls it lowers to: Aspen Fig. 5 reduces vs ireduce, "
                     "ping-pong vs send/recv (us per round)",
                     run_flow_overhead}};

}  // namespace

}  // namespace cairn::bench
