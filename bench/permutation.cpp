// `cairn-bench permutation`: AP 4.3. Three arrays of N = L·P elements, block-distributed:
// `data` (element i holds data[i], an index into perm, plus its payload i), `perm` (a
// permutation of [0, N)) and the result `data_perm`; the inverse of perm is applied, so that
// afterwards data_perm[perm[data[i]]] = i for every i. The figure is elements permuted per
// second over all ranks (N / slowest rank's seconds; higher is better).
//
// cairn (`permutation`): AP's depth-two formulation, one phase — a `permute` channel carries
// (data[i], i) to the owner of perm[data[i]], whose handler looks perm up and sends
// (perm[data[i]], i) on a `put` channel to the owner of that slot of data_perm, whose handler
// stores i. One w.quiesce() ends both levels (the layer has no depth-limited wait, so the
// general termination detection is used). `permutation-batched` (and `permutation-grid` from 4
// ranks, on the grid route) gives both channels batch handlers, which take a message's items
// at once and prefetch the random reads of perm and writes of data_perm a few items ahead, as
// the baseline's loops let the processor do by itself.
//
// Baseline (`mpi-alltoallv`, AP 4.3's MPI version): two bulk rounds — bucket (data[i], i) by
// the owner of perm[data[i]], MPI_Alltoall counts, MPI_Alltoallv; look perm up, bucket by the
// owner of the target, MPI_Alltoall, MPI_Alltoallv, store. Inline under mpirun; in a plain
// (threads) run from a child `mpirun -np P cairn-bench permutation --raw-mpi-only`.
//
// Verified after every run: every slot t of data_perm holds a value v with perm[data[v]] = t
// (recomputed from the generating bijections, so any lost, misplaced or foreign element
// fails), and each handler ran exactly N times over all ranks.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "handlers.hpp"
#include "random.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr std::string_view metric = "elements_per_s";
constexpr std::string_view better = "higher";
constexpr std::string_view baseline_name = "mpi-alltoallv";
constexpr std::uint64_t empty = ~std::uint64_t{0};

struct pair {
  std::uint64_t key;    // index into perm (permute) or into data_perm (put)
  std::uint64_t value;  // the element's payload: its index i in data
};

struct problem {
  std::uint64_t n, l, first;
  cairn::block_distribution dist;
  bijection data_of, perm_of;       // data[i] = data_of(i); perm[j] = perm_of(j)
  std::vector<std::uint64_t> perm;  // this rank's block of perm

  problem(std::uint64_t per_rank, int me, int ranks)
      : n(per_rank * static_cast<std::uint64_t>(ranks)),
        l(per_rank),
        first(per_rank * static_cast<std::uint64_t>(me)),
        dist(n, ranks),
        data_of(n, 0x2545F4914F6CDD1DULL),
        perm_of(n, 0x9FB21C651E98DF25ULL),
        perm(per_rank) {
    for (std::uint64_t j = 0; j < l; ++j) perm[j] = perm_of(first + j);
  }
};

// Throws unless data_perm[t] = i with perm[data[i]] = t for every local t, and the handlers
// ran N times each.
void verify(cairn::world& w, const problem& p, const std::vector<std::uint64_t>& out,
            std::uint64_t first_level, std::uint64_t second_level, const std::string& who) {
  std::uint64_t bad = 0;
  for (std::uint64_t k = 0; k < p.l; ++k) {
    const std::uint64_t v = out[k];
    bad += v == empty || v >= p.n || p.perm_of(p.data_of(v)) != p.first + k;
  }
  std::array<std::uint64_t, 3> mine{bad, first_level, second_level}, all{};
  w.allreduce(std::span(mine), std::span(all), cairn::plus{});
  if (all[0] != 0 || all[1] != p.n || all[2] != p.n)
    throw std::runtime_error("permutation (" + who + "): " + std::to_string(all[0]) +
                             " wrong slots of " + std::to_string(p.n) + "; first level ran " +
                             std::to_string(all[1]) + " times, second " + std::to_string(all[2]));
}

