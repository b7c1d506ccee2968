// `cairn-bench bfs`: AP 4.4, breadth-first search on an undirected Erdős–Rényi graph (edge
// factor 8) and a Graph500 Kronecker graph (R-MAT 0.57/0.19/0.19, edge factor 16, scrambled
// labels), 2^k vertices per rank, 1-D block distribution (graph.hpp). The figure is TEPS:
// edges of the searched component / slowest rank's seconds (higher is better), the median
// over the roots searched.
//
// cairn, two formulations on a channel of small items, direct route:
//   `bfs-<graph>`: level-synchronous — the handler of (vertex, parent) claims unvisited
//     vertices into the next frontier; one w.quiesce() per level. A batch handler: it takes a
//     message's items at once and prefetches the parent slots of the items ahead.
//   `bfs-<graph>-async`: AP's label-correcting search — the handler of (vertex, parent,
//     distance) keeps a better distance and sends its neighbours distance + 1; combine::keep_min
//     on (vertex, distance) drops items that cannot improve at the source and at every hop;
//     local items are queued (bounded recursion); a single w.quiesce(). A batch handler too,
//     prefetching the level slots of the items ahead.
//
// Baseline (`mpi-levelsync`, AP 4.4's MPI algorithm): level-synchronous, per level the
// frontier's edges bucketed by owner, MPI_Alltoall of counts, MPI_Alltoallv of (vertex,
// parent), claims applied, MPI_Allreduce of the next frontier's size. Inline under mpirun; in a
// plain (threads) run from a child `mpirun -np P cairn-bench bfs --raw-mpi-only`.
//
// Verified after every search as Graph500 validates (graph.hpp): root, parent/level
// consistency, parents are neighbours, every edge spans at most one level, the tree covers
// exactly the component.
//
// Rows: `size` is the edge list bytes per rank (edge factor · 2^k · 8), which tells the two
// graphs apart.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "graph.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

using graph::csr;
using graph::none;
using graph::tree;
using graph::vertex;

constexpr std::string_view metric = "TEPS";
constexpr std::string_view better = "higher";
constexpr std::string_view baseline_name = "mpi-levelsync";

struct visit {
  vertex v;       // the vertex reached
  vertex parent;  // from where
  vertex level;   // its level if it is new
};

struct label {
  vertex v, parent, dist;
};

