// `cairn-bench cc`: the connected components of a Graph500 R-MAT graph (graph.hpp's Kronecker
// generator: A = 0.57, B = C = 0.19, scrambled labels) of n = 2^scale vertices and
// edgefactor · n undirected edges, self loops and repeated edges included. Rank r holds the
// edges [r · ⌈E/P⌉, (r + 1) · ⌈E/P⌉) of the generator's sequence as (u, v) pairs (generated
// untimed, as graph::build splits them). The result is, for every vertex that is an endpoint of
// an edge, the smallest vertex id of its component (its "root"). The figure is edges per second
// over all ranks (E / slowest rank's seconds; higher is better).
//
// cairn (`cc`): a fresh cairn::containers::disjoint_set<std::uint32_t> per sample (constructed
// untimed, its filter of repeated steps `--cache-slots` entries); timed from a barrier to after
// ds.compress(): ds.async_union(u, v) for every edge of the rank, then ds.compress() (collective:
// quiesce, then pointer jumping until every item points at its root, the smallest key of its set).
//
// Baseline (`mpi-alltoallv`, bulk-synchronous min-label propagation written by hand with plain
// MPI on MPI_COMM_WORLD). Vertices are block-distributed (owner v / ⌈n/P⌉); every owned vertex
// has a label, at first its own id. Timed from an MPI_Barrier to the last round's
// MPI_Allreduce, all of the following:
//   setup, once: the distinct endpoints of the rank's edges, sorted (std::sort + unique, so they
//     come grouped by owner), and every edge rewritten as two indices into that list
//     (std::lower_bound); MPI_Alltoall of the per-owner counts and MPI_Alltoallv of the vertex
//     ids tell every owner which of its labels each rank needs (and which of its vertices are
//     endpoints at all);
//   then rounds, each of
//   1. fetch: every owner sends the current labels of the requested vertices back in the
//      requests' order (one MPI_Alltoallv with the request counts reversed);
//   2. sweep: one pass over the rank's edges on its copy of the labels, in place: for (u, v)
//      the larger of label[u] and label[v] becomes the smaller (so within a pass a label can
//      travel several hops);
//   3. propose: every endpoint whose copy went down is sent as (vertex, label) to its owner
//      (MPI_Alltoall of counts, MPI_Alltoallv of uint32 pairs), which keeps the smaller label;
//   4. MPI_Allreduce of the labels lowered by proposals: none anywhere ends the loop.
//   Labels only ever go down and are always ids of the vertex's component, and the loop ends
//   only when every edge's two endpoints had the same label at the round's fetch, so each
//   component ends with its smallest id everywhere.
// Inline under mpirun; in a plain (threads) run from a child
// `mpirun -np P cairn-bench cc --raw-mpi-only`.
//
// Verified after every run. Each side reduces over its vertices (cairn: the items of
// ds.local() after compress; the baseline: the owned vertices that some rank's edges touch)
// the number of vertices, the number of roots (vertex == its root: the components), and a
// checksum, the sum of mix(vertex · 2^32 + root) over the vertices; every vertex must be held
// by its owner and have a root no larger than itself. Where a run has both sides in one process
// (MPI engine, baseline inline) the two sides' three figures must be equal. Otherwise (a threads
// run, whose baseline runs in a child, `--no-baseline`, and the child itself) every process
// computes the components by a sequential union-find of the whole edge list, regenerated
// (untimed, before the run): then each side's every vertex must have the reference's root, and
// the three figures must equal the reference's. cairn also: ds.num_sets() and ds.size() are the
// components and vertices found, and ds.find() gives both ends of the generator's first edge
// the same root. The row gives the last cairn run's calls over all ranks (calls_sent, unions
// and their walks' steps) and the repeated ones its filter dropped before sending
// (calls_dropped; channel_stats::sent and combined_source).
#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdint>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "cairn/containers/disjoint_set.hpp"
#include "graph.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

using graph::vertex;

constexpr std::string_view metric = "edges_per_s";
constexpr std::string_view better = "higher";
constexpr std::string_view baseline_name = "mpi-alltoallv";

