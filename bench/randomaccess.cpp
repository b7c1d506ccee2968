// `cairn-bench randomaccess`: HPCC RandomAccess (GUP/s, higher is better) on aggregated
// channels (AP 4.1), against the Active Pebbles paper's MPI code in the same run.
//
// Rules (HPCC): a global table of N 64-bit words, N a power of two (2^k words per rank when the
// ranks are a power of two; otherwise N = 2^(k + floor(log2 P)) block-distributed), initialised
// to table[i] = i; 4·N updates `table[ran & (N-1)] ^= ran` with the HPCC generator
// (x ← x<<1 ^ (x<0 ? 7 : 0)), rank r running 4·(its part of N) of them from HPCC_starts(4·first
// index of r); at most 1024 updates buffered per rank.
//
// cairn (`randomaccess`, `-grid`, `-hypercube`): each update is one 8-byte item on a channel
// whose batch handler XORs a message's updates into the owner's table, prefetching the words
// of the updates ahead (within one message: never more than the 1024 updates of look-ahead
// HPCC allows); w.quiesce() ends the phase. Buffering: a rank
// holds at most B partly filled buffers at once, B = the distinct (next peer, last hop or
// transit) pairs of its router (P − 1 for direct, 3 for grid 2x2 or the 4-rank hypercube), so
// buffer_items = floor(1024 / B) keeps the updates waiting in a rank's buffers ≤ 1024. Buffers
// already sent are on the network, as in HPCC's reference code, which also keeps its Isends
// going while it generates.
//
// Baseline (`mpi-alltoallv`, AP 4.1's MPI code): batches of 1024 generated updates, local ones
// applied at once, remote ones sorted by owner, MPI_Alltoall of the counts, MPI_Alltoallv of
// the updates, applied. Under mpirun it runs inline, alternating with cairn; in a plain
// (threads) run it comes from a child `mpirun -np P cairn-bench randomaccess --raw-mpi-only`.
//
// Verified (HPCC check, untimed, after every timed run): the same 4·N updates are applied again
// by an independent path — one bulk cairn alltoallv of all updates, no channels — which undoes
// a correct run (XOR), then the table words differing from their initial value are counted
// over all ranks; more than 1 % of N fails the run. Any error is reported on stderr.
//
// Rows: `size` is the table bytes of rank 0; `GUPS` = 4·N / slowest rank's seconds / 1e9.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr std::string_view metric = "GUPS";
constexpr std::string_view better = "higher";
constexpr std::string_view baseline_name = "mpi-alltoallv";
constexpr std::uint64_t poly = 7;
constexpr std::uint64_t period = 1317624576693539401ULL;
constexpr std::size_t lookahead = 1024;  // HPCC: updates a rank may hold back

// The HPCC generator step.
inline std::uint64_t hpcc_next(std::uint64_t x) noexcept {
  return (x << 1) ^ (static_cast<std::int64_t>(x) < 0 ? poly : 0);
}

// HPCC_starts(n): the generator's state after n steps from 1 (GF(2) matrix powering), as in
// the HPCC reference code.
std::uint64_t hpcc_starts(std::uint64_t n) {
  n %= period;
  if (n == 0) return 1;
  std::uint64_t m2[64];
  std::uint64_t temp = 1;
  for (auto& m : m2) {
    m = temp;
    temp = hpcc_next(hpcc_next(temp));
  }
  int i = 62;
  while (i >= 0 && !((n >> i) & 1)) --i;
  std::uint64_t ran = 2;
  while (i > 0) {
    temp = 0;
    for (int j = 0; j < 64; ++j)
      if ((ran >> j) & 1) temp ^= m2[j];
    ran = temp;
    --i;
    if ((n >> i) & 1) ran = hpcc_next(ran);
  }
  return ran;
}

// HPCC_starts against plain stepping (both kernels and the check share the start, so a wrong
// start would go unnoticed by the table check).
void check_generator() {
  std::uint64_t x = 1;
  for (std::uint64_t n = 1; n <= 5000; ++n) {
    x = hpcc_next(x);
    if (n % 997 == 0 && hpcc_starts(n) != x)
      throw std::runtime_error("randomaccess: HPCC_starts(" + std::to_string(n) + ") is wrong");
  }
}