// Level-synchronous BFS on a channel; TEPS of the slowest rank, validated.
double levelsync_run(cairn::world& w, const csr& g, vertex root) {
  tree t;
  t.reset(g);
  // Handlers also run while this rank waits in the allreduce that ends a level, so a rank
  // already on the next level may reach us early: items carry their level, and those of the
  // level after the next wait in `later`.
  std::vector<std::uint64_t> frontier, next, later;  // local indices
  vertex cur = 0;
  double seconds = 0;
  {
    const auto on_visit = [&](const visit& x) {
      const std::uint64_t i = g.index(x.v);
      if (t.parent[i] != none) return;
      t.parent[i] = x.parent;
      t.level[i] = x.level;
      (x.level == cur + 1 ? next : later).push_back(i);
    };
    // A batch handler: a message's visits at once, the parent of the visits ahead prefetched.
    auto ch = cairn::make_channel<visit>(
        w, g.dist.of([](const visit& x) { return x.v; }),
        [&](std::span<const visit> xs) {
          cairn::for_each_prefetched(
              xs, [&](const visit& x) { return &t.parent[g.index(x.v)]; }, on_visit);
        },
        cairn::channel_options{.name = "bfs-levelsync"});
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    if (g.owner(root) == w.rank()) {
      t.parent[g.index(root)] = root;
      t.level[g.index(root)] = 0;
      frontier.push_back(g.index(root));
    }
    while (true) {
      for (const std::uint64_t i : frontier) {
        const auto u = static_cast<vertex>(g.first + i);
        for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e)
          ch.send(visit{g.adj[e], u, cur + 1});
      }
      w.quiesce();
      std::uint64_t size = next.size(), all = 0;
      w.allreduce(std::span(&size, 1), std::span(&all, 1), cairn::plus{});
      frontier.swap(next);
      next.swap(later);
      later.clear();
      if (all == 0) break;
      ++cur;
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const std::uint64_t edges = graph::validate(w, g, root, t, "cairn level-synchronous");
  return static_cast<double>(edges) / slowest(w, seconds);
}

// AP's asynchronous label-correcting BFS with keep_min combining; TEPS, validated.
double async_run(cairn::world& w, const csr& g, vertex root) {
  tree t;
  t.reset(g);
  double seconds = 0;
  {
    std::function<void(const label&)> relay;  // the handler sends on its own channel
    const auto on_label = [&](const label& x) {
      const std::uint64_t i = g.index(x.v);
      if (x.dist >= t.level[i]) return;  // `none` is the largest distance
      t.level[i] = x.dist;
      t.parent[i] = x.parent;
      for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e)
        relay(label{g.adj[e], x.v, x.dist + 1});
    };
    auto ch = cairn::make_channel<label>(
        w, g.dist.of([](const label& x) { return x.v; }),
        [&](std::span<const label> xs) {
          cairn::for_each_prefetched(
              xs, [&](const label& x) { return &t.level[g.index(x.v)]; }, on_label);
        },
        cairn::route::direct{},
        cairn::combine::keep_min{[](const label& x) { return x.v; },
                                 [](const label& x) { return x.dist; }},
        cairn::channel_options{.queue_local = true, .name = "bfs-async"});
    relay = [&](const label& x) { ch.send(x); };
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    if (g.owner(root) == w.rank()) ch.send(label{root, root, 0});
    w.quiesce();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const std::uint64_t edges = graph::validate(w, g, root, t, "cairn asynchronous keep_min");
  return static_cast<double>(edges) / slowest(w, seconds);
}

#if CAIRN_BENCH_HAVE_MPI
// AP 4.4's MPI algorithm: level-synchronous, one MPI_Alltoallv of (vertex, parent) per level.
double mpi_run(cairn::world& w, const csr& g, vertex root) {
  const auto nr = static_cast<std::size_t>(w.size());
  tree t;
  t.reset(g);
  std::vector<std::uint64_t> frontier, next;
  std::vector<int> sc(nr), sd(nr), rc(nr), rd(nr), at(nr);
  std::vector<vertex> out, in;
  vertex cur = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  if (g.owner(root) == w.rank()) {
    t.parent[g.index(root)] = root;
    t.level[g.index(root)] = 0;
    frontier.push_back(g.index(root));
  }
  while (true) {
    std::fill(sc.begin(), sc.end(), 0);
    for (const std::uint64_t i : frontier)
      for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e)
        sc[static_cast<std::size_t>(g.owner(g.adj[e]))] += 2;
    sd[0] = 0;
    for (std::size_t r = 1; r < nr; ++r) sd[r] = sd[r - 1] + sc[r - 1];
    std::copy(sd.begin(), sd.end(), at.begin());
    out.resize(static_cast<std::size_t>(sd[nr - 1] + sc[nr - 1]));
    for (const std::uint64_t i : frontier) {
      const auto u = static_cast<vertex>(g.first + i);
      for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e) {
        int& a = at[static_cast<std::size_t>(g.owner(g.adj[e]))];
        out[static_cast<std::size_t>(a)] = g.adj[e];
        out[static_cast<std::size_t>(a) + 1] = u;
        a += 2;
      }
    }
    MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, MPI_COMM_WORLD);
    rd[0] = 0;
    for (std::size_t r = 1; r < nr; ++r) rd[r] = rd[r - 1] + rc[r - 1];
    in.resize(static_cast<std::size_t>(rd[nr - 1] + rc[nr - 1]));
    MPI_Alltoallv(out.data(), sc.data(), sd.data(), MPI_UINT32_T, in.data(), rc.data(), rd.data(),
                  MPI_UINT32_T, MPI_COMM_WORLD);
    for (std::size_t k = 0; k < in.size(); k += 2) {
      const std::uint64_t i = g.index(in[k]);
      if (t.parent[i] != none) continue;
      t.parent[i] = in[k + 1];
      t.level[i] = cur + 1;
      next.push_back(i);
    }
    std::uint64_t size = next.size(), all = 0;
    MPI_Allreduce(&size, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    frontier.swap(next);
    next.clear();
    if (all == 0) break;
    ++cur;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t edges = graph::validate(w, g, root, t, "mpi-levelsync");
  return static_cast<double>(edges) / slowest(w, seconds);
}
#endif