// Text from pieces (strings and numbers appended one by one).
template <class... A>
std::string cat(const A&... pieces) {
  std::string s;
  auto add = [&s](const auto& x) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>)
      s += std::to_string(x);
    else
      s += std::string_view(x);
  };
  (add(pieces), ...);
  return s;
}

struct settings {
  int scale;                // n = 2^scale vertices
  std::uint64_t factor;     // edges per vertex
  int samples;              // timed runs per figure
  std::size_t cache_slots;  // the disjoint set's filter (container_options::cache_slots)
  [[nodiscard]] std::uint64_t vertices() const { return std::uint64_t{1} << scale; }
  [[nodiscard]] std::uint64_t edges() const { return factor * vertices(); }
};

// The checksum's term of a vertex and its root.
inline std::uint64_t token(vertex x, vertex root) noexcept {
  return graph::mix(std::uint64_t{x} << 32 | root);
}

// What each side's result is reduced to (over all ranks).
struct summary {
  std::uint64_t vertices = 0;    // endpoints of edges
  std::uint64_t components = 0;  // vertices that are their own root
  std::uint64_t checksum = 0;    // sum of token(vertex, root)
  friend bool operator==(const summary&, const summary&) = default;
};

std::string describe(const summary& s) {
  return cat(s.vertices, " vertices, ", s.components, " components, checksum ", s.checksum);
}

// The components by a sequential union-find of the whole edge list (every edge regenerated):
// each vertex's root, the smallest id of its component (graph::none for a vertex in no edge).
struct reference {
  std::vector<vertex> root;
  summary sum;

  explicit reference(const settings& s) : root(s.vertices(), graph::none) {
    std::vector<vertex> parent(s.vertices());
    std::iota(parent.begin(), parent.end(), vertex{0});
    auto find = [&parent](vertex x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];  // path halving
      return x;
    };
    for (std::uint64_t e = 0; e < s.edges(); ++e) {
      const auto [u, v] = graph::make_edge(graph::kind::kronecker, s.scale, e);
      root[u] = root[v] = 0;  // an endpoint
      const vertex ru = find(u), rv = find(v);
      if (ru < rv)
        parent[rv] = ru;  // the smaller id stays the root
      else if (rv < ru)
        parent[ru] = rv;
    }
    for (std::uint64_t x = 0; x < s.vertices(); ++x) {
      if (root[x] == graph::none) continue;
      const auto v = static_cast<vertex>(x);
      root[x] = find(v);
      ++sum.vertices;
      sum.components += root[x] == v;
      sum.checksum += token(v, root[x]);
    }
  }
};

// This rank's edges.
struct input {
  std::vector<vertex> edges;         // this rank's slice, u0, v0, u1, v1, ...
  std::uint64_t n = 0;               // vertices
  std::uint64_t total = 0;           // edges over all ranks
  std::array<vertex, 2> first_edge;  // the generator's first edge (rank 0's first)

  input(cairn::world& w, const settings& s)
      : n(s.vertices()),
        total(s.edges()),
        first_edge(graph::make_edge(graph::kind::kronecker, s.scale, 0)) {
    const auto nr = static_cast<std::uint64_t>(w.size());
    const std::uint64_t per = (total + nr - 1) / nr;
    const std::uint64_t lo = std::min(total, per * static_cast<std::uint64_t>(w.rank()));
    const std::uint64_t hi = std::min(total, lo + per);
    edges.resize(2 * (hi - lo));
    for (std::uint64_t e = lo; e < hi; ++e) {
      const auto [u, v] = graph::make_edge(graph::kind::kronecker, s.scale, e);
      edges[2 * (e - lo)] = u;
      edges[2 * (e - lo) + 1] = v;
    }
  }
};

// What a result is checked against: the reference when there is one, else the first side's
// summary of this run (set by whichever side verifies first).
struct expectation {
  const reference* ref = nullptr;
  std::optional<summary> seen;
  std::string seen_by;
};