// Batched: the handlers take a message's items at once and prefetch their random reads
// (perm) and writes (data_perm) a few items ahead.
template <bool Batched, class Route>
double cairn_run(cairn::world& w, const problem& p, Route route, const std::string& who) {
  std::vector<std::uint64_t> out(p.l, empty);
  std::uint64_t puts = 0, permutes = 0;
  const auto dist = p.dist.of([](const pair& x) { return x.key; });
  const auto slot = [&](const pair& x) { return &out[dist.local_index(x)]; };
  const auto image = [&](const pair& x) { return &p.perm[dist.local_index(x)]; };
  double seconds = 0;
  {
    // `put` first: the permute handler sends on it (channels are created in the same order
    // on every rank).
    const auto store = [&](const pair& x) {
      *slot(x) = x.value;
      ++puts;
    };
    auto put = cairn::make_channel<pair>(w, dist, handler_of<pair, Batched>(slot, store), route,
                                         cairn::channel_options{.name = "permutation-put"});
    const auto look_up = [&](const pair& x) {
      ++permutes;
      put.send(pair{*image(x), x.value});
    };
    auto permute =
        cairn::make_channel<pair>(w, dist, handler_of<pair, Batched>(image, look_up), route,
                                  cairn::channel_options{.name = "permutation-permute"});
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t k = 0; k < p.l; ++k) {
      const std::uint64_t i = p.first + k;
      permute.send(pair{p.data_of(i), i});
    }
    w.quiesce();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  verify(w, p, out, permutes, puts, who);
  return slowest(w, seconds);
}

#if CAIRN_BENCH_HAVE_MPI
// One bulk exchange of pairs by owner: counts by MPI_Alltoall, pairs by MPI_Alltoallv.
void exchange(const problem& p, int ranks, const std::vector<pair>& items,
              std::vector<pair>& sorted, std::vector<pair>& in, std::vector<int>& sc,
              std::vector<int>& sd, std::vector<int>& rc, std::vector<int>& rd) {
  const auto nr = static_cast<std::size_t>(ranks);
  std::fill(sc.begin(), sc.end(), 0);
  for (const pair& x : items) sc[static_cast<std::size_t>(p.dist.owner(x.key))] += 2;
  sd[0] = 0;
  for (std::size_t r = 1; r < nr; ++r) sd[r] = sd[r - 1] + sc[r - 1];
  std::vector<int> at(sd);
  sorted.resize(items.size());
  for (const pair& x : items) {
    int& a = at[static_cast<std::size_t>(p.dist.owner(x.key))];
    sorted[static_cast<std::size_t>(a / 2)] = x;
    a += 2;
  }
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, MPI_COMM_WORLD);
  rd[0] = 0;
  for (std::size_t r = 1; r < nr; ++r) rd[r] = rd[r - 1] + rc[r - 1];
  in.resize(static_cast<std::size_t>((rd[nr - 1] + rc[nr - 1]) / 2));
  MPI_Alltoallv(sorted.data(), sc.data(), sd.data(), MPI_UINT64_T, in.data(), rc.data(), rd.data(),
                MPI_UINT64_T, MPI_COMM_WORLD);
}

double mpi_run(cairn::world& w, const problem& p) {
  const auto nr = static_cast<std::size_t>(w.size());
  std::vector<std::uint64_t> out(p.l, empty);
  std::vector<int> sc(nr), sd(nr), rc(nr), rd(nr);
  std::vector<pair> items, sorted, in;
  std::uint64_t permutes = 0, puts = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  items.resize(p.l);
  for (std::uint64_t k = 0; k < p.l; ++k) items[k] = pair{p.data_of(p.first + k), p.first + k};
  exchange(p, w.size(), items, sorted, in, sc, sd, rc, rd);
  items.resize(in.size());
  for (std::size_t k = 0; k < in.size(); ++k)
    items[k] = pair{p.perm[p.dist.local_index(in[k].key)], in[k].value};
  permutes = in.size();
  exchange(p, w.size(), items, sorted, in, sc, sd, rc, rd);
  for (const pair& x : in) out[p.dist.local_index(x.key)] = x.value;
  puts = in.size();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  verify(w, p, out, permutes, puts, "mpi-alltoallv");
  return slowest(w, seconds);
}
#endif

