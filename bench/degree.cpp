// `cairn-bench degree`: the degree of every vertex of a Graph500 R-MAT graph (graph.hpp's
// Kronecker generator: A = 0.57, B = C = 0.19, scrambled labels) of n = 2^scale vertices and
// edgefactor · n edges, self loops and repeated edges included. Rank r holds the edges
// [r · ⌈E/P⌉, (r + 1) · ⌈E/P⌉) of the generator's sequence as (u, v) pairs (generated untimed,
// as graph::build splits them). The degree of a vertex is the number of edge endpoints that are
// that vertex (a self loop counts twice). The figure is edges processed per second over all
// ranks (E / slowest rank's seconds; higher is better).
//
// cairn (`degree`): a fresh cairn::containers::map<std::uint32_t, std::uint64_t> per sample
// (constructed untimed); timed from a barrier to after w.quiesce(): for every edge of the rank
// m.async_reduce(u, 1, plus) and m.async_reduce(v, 1, plus), then w.quiesce(), after which
// every degree is in place at the vertex's owner.
//
// Baseline (`mpi-alltoallv`, the program a user writes by hand): the owner of a vertex is a
// multiply-shift hash of its id into [0, P); every endpoint of the rank's edges is bucketed by
// owner (a counting pass, then a filling pass), MPI_Alltoall of the counts, MPI_Alltoallv of the
// vertex ids (uint32), and the received ids are counted into a local
// std::unordered_map<std::uint32_t, std::uint64_t>. The edges are sent in `rounds` slices (by
// default as many as keep a round at about 64 MiB of ids per rank). Timed from an MPI_Barrier
// to the last count. Inline under mpirun; in a plain (threads) run from a child
// `mpirun -np P cairn-bench degree --raw-mpi-only`.
//
// Verified after every run, both sides, against figures taken from the input itself (untimed:
// each rank scans its slice, then one allreduce): every key a rank holds is a vertex (< n) with
// a non-zero degree, owned by that rank; the degrees over all ranks sum to 2 · E; the keys over
// all ranks number as many as the distinct vertices of the edge lists (a bitmap of n bits,
// or-reduced); the degrees of 8 chosen vertices (0, n − 1, both ends of the generator's first
// edge, four pseudo-random ones) equal the number of times they occur in all ranks' slices. So
// both sides find the same number of distinct vertices, whichever engine. cairn also:
// m.size() is that number and m.value_of() of the 8 vertices is right (nullopt for degree 0).
//
// `cairn-bench distinct` runs the same edges into a set of the distinct endpoints instead:
// cairn::containers::set<std::uint32_t> async_insert(u) and async_insert(v) (an insert the rank
// sent already in the phase is dropped at the source), against the same exchange counted into a
// std::unordered_set<std::uint32_t>. Verified alike: every key a vertex owned by its rank, as
// many keys as distinct vertices, each probed vertex present exactly where it occurs; cairn also
// size() and the collective contains() of the probed vertices.
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "cairn/containers/map.hpp"
#include "cairn/containers/set.hpp"
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
constexpr double round_bytes = 64.0 * 1024 * 1024;  // the baseline's default bytes per round
constexpr std::size_t checked = 8;                  // vertices whose degree is checked

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
  int rounds;               // the baseline's exchange rounds
  std::size_t cache_slots;  // the map's combining cache (container_options::cache_slots)
  [[nodiscard]] std::uint64_t vertices() const { return std::uint64_t{1} << scale; }
  [[nodiscard]] std::uint64_t edges() const { return factor * vertices(); }
};

// This rank's edges and what the verification needs to know of all ranks' edges.
struct input {
  std::vector<vertex> edges;                       // this rank's slice, u0, v0, u1, v1, ...
  std::uint64_t n = 0;                             // vertices
  std::uint64_t total = 0;                         // edges over all ranks
  std::uint64_t distinct = 0;                      // vertices that are an endpoint of an edge
  std::array<vertex, checked> probe{};             // the vertices whose degree is checked
  std::array<std::uint64_t, checked> probe_deg{};  // their degrees over all ranks