// The problem on one rank.
struct problem {
  std::uint64_t n = 0;     // global table words (a power of two)
  std::uint64_t mask = 0;  // n - 1
  cairn::block_distribution dist{1, 1};
  std::uint64_t first = 0;    // global index of this rank's first word
  std::uint64_t local = 0;    // words on this rank
  std::uint64_t updates = 0;  // updates this rank generates: 4 · local
  std::uint64_t batches = 0;  // batches of `lookahead` updates of the rank with the most

  problem(int k, int me, int ranks) {
    int log_p = 0;
    while ((2 << log_p) <= ranks) ++log_p;
    n = std::uint64_t{1} << (k + log_p);
    mask = n - 1;
    dist = cairn::block_distribution(n, ranks);
    const std::uint64_t b =
        (n + static_cast<std::uint64_t>(ranks) - 1) / static_cast<std::uint64_t>(ranks);
    first = std::min(n, b * static_cast<std::uint64_t>(me));
    local = dist.local_size(me);
    updates = 4 * local;
    batches = (4 * dist.local_size(0) + lookahead - 1) / lookahead;  // rank 0 has the most
  }
  [[nodiscard]] std::uint64_t start() const { return hpcc_starts(4 * first); }
  [[nodiscard]] int owner(std::uint64_t ran) const { return dist.owner(ran & mask); }
  [[nodiscard]] std::uint64_t index(std::uint64_t ran) const {
    return dist.local_index(ran & mask);
  }
};

void init_table(std::vector<std::uint64_t>& table, const problem& p) {
  table.assign(p.local, 0);
  for (std::uint64_t i = 0; i < p.local; ++i) table[i] = p.first + i;
}

// The HPCC check through an independent path: all of this rank's updates, bucketed by owner,
// exchanged in one cairn alltoallv and applied; then the words not at their initial value are
// counted over all ranks. Throws if more than 1 % of the table is wrong.
std::uint64_t verify(cairn::world& w, std::vector<std::uint64_t>& table, const problem& p,
                     const std::string& who) {
  const auto ranks = static_cast<std::size_t>(w.size());
  std::vector<std::size_t> send_counts(ranks, 0), recv_counts(ranks, 0), at(ranks, 0);
  std::uint64_t ran = p.start();
  for (std::uint64_t i = 0; i < p.updates; ++i) {
    ran = hpcc_next(ran);
    ++send_counts[static_cast<std::size_t>(p.owner(ran))];
  }
  for (std::size_t r = 1; r < ranks; ++r) at[r] = at[r - 1] + send_counts[r - 1];
  std::vector<std::uint64_t> out(p.updates);
  ran = p.start();
  for (std::uint64_t i = 0; i < p.updates; ++i) {
    ran = hpcc_next(ran);
    out[at[static_cast<std::size_t>(p.owner(ran))]++] = ran;
  }
  w.alltoall(send_counts, recv_counts);
  std::size_t total = 0;
  for (auto c : recv_counts) total += c;
  std::vector<std::uint64_t> in(total);
  w.alltoallv(out, send_counts, in, recv_counts);
  for (const auto r : in) table[p.index(r)] ^= r;

  std::uint64_t errors = 0, all_errors = 0;
  for (std::uint64_t i = 0; i < p.local; ++i) errors += table[i] != p.first + i;
  w.allreduce(std::span(&errors, 1), std::span(&all_errors, 1), cairn::plus{});
  if (w.rank() == 0 && all_errors != 0)
    note("randomaccess (" + who + "): HPCC check found " + std::to_string(all_errors) +
         " wrong words of " + std::to_string(p.n) + " (allowed: 1 %)");
  if (all_errors * 100 > p.n)
    throw std::runtime_error("randomaccess (" + who + "): " + std::to_string(all_errors) +
                             " errors in a table of " + std::to_string(p.n) +
                             " words, more than the 1 % HPCC allows");
  return all_errors;
}