struct settings {
  std::uint64_t per_rank;
  int rounds;
};
settings settings_for(const options& o) {
  return settings{
      count_param(o, "per-rank", o.quick ? std::uint64_t{1} << 16 : std::uint64_t{1} << 20, 1,
                  1ULL << 34),
      static_cast<int>(count_param(o, "rounds", o.quick ? 1 : 3, 1, 1001))};
}

int run_raw_only(const invocation& inv) {
  raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
  const settings s = settings_for(inv.opts);
  body = [&](cairn::world& w, report* rep) {
    const problem p(s.per_rank, w.rank(), w.size());
    std::vector<double> runs;
    for (int r = 0; r < s.rounds; ++r) runs.push_back(mpi_run(w, p));
    if (rep)
      rep->add(raw_mpi_row(std::string(inv.name), w.size(), static_cast<std::size_t>(p.l * 8),
                           metric, better, static_cast<double>(p.n) / median(runs)));
  };
#endif
  return run_raw_mpi_only(inv, body);
}

int run_permutation(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return run_raw_only(inv);
  cairn::launch_options lo;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    lo.ranks = threads_run_ranks(inv);
  const baseline_figures spawned = prepare_baseline(inv, metric, lo.ranks.value_or(0));
  const settings s = settings_for(inv.opts);
  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    const problem p(s.per_rank, w.rank(), w.size());
    const bool inline_mpi = w.engine() == cairn::engine::mpi && inv.opts.baseline;
    std::vector<double> direct, batched, grid, base;
    for (int r = 0; r < s.rounds; ++r) {  // alternated, so drifting load hits all alike
      direct.push_back(cairn_run<false>(w, p, cairn::route::direct{}, "cairn direct"));
      batched.push_back(cairn_run<true>(w, p, cairn::route::direct{}, "cairn batched"));
      if (w.size() >= 4) grid.push_back(cairn_run<true>(w, p, cairn::route::grid{}, "cairn grid"));
#if CAIRN_BENCH_HAVE_MPI
      if (inline_mpi) base.push_back(mpi_run(w, p));
#endif
    }
    if (w.rank() != 0) return;
    const auto size = static_cast<std::size_t>(p.l * 8);
    const std::optional<double> base_rate = baseline_figure(
        inv, baseline_name, spawned, inline_mpi,
        base.empty() ? std::nullopt
                     : std::optional<double>(static_cast<double>(p.n) / median(base)),
        size);
    report rep(inv.opts.json);
    const std::string engine(cairn::to_string(w.engine()));
    auto emit = [&](const std::string& bench, const std::vector<double>& runs) {
      if (runs.empty()) return;
      rep.add(row{bench, engine, w.size(), size, std::string(metric), std::string(better),
                  static_cast<double>(p.n) / median(runs), std::string(baseline_name), base_rate});
    };
    emit("permutation", direct);
    emit("permutation-batched", batched);
    emit("permutation-grid", grid);
  });
}

const param_registrar params{
    "permutation",
    {{"per-rank", "elements per rank", "2^20, 2^16 with --quick"},
     {"rounds", "timed runs per figure (the median is reported)", "3, 1 with --quick"}}};

const registrar reg{{"permutation",
                     "AP 4.3 permutation, depth-two handlers, vs two MPI_Alltoallv rounds "
                     "(elements/s, all ranks)",
                     run_permutation}};

}  // namespace

}  // namespace cairn::bench