  input(cairn::world& w, const settings& s) : n(s.vertices()), total(s.edges()) {
    const auto nr = static_cast<std::uint64_t>(w.size());
    const std::uint64_t per = (total + nr - 1) / nr;
    const std::uint64_t lo = std::min(total, per * static_cast<std::uint64_t>(w.rank()));
    const std::uint64_t hi = std::min(total, lo + per);
    edges.resize(2 * (hi - lo));
    std::vector<std::uint64_t> seen((n + 63) / 64, 0);
    for (std::uint64_t e = lo; e < hi; ++e) {
      const auto [u, v] = graph::make_edge(graph::kind::kronecker, s.scale, e);
      edges[2 * (e - lo)] = u;
      edges[2 * (e - lo) + 1] = v;
      seen[u / 64] |= std::uint64_t{1} << (u % 64);
      seen[v / 64] |= std::uint64_t{1} << (v % 64);
    }
    w.allreduce(seen, cairn::bit_or{});
    for (const std::uint64_t word : seen)
      distinct += static_cast<std::uint64_t>(std::popcount(word));
    const auto first = graph::make_edge(graph::kind::kronecker, s.scale, 0);  // rank 0's first
    probe = {0, static_cast<vertex>(n - 1), first[0], first[1]};
    for (std::size_t j = 4; j < checked; ++j)
      probe[j] = static_cast<vertex>(graph::mix(0xDE6EE + j) & (n - 1));
    for (const vertex x : edges)
      for (std::size_t j = 0; j < checked; ++j) probe_deg[j] += x == probe[j];
    w.allreduce(probe_deg, cairn::plus{});
  }
};

// Throws unless the keys of `local` (a map to degrees, or a set of vertices: `counts`) on every
// rank are vertices (with a non-zero degree) owned by their rank (`owns`), as many as the distinct
// vertices of the input, the degrees summing to 2 · E, and the probed vertices have their degrees
// (are present where they occur).
template <bool counts, class Local, class Owns>
void verify_local(cairn::world& w, const input& in, const Local& local, Owns owns,
                  const std::string& who) {
  const char* task = counts ? "degree" : "distinct";
  // bad keys, foreign keys, degree sum, keys, then the probed vertices' degrees
  std::array<std::uint64_t, 4 + checked> mine{}, all{};
  for (const auto& item : local) {
    if constexpr (counts) {
      const auto& [key, deg] = item;
      mine[0] += key >= in.n || deg == 0;
      mine[1] += !owns(key);
      mine[2] += deg;
    } else {
      mine[0] += item >= in.n;
      mine[1] += !owns(item);
    }
  }
  mine[3] = local.size();
  for (std::size_t j = 0; j < checked; ++j)
    if (const auto it = local.find(in.probe[j]); it != local.end()) {
      if constexpr (counts)
        mine[4 + j] = it->second;
      else
        mine[4 + j] = 1;
    }
  w.allreduce(std::span(mine), std::span(all), cairn::plus{});
  std::string problem;
  if (all[0] != 0 || all[1] != 0 || (counts && all[2] != 2 * in.total) || all[3] != in.distinct)
    problem = cat(all[0], counts ? " keys not a vertex or of degree 0, " : " keys not a vertex, ",
                  all[1], " keys at a rank not their owner; ",
                  counts ? cat("degrees sum to ", all[2], " (expected ", 2 * in.total, "), ") : "",
                  all[3], " distinct vertices (expected ", in.distinct, ")");
  for (std::size_t j = 0; j < checked && problem.empty(); ++j) {
    const std::uint64_t want = counts ? in.probe_deg[j] : in.probe_deg[j] != 0;
    if (all[4 + j] != want)
      problem = cat("vertex ", in.probe[j], " has ", counts ? "degree " : "presence ", all[4 + j],
                    ", it occurs ", in.probe_deg[j], " times in the edge lists");
  }
  if (!problem.empty()) throw std::runtime_error(cat(task, " (", who, "): ", problem));
}

using degree_map = cairn::containers::map<vertex, std::uint64_t>;

constexpr auto add = [](std::uint64_t a, std::uint64_t b) { return a + b; };

// The collective queries of `m` against the input: size and value_of.
void verify_queries(degree_map& m, const input& in) {
  if (const std::uint64_t k = m.size(); k != in.distinct)
    throw std::runtime_error(cat("degree (cairn): size() is ", k, ", the edges have ", in.distinct,
                                 " distinct vertices"));
  for (std::size_t j = 0; j < checked; ++j) {
    const std::optional<std::uint64_t> d = m.value_of(in.probe[j]);
    const std::uint64_t want = in.probe_deg[j];
    if (want == 0 ? d.has_value() : d != want)
      throw std::runtime_error(cat("degree (cairn): value_of(", in.probe[j], ") is ",
                                   d ? std::to_string(*d) : std::string("nullopt"), ", expected ",
                                   want == 0 ? std::string("nullopt") : std::to_string(want)));
  }
}

using distinct_set = cairn::containers::set<vertex>;

// The collective queries of `d` against the input: size and contains.
void verify_queries(distinct_set& d, const input& in) {
  if (const std::uint64_t k = d.size(); k != in.distinct)
    throw std::runtime_error(cat("distinct (cairn): size() is ", k, ", the edges have ",
                                 in.distinct, " distinct vertices"));
  for (std::size_t j = 0; j < checked; ++j)
    if (d.contains(in.probe[j]) != (in.probe_deg[j] != 0))
      throw std::runtime_error(cat("distinct (cairn): contains(", in.probe[j], ") is ",
                                   !in.probe_deg[j], ", the vertex occurs ", in.probe_deg[j],
                                   " times in the edge lists"));
}