// Reduces one side's (vertex, root) pairs on every rank and checks them (throws). `pairs`
// calls its argument with every (vertex, root) of this rank; `owns` says whether a vertex is
// this rank's.
template <class Pairs, class Owns>
summary verify(cairn::world& w, const input& in, expectation& ex, Pairs pairs, Owns owns,
               const std::string& who) {
  // vertices, components, checksum, bad (not a vertex, root larger), foreign, unlike reference
  std::array<std::uint64_t, 6> mine{}, all{};
  pairs([&](vertex x, vertex r) {
    ++mine[0];
    mine[1] += r == x;
    mine[2] += token(x, r);
    mine[3] += x >= in.n || r > x;
    mine[4] += !owns(x);
    if (ex.ref) mine[5] += x >= in.n || ex.ref->root[x] != r;
  });
  w.allreduce(std::span(mine), std::span(all), cairn::plus{});
  const summary got{all[0], all[1], all[2]};
  if (all[3] != 0 || all[4] != 0 || all[5] != 0)
    throw std::runtime_error(cat("cc (", who, "): ", all[3],
                                 " vertices out of range or with a root above them, ", all[4],
                                 " vertices at a rank not their owner, ", all[5],
                                 " vertices whose root is not the sequential union-find's"));
  if (ex.ref && got != ex.ref->sum)
    throw std::runtime_error(cat("cc (", who, "): found ", describe(got),
                                 "; the sequential union-find finds ", describe(ex.ref->sum)));
  if (!ex.ref && ex.seen && got != *ex.seen)
    throw std::runtime_error(cat("cc (", who, "): found ", describe(got), "; ", ex.seen_by,
                                 " found ", describe(*ex.seen)));
  if (!ex.ref && !ex.seen) {
    ex.seen = got;
    ex.seen_by = who;
  }
  return got;
}

using components = cairn::containers::disjoint_set<vertex>;

struct cairn_result {
  double seconds = 0;  // the slowest rank's
  int compress_rounds = 0;
  std::uint64_t components = 0;
  // Over all ranks: calls sent, and calls the disjoint set's filter dropped before sending.
  std::uint64_t calls = 0, dropped = 0;
};

cairn_result cairn_run(cairn::world& w, const input& in, expectation& ex, std::size_t slots) {
  components ds(w, cairn::containers::container_options{.cache_slots = slots});
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < in.edges.size(); i += 2) ds.async_union(in.edges[i], in.edges[i + 1]);
  const int rounds = ds.compress();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const summary got = verify(
      w, in, ex,
      [&](auto&& f) {
        for (const auto& [x, r] : ds.local()) f(x, r);
      },
      [&](vertex x) { return ds.owner(x) == w.rank(); }, "cairn");
  if (const std::uint64_t k = ds.num_sets(); k != got.components)
    throw std::runtime_error(
        cat("cc (cairn): num_sets() is ", k, ", the items have ", got.components, " roots"));
  if (const std::uint64_t k = ds.size(); k != got.vertices)
    throw std::runtime_error(
        cat("cc (cairn): size() is ", k, ", local() holds ", got.vertices, " items"));
  const vertex a = ds.find(in.first_edge[0]), b = ds.find(in.first_edge[1]);
  if (a != b || a > std::min(in.first_edge[0], in.first_edge[1]))
    throw std::runtime_error(cat("cc (cairn): find() of the first edge's ends ", in.first_edge[0],
                                 " and ", in.first_edge[1], " is ", a, " and ", b));
  const std::uint64_t calls = w.allreduce(ds.stats().sent, cairn::plus{});
  const std::uint64_t dropped = w.allreduce(ds.stats().combined_source, cairn::plus{});
  return {slowest(w, seconds), rounds, got.components, calls, dropped};
}

#if CAIRN_BENCH_HAVE_MPI
int as_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(
        cat("cc (mpi-alltoallv): ", n, " values in one exchange exceed MPI's int counts"));
  return static_cast<int>(n);
}

// Displacements from counts; returns the total.
std::size_t displacements(const std::vector<int>& counts, std::vector<int>& displs) {
  std::size_t total = 0;
  for (std::size_t d = 0; d < counts.size(); ++d) {
    displs[d] = as_count(total);
    total += static_cast<std::size_t>(counts[d]);
  }
  as_count(total);
  return total;
}

struct mpi_result {
  double seconds = 0;  // the slowest rank's
  int rounds = 0;      // label propagation rounds
};