// Largest number of buffers a rank of this route fills at once: one per distinct (next peer,
// last hop or transit) pair over all destinations (forwarded items take the same pairs).
template <class Route>
std::size_t max_buffers(const cairn::world& w, const Route& route) {
  const auto r = route.make(w);
  if constexpr (decltype(r)::is_direct) {
    return static_cast<std::size_t>(w.size() - 1);
  } else {
    std::set<std::pair<int, bool>> pairs;
    for (int d = 0; d < w.size(); ++d) {
      if (d == w.rank()) continue;
      const int next = r.next_hop(d);
      pairs.insert({next, next == d});
    }
    return pairs.size();
  }
}

// One timed cairn run (seconds of the slowest rank), verified.
template <class Route>
double cairn_run(cairn::world& w, const problem& p, Route route, const std::string& who) {
  std::vector<std::uint64_t> table;
  init_table(table, p);
  // Every rank takes the largest B so that all use the same buffer size.
  std::uint64_t b = max_buffers(w, route), all_b = 0;
  w.allreduce(std::span(&b, 1), std::span(&all_b, 1), cairn::max{});
  const std::size_t items = std::max<std::size_t>(1, lookahead / std::max<std::uint64_t>(1, all_b));
  const auto dist = p.dist.of([mask = p.mask](std::uint64_t ran) { return ran & mask; });
  double seconds = 0;
  {
    // A batch handler: a message's updates at once, the words of those ahead prefetched.
    auto ch = cairn::make_channel<std::uint64_t>(
        w, dist,
        [&](std::span<const std::uint64_t> rans) {
          const auto word = [&](std::uint64_t ran) { return &table[dist.local_index(ran)]; };
          cairn::for_each_prefetched(rans, word, [&](std::uint64_t ran) { *word(ran) ^= ran; });
        },
        route, cairn::channel_options{.buffer_items = items, .name = "randomaccess"});
    std::uint64_t ran = p.start();
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < p.updates; ++i) {
      ran = hpcc_next(ran);
      ch.send(ran);
    }
    w.quiesce();
    const auto t1 = std::chrono::steady_clock::now();
    seconds = std::chrono::duration<double>(t1 - t0).count();
  }
  verify(w, table, p, who);
  return slowest(w, seconds);
}

#if CAIRN_BENCH_HAVE_MPI
// AP 4.1's MPI code: batches of ≤ 1024 updates, counts by MPI_Alltoall, updates by
// MPI_Alltoallv. Seconds of the slowest rank; verified afterwards through cairn's path.
double mpi_run(cairn::world& w, const problem& p) {
  const int ranks = w.size(), me = w.rank();
  const auto nr = static_cast<std::size_t>(ranks);
  std::vector<std::uint64_t> table;
  init_table(table, p);
  std::vector<int> scount(nr), sdispl(nr), rcount(nr), rdispl(nr), owner(lookahead), at(nr);
  std::vector<std::uint64_t> gen(lookahead), sendbuf(lookahead), recvbuf(lookahead * nr);
  std::uint64_t ran = p.start(), left = p.updates;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t batch = 0; batch < p.batches; ++batch) {
    const std::size_t m = static_cast<std::size_t>(std::min<std::uint64_t>(lookahead, left));
    left -= m;
    std::fill(scount.begin(), scount.end(), 0);
    for (std::size_t i = 0; i < m; ++i) {
      ran = hpcc_next(ran);
      const int o = p.owner(ran);
      if (o == me) {
        table[p.index(ran)] ^= ran;
        owner[i] = -1;
      } else {
        owner[i] = o;
        gen[i] = ran;
        ++scount[static_cast<std::size_t>(o)];
      }
    }
    for (std::size_t r = 1; r < nr; ++r) sdispl[r] = sdispl[r - 1] + scount[r - 1];
    std::copy(sdispl.begin(), sdispl.end(), at.begin());
    for (std::size_t i = 0; i < m; ++i)
      if (owner[i] >= 0)
        sendbuf[static_cast<std::size_t>(at[static_cast<std::size_t>(owner[i])]++)] = gen[i];
    MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (std::size_t r = 1; r < nr; ++r) rdispl[r] = rdispl[r - 1] + rcount[r - 1];
    MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), MPI_UINT64_T, recvbuf.data(),
                  rcount.data(), rdispl.data(), MPI_UINT64_T, MPI_COMM_WORLD);
    const int got = rdispl[nr - 1] + rcount[nr - 1];
    for (int i = 0; i < got; ++i) {
      const std::uint64_t r = recvbuf[static_cast<std::size_t>(i)];
      table[p.index(r)] ^= r;
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  verify(w, table, p, "mpi-alltoallv");
  return slowest(w, std::chrono::duration<double>(t1 - t0).count());
}
#endif