struct settings {
  int k;            // log2 vertices per rank
  int roots;        // searches per figure (median)
  int er_factor;    // edges per vertex of the Erdos-Renyi graph
  int kron_factor;  // edges per vertex of the Kronecker graph
  int factor(graph::kind kind) const {
    return kind == graph::kind::erdos_renyi ? er_factor : kron_factor;
  }
};
settings settings_for(const options& o) {
  settings s{o.quick ? 12 : 15, o.quick ? 1 : 3, 0, 0};
  s.k = static_cast<int>(count_param(o, "scale", static_cast<std::uint64_t>(s.k), 1, 30));
  s.roots = static_cast<int>(count_param(o, "roots", static_cast<std::uint64_t>(s.roots), 1, 64));
  s.er_factor = static_cast<int>(count_param(
      o, "edge-factor-er", static_cast<std::uint64_t>(graph::edge_factor(graph::kind::erdos_renyi)),
      1, 1024));
  s.kron_factor = static_cast<int>(
      count_param(o, "edge-factor-kronecker",
                  static_cast<std::uint64_t>(graph::edge_factor(graph::kind::kronecker)), 1, 1024));
  return s;
}

std::size_t row_size(const csr& g) {
  return static_cast<std::size_t>(g.factor) * g.dist.local_size(0) * 8;
}

constexpr graph::kind kinds[] = {graph::kind::erdos_renyi, graph::kind::kronecker};

int run_raw_only(const invocation& inv) {
  raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
  const settings s = settings_for(inv.opts);
  body = [&](cairn::world& w, report* rep) {
    for (const graph::kind kind : kinds) {
      const csr g = graph::build(w, kind, s.k, s.factor(kind));
      std::vector<double> runs;
      for (const vertex root : graph::roots(w, g, s.roots)) runs.push_back(mpi_run(w, g, root));
      if (rep)
        rep->add(raw_mpi_row(std::string(inv.name), w.size(), row_size(g), metric, better,
                             median(runs)));
    }
  };
#endif
  return run_raw_mpi_only(inv, body);
}

int run_bfs(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return run_raw_only(inv);
  cairn::launch_options lo;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    lo.ranks = threads_run_ranks(inv);
  const baseline_figures spawned = prepare_baseline(inv, metric, lo.ranks.value_or(0));
  const settings s = settings_for(inv.opts);
  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    const bool inline_mpi = w.engine() == cairn::engine::mpi && inv.opts.baseline;
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    bool told = false;
    for (const graph::kind kind : kinds) {
      const csr g = graph::build(w, kind, s.k, s.factor(kind));
      std::vector<double> sync, async, base;
      for (const vertex root : graph::roots(w, g, s.roots)) {  // alternated per root
        sync.push_back(levelsync_run(w, g, root));
        async.push_back(async_run(w, g, root));
#if CAIRN_BENCH_HAVE_MPI
        if (inline_mpi) base.push_back(mpi_run(w, g, root));
#endif
      }
      if (!rep) continue;
      std::optional<double> base_teps;
      std::string why = spawned.why_missing;
      if (!base.empty())
        base_teps = median(base);
      else if (!inline_mpi)
        base_teps = spawned.at(row_size(g));
      else
        why = "this cairn-bench was built without MPI";
      if (!base_teps && !told) {
        note(std::string(inv.name) + ": baseline " + std::string(baseline_name) + " not measured" +
             (why.empty() ? "" : ": " + why));
        told = true;
      }
      const std::string engine(cairn::to_string(w.engine()));
      const std::string bench = std::string("bfs-") + graph::name_of(kind);
      rep->add(row{bench, engine, w.size(), row_size(g), std::string(metric), std::string(better),
                   median(sync), std::string(baseline_name), base_teps});
      rep->add(row{bench + "-async", engine, w.size(), row_size(g), std::string(metric),
                   std::string(better), median(async), std::string(baseline_name), base_teps});
    }
  });
}

const param_registrar params{
    "bfs",
    {{"scale", "log2 of the vertices per rank", "15, 12 with --quick"},
     {"edge-factor-er", "edges per vertex of the Erdos-Renyi graph", "8"},
     {"edge-factor-kronecker", "edges per vertex of the Kronecker graph (Graph500: 16)", "16"},
     {"roots", "searches per figure (the median is reported)", "3, 1 with --quick"}}};

const registrar reg{{"bfs",
                     "AP 4.4 BFS on Erdos-Renyi and Kronecker graphs, level-synchronous and "
                     "asynchronous keep_min, Graph500 validation, vs MPI level-synchronous (TEPS)",
                     run_bfs}};

}  // namespace

}  // namespace cairn::bench