mpi_result mpi_run(cairn::world& w, const input& in, expectation& ex) {
  const auto nr = static_cast<std::size_t>(w.size());
  const std::uint64_t chunk = (in.n + nr - 1) / nr;  // block distribution
  const std::uint64_t first = std::min(in.n, chunk * static_cast<std::uint64_t>(w.rank()));
  const std::uint64_t owned = std::min(in.n, first + chunk) - first;
  auto owner = [chunk](vertex x) { return static_cast<std::size_t>(x / chunk); };
  std::vector<int> sc(nr, 0), sd(nr), rc(nr), rd(nr), pc(nr), pd(nr), qc(nr), qd(nr);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  // Setup: the distinct endpoints (grouped by owner), the edges as indices into them.
  std::vector<vertex> need(in.edges);
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  std::vector<std::uint32_t> at(in.edges.size());
  for (std::size_t i = 0; i < in.edges.size(); ++i)
    at[i] = static_cast<std::uint32_t>(std::lower_bound(need.begin(), need.end(), in.edges[i]) -
                                       need.begin());
  for (const vertex x : need) ++sc[owner(x)];
  displacements(sc, sd);
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<vertex> req(displacements(rc, rd));  // what the other ranks need of this one
  MPI_Alltoallv(need.data(), sc.data(), sd.data(), MPI_UINT32_T, req.data(), rc.data(), rd.data(),
                MPI_UINT32_T, MPI_COMM_WORLD);
  std::vector<vertex> label(owned);
  std::iota(label.begin(), label.end(), static_cast<vertex>(first));
  std::vector<char> endpoint(owned, 0);
  for (const vertex x : req) endpoint[x - first] = 1;
  std::vector<vertex> reply(req.size()), fetched(need.size()), mine(need.size()), out, got;
  int rounds = 0;
  for (std::uint64_t changed = 1; changed != 0;) {
    ++rounds;
    // 1. Fetch the labels of the endpoints.
    for (std::size_t k = 0; k < req.size(); ++k) reply[k] = label[req[k] - first];
    MPI_Alltoallv(reply.data(), rc.data(), rd.data(), MPI_UINT32_T, fetched.data(), sc.data(),
                  sd.data(), MPI_UINT32_T, MPI_COMM_WORLD);
    // 2. One sweep over the edges.
    mine = fetched;
    for (std::size_t i = 0; i < at.size(); i += 2) {
      vertex& a = mine[at[i]];
      vertex& b = mine[at[i + 1]];
      if (a < b)
        b = a;
      else if (b < a)
        a = b;
    }
    // 3. Propose the lowered labels to their owners (need is grouped by owner).
    out.clear();
    std::fill(pc.begin(), pc.end(), 0);
    for (std::size_t i = 0; i < need.size(); ++i)
      if (mine[i] < fetched[i]) {
        out.push_back(need[i]);
        out.push_back(mine[i]);
        pc[owner(need[i])] += 2;
      }
    displacements(pc, pd);
    MPI_Alltoall(pc.data(), 1, MPI_INT, qc.data(), 1, MPI_INT, MPI_COMM_WORLD);
    got.resize(displacements(qc, qd));
    MPI_Alltoallv(out.data(), pc.data(), pd.data(), MPI_UINT32_T, got.data(), qc.data(), qd.data(),
                  MPI_UINT32_T, MPI_COMM_WORLD);
    std::uint64_t lowered = 0;
    for (std::size_t k = 0; k < got.size(); k += 2) {
      vertex& l = label[got[k] - first];
      if (got[k + 1] < l) {
        l = got[k + 1];
        ++lowered;
      }
    }
    // 4. Done when no label went down anywhere.
    MPI_Allreduce(&lowered, &changed, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  verify(
      w, in, ex,
      [&](auto&& f) {
        for (std::uint64_t i = 0; i < owned; ++i)
          if (endpoint[i]) f(static_cast<vertex>(first + i), label[i]);
      },
      [&](vertex x) { return x >= first && x - first < owned; }, std::string(baseline_name));
  return {slowest(w, seconds), rounds};
}
#endif

settings settings_for(const options& o) {
  settings s{};
  s.scale = static_cast<int>(count_param(o, "scale", o.quick ? 14 : 16, 1, 30));
  s.factor = count_param(o, "edgefactor", 16, 1, 1024);
  s.samples = static_cast<int>(count_param(o, "samples", o.quick ? 1 : 3, 1, 1001));
  s.cache_slots =
      count_param(o, "cache-slots", cairn::containers::container_options{}.cache_slots, 0, 1 << 26);
  return s;
}

int run_raw_only(const invocation& inv) {
  raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
  const settings s = settings_for(inv.opts);
  const reference ref(s);  // the child verifies its baseline against it
  body = [&](cairn::world& w, report* rep) {
    const input in(w, s);
    expectation ex{&ref, std::nullopt, ""};
    std::vector<double> runs;
    for (int r = 0; r < s.samples; ++r) runs.push_back(mpi_run(w, in, ex).seconds);
    if (rep)
      rep->add(raw_mpi_row(std::string(inv.name), w.size(), static_cast<std::size_t>(in.n), metric,
                           better, static_cast<double>(in.total) / median(runs)));
  };
#endif
  return run_raw_mpi_only(inv, body);
}

int run_cc(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return run_raw_only(inv);
  cairn::launch_options lo;
  const cairn::engine engine = cairn::detect_engine(inv.argc, inv.argv);
  if (engine == cairn::engine::threads) lo.ranks = threads_run_ranks(inv);
  const settings s = settings_for(inv.opts);  // a wrong parameter fails before a child is spawned
  const baseline_figures spawned = prepare_baseline(inv, metric, lo.ranks.value_or(0));
  // Without the baseline in this process, cairn is checked against a sequential union-find
  // (one per process, shared by the ranks of a threads run).
  std::optional<reference> ref;
  if (engine != cairn::engine::mpi || !inv.opts.baseline || !CAIRN_BENCH_HAVE_MPI) ref.emplace(s);
  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    const input in(w, s);
    const bool inline_mpi = w.engine() == cairn::engine::mpi && inv.opts.baseline;
    expectation ex{ref ? &*ref : nullptr, std::nullopt, ""};
    std::vector<double> mine, base;
    cairn_result last;
    int label_rounds = 0;
    for (int r = 0; r < s.samples; ++r) {  // alternated, so drifting load hits both alike
      last = cairn_run(w, in, ex, s.cache_slots);
      mine.push_back(last.seconds);
#if CAIRN_BENCH_HAVE_MPI
      if (inline_mpi) {
        const mpi_result m = mpi_run(w, in, ex);
        base.push_back(m.seconds);
        label_rounds = m.rounds;
      }
#endif
    }
    if (w.rank() != 0) return;
    const auto size = static_cast<std::size_t>(in.n);
    const auto total = static_cast<double>(in.total);
    const std::optional<double> base_rate = baseline_figure(
        inv, baseline_name, spawned, inline_mpi,
        base.empty() ? std::nullopt : std::optional<double>(total / median(base)), size);
    report rep(inv.opts.json);
    row r{"cc",
          std::string(cairn::to_string(w.engine())),
          w.size(),
          size,
          std::string(metric),
          std::string(better),
          total / median(mine),
          std::string(baseline_name),
          base_rate};
    r.size_unit = "vertices";
    r.set("components", std::to_string(last.components));
    r.set("compress_rounds", std::to_string(last.compress_rounds));
    r.set("cache_slots", std::to_string(s.cache_slots));
    r.set("calls_sent", std::to_string(last.calls));
    r.set("calls_dropped", std::to_string(last.dropped));
    if (label_rounds > 0) r.set("label_rounds", std::to_string(label_rounds));
    rep.add(std::move(r));
  });
}

const param_registrar params{
    "cc",
    {{"scale", "log2 of the vertices n of the R-MAT graph (the rows' size is n)",
      "16, 14 with --quick"},
     {"edgefactor", "edges per vertex (Graph500: 16)", "16"},
     {"samples", "timed runs per figure (the median is reported)", "3, 1 with --quick"},
     {"cache-slots",
      "entries of the disjoint set's filter of repeated steps (container_options::cache_slots; "
      "0: none)",
      "262144 (container_options' default)"}}};

const registrar reg{{"cc",
                     "connected components of an R-MAT graph, containers::disjoint_set vs "
                     "hand-written MPI_Alltoallv min-label propagation (edges/s, all ranks)",
                     run_cc}};

}  // namespace

}  // namespace cairn::bench