struct settings {
  int k;       // log2 of the table words per rank
  int rounds;  // timed runs per figure (median)
};

settings settings_for(const options& o) {
  return settings{static_cast<int>(count_param(o, "scale", o.quick ? 16 : 19, 1, 34)),
                  static_cast<int>(count_param(o, "rounds", o.quick ? 1 : 3, 1, 1001))};
}

double gups(const problem& p, double seconds) {
  return 4.0 * static_cast<double>(p.n) / seconds / 1e9;
}

std::size_t row_size(const problem& p) {
  return static_cast<std::size_t>(p.dist.local_size(0) * 8);
}

// `--raw-mpi-only`: the baseline alone, as JSON rows for the parent threads run.
int run_raw_only(const invocation& inv) {
  raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
  const settings s = settings_for(inv.opts);
  body = [&](cairn::world& w, report* rep) {
    const problem p(s.k, w.rank(), w.size());
    std::vector<double> runs;
    for (int r = 0; r < s.rounds; ++r) runs.push_back(mpi_run(w, p));
    if (rep)
      rep->add(raw_mpi_row(std::string(inv.name), w.size(), row_size(p), metric, better,
                           gups(p, median(runs))));
  };
#endif
  return run_raw_mpi_only(inv, body);
}

int run_randomaccess(const invocation& inv) {
  check_generator();
  if (inv.opts.raw_mpi_only) return run_raw_only(inv);
  cairn::launch_options lo;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    lo.ranks = threads_run_ranks(inv);
  const baseline_figures spawned = prepare_baseline(inv, metric, lo.ranks.value_or(0));
  const settings s = settings_for(inv.opts);

  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    const problem p(s.k, w.rank(), w.size());
    const bool inline_mpi = w.engine() == cairn::engine::mpi && inv.opts.baseline;
    std::vector<double> direct, grid, cube, base;
    // Rounds alternate the kernels so that drifting machine load hits them alike.
    for (int r = 0; r < s.rounds; ++r) {
      direct.push_back(cairn_run(w, p, cairn::route::direct{}, "cairn direct"));
      if (w.size() > 1) {
        grid.push_back(cairn_run(w, p, cairn::route::grid{}, "cairn grid"));
        cube.push_back(cairn_run(w, p, cairn::route::hypercube{}, "cairn hypercube"));
      }
#if CAIRN_BENCH_HAVE_MPI
      if (inline_mpi) base.push_back(mpi_run(w, p));
#endif
    }
    if (w.rank() != 0) return;
    const std::optional<double> base_gups = baseline_figure(
        inv, baseline_name, spawned, inline_mpi,
        base.empty() ? std::nullopt : std::optional<double>(gups(p, median(base))), row_size(p));
    report rep(inv.opts.json);
    const std::string engine(cairn::to_string(w.engine()));
    auto emit = [&](const std::string& bench, const std::vector<double>& runs) {
      if (runs.empty()) return;
      rep.add(row{bench, engine, w.size(), row_size(p), std::string(metric), std::string(better),
                  gups(p, median(runs)), std::string(baseline_name), base_gups});
    };
    emit("randomaccess", direct);
    emit("randomaccess-grid", grid);
    emit("randomaccess-hypercube", cube);
  });
}

const param_registrar params{
    "randomaccess",
    {{"scale", "log2 of the table words per rank", "19, 16 with --quick"},
     {"rounds", "timed runs per figure (the median is reported)", "3, 1 with --quick"}}};

const registrar reg{
    {"randomaccess",
     "HPCC RandomAccess, <= 1024 updates buffered per rank, direct/grid/hypercube vs "
     "MPI_Alltoallv batches (GUP/s)",
     run_randomaccess}};

}  // namespace

}  // namespace cairn::bench