// One timed run of cairn's container `C` (degree_map or distinct_set), verified.
template <class C>
double cairn_run(cairn::world& w, const input& in, std::size_t cache_slots) {
  cairn::containers::container_options opts;
  opts.cache_slots = cache_slots;
  C m(w, opts);
  constexpr bool counts = std::is_same_v<C, degree_map>;
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < in.edges.size(); i += 2) {
    if constexpr (counts) {
      m.async_reduce(in.edges[i], std::uint64_t{1}, add);
      m.async_reduce(in.edges[i + 1], std::uint64_t{1}, add);
    } else {
      m.async_insert(in.edges[i]);
      m.async_insert(in.edges[i + 1]);
    }
  }
  w.quiesce();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  verify_local<counts>(
      w, in, m.local(), [&](vertex x) { return m.owner(x) == w.rank(); }, "cairn");
  verify_queries(m, in);
  return slowest(w, seconds);
}

#if CAIRN_BENCH_HAVE_MPI
// The baseline's owner of a vertex: a multiply-shift of its id into [0, ranks).
inline int owner_of(vertex x, std::uint64_t ranks) noexcept {
  __extension__ typedef unsigned __int128 u128;
  const std::uint64_t h = std::uint64_t{x} * 0x9E3779B97F4A7C15ULL;
  return static_cast<int>((static_cast<u128>(h) * ranks) >> 64);
}

int as_count(std::size_t ids) {
  if (ids > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(cat("degree/distinct (mpi-alltoallv): ", ids,
                                 " vertex ids in one round exceed MPI's int counts; use more "
                                 "--rounds"));
  return static_cast<int>(ids);
}

// One timed run of the baseline: degrees counted into an unordered_map (`counts`), or the
// vertices kept in an unordered_set.
template <bool counts>
double mpi_run(cairn::world& w, const input& in, int rounds) {
  const std::uint64_t ranks = static_cast<std::uint64_t>(w.size());
  const auto nr = static_cast<std::size_t>(ranks);
  const std::size_t n = in.edges.size() / 2;  // this rank's edges
  std::vector<int> sc(nr), sd(nr), rc(nr), rd(nr), at(nr);
  std::vector<vertex> sendbuf, recvbuf;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  std::conditional_t<counts, std::unordered_map<vertex, std::uint64_t>, std::unordered_set<vertex>>
      local;
  for (int r = 0; r < rounds; ++r) {
    const std::size_t lo = 2 * (n * static_cast<std::size_t>(r) / static_cast<std::size_t>(rounds));
    const std::size_t hi =
        2 * (n * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(rounds));
    // Bucket the endpoints by owner: counts, then every id at its owner's offset.
    std::vector<std::size_t> ids(nr, 0);
    for (std::size_t i = lo; i < hi; ++i)
      ++ids[static_cast<std::size_t>(owner_of(in.edges[i], ranks))];
    std::size_t total = 0;
    for (std::size_t d = 0; d < nr; ++d) {
      sc[d] = as_count(ids[d]);
      sd[d] = as_count(total);
      total += ids[d];
    }
    sendbuf.resize(total);
    at = sd;
    for (std::size_t i = lo; i < hi; ++i) {
      const vertex x = in.edges[i];
      sendbuf[static_cast<std::size_t>(at[static_cast<std::size_t>(owner_of(x, ranks))]++)] = x;
    }
    // Exchange: counts, then the ids.
    MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::size_t received = 0;
    for (std::size_t d = 0; d < nr; ++d) {
      rd[d] = as_count(received);
      received += static_cast<std::size_t>(rc[d]);
    }
    as_count(received);
    recvbuf.resize(received);
    MPI_Alltoallv(sendbuf.data(), sc.data(), sd.data(), MPI_UINT32_T, recvbuf.data(), rc.data(),
                  rd.data(), MPI_UINT32_T, MPI_COMM_WORLD);
    // Count, or keep.
    for (const vertex x : recvbuf) {
      if constexpr (counts)
        ++local[x];
      else
        local.insert(x);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  verify_local<counts>(
      w, in, local, [&](vertex x) { return owner_of(x, ranks) == w.rank(); },
      std::string(baseline_name));
  return slowest(w, seconds);
}
#endif

settings settings_for(const options& o) {
  settings s{};
  s.scale = static_cast<int>(count_param(o, "scale", o.quick ? 16 : 18, 1, 30));
  s.factor = count_param(o, "edgefactor", 16, 1, 1024);
  s.samples = static_cast<int>(count_param(o, "samples", o.quick ? 1 : 3, 1, 1001));
  s.cache_slots = static_cast<std::size_t>(count_param(
      o, "cache-slots", cairn::containers::container_options{}.cache_slots, 0, 1 << 24));
  return s;
}

// The baseline's rounds: `--rounds`, else as many as keep a round at about 64 MiB of vertex ids
// per rank (the largest rank's share of the edges).
int rounds_for(const options& o, const settings& s, int ranks) {
  const auto nr = static_cast<std::uint64_t>(std::max(ranks, 1));
  const double bytes = static_cast<double>((s.edges() + nr - 1) / nr) * 2 * sizeof(vertex);
  const auto def = static_cast<std::uint64_t>(std::max(1.0, std::ceil(bytes / round_bytes)));
  return static_cast<int>(count_param(o, "rounds", def, 1, 1ULL << 20));
}

int run_raw_only(const invocation& inv) {
  raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
  settings s = settings_for(inv.opts);
  body = [&](cairn::world& w, report* rep) {
    s.rounds = rounds_for(inv.opts, s, w.size());
    const input in(w, s);
    std::vector<double> runs;
    const bool counts = inv.name == "degree";
    for (int r = 0; r < s.samples; ++r)
      runs.push_back(counts ? mpi_run<true>(w, in, s.rounds) : mpi_run<false>(w, in, s.rounds));
    if (rep)
      rep->add(raw_mpi_row(std::string(inv.name), w.size(), static_cast<std::size_t>(in.n), metric,
                           better, static_cast<double>(in.total) / median(runs)));
  };
#endif
  return run_raw_mpi_only(inv, body);
}

// `degree` and `distinct` (inv.name).
int run_degree(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return run_raw_only(inv);
  cairn::launch_options lo;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    lo.ranks = threads_run_ranks(inv);
  settings s = settings_for(inv.opts);  // a wrong parameter fails before a child is spawned
  if (lo.ranks) s.rounds = rounds_for(inv.opts, s, *lo.ranks);
  const baseline_figures spawned = prepare_baseline(inv, metric, lo.ranks.value_or(0));
  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    const input in(w, s);
    const bool inline_mpi = w.engine() == cairn::engine::mpi && inv.opts.baseline;
    // One rank per process under mpirun: its own rounds (a threads run has them already).
    [[maybe_unused]] const int rounds = lo.ranks ? s.rounds : rounds_for(inv.opts, s, w.size());
    const bool counts = inv.name == "degree";
    std::vector<double> mine, base;
    for (int r = 0; r < s.samples; ++r) {  // alternated, so drifting load hits both alike
      mine.push_back(counts ? cairn_run<degree_map>(w, in, s.cache_slots)
                            : cairn_run<distinct_set>(w, in, s.cache_slots));
#if CAIRN_BENCH_HAVE_MPI
      if (inline_mpi)
        base.push_back(counts ? mpi_run<true>(w, in, rounds) : mpi_run<false>(w, in, rounds));
#endif
    }
    if (w.rank() != 0) return;
    const auto size = static_cast<std::size_t>(in.n);
    const auto total = static_cast<double>(in.total);
    const std::optional<double> base_rate = baseline_figure(
        inv, baseline_name, spawned, inline_mpi,
        base.empty() ? std::nullopt : std::optional<double>(total / median(base)), size);
    report rep(inv.opts.json);
    row r{std::string(inv.name),
          std::string(cairn::to_string(w.engine())),
          w.size(),
          size,
          std::string(metric),
          std::string(better),
          total / median(mine),
          std::string(baseline_name),
          base_rate};
    r.size_unit = "vertices";
    r.set("distinct_vertices", std::to_string(in.distinct));
    rep.add(std::move(r));
  });
}

const std::vector<param_spec> degree_params{
    {"scale", "log2 of the vertices n of the R-MAT graph (the rows' size is n)",
     "18, 16 with --quick"},
    {"edgefactor", "edges per vertex (Graph500: 16)", "16"},
    {"samples", "timed runs per figure (the median is reported)", "3, 1 with --quick"},
    {"rounds", "the baseline's MPI_Alltoallv rounds", "about 64 MiB per rank per round"},
    {"cache-slots", "slots of the container's combining cache (0: none)",
     "the container's default"}};
const param_registrar params{"degree", degree_params};
const param_registrar distinct_params{"distinct", degree_params};

const registrar reg{{"degree",
                     "vertex degrees of an R-MAT graph, containers::map async_reduce vs "
                     "hand-written MPI_Alltoallv (edges/s, all ranks)",
                     run_degree}};
const registrar distinct_reg{{"distinct",
                              "distinct endpoints of an R-MAT graph's edges, containers::set "
                              "async_insert vs hand-written MPI_Alltoallv (edges/s, all ranks)",
                              run_degree}};

}  // namespace

}  // namespace cairn::bench
