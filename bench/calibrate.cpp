// `cairn-bench calibrate`: is the mpi-raw baseline honest on this machine? The raw-MPI
// pingpong and allreduce of 8 bytes between 2 processes, measured four ways in alternating
// rounds, each in a fresh `mpirun -np 2` child:
//
//   plain            MPI_Init, the kernels, nothing else: what a user's own MPI program sees;
//                    how pingpong/allreduce's threads-engine rows measure ("plain-child")
//   after-launch     MPI_Init, one cairn::launch that returns, then the kernels: how rounds
//                    after the first run under mpirun ("before-cairn")
//   inline           the kernels inside cairn::launch, cairn's world alive, MPI initialized by
//                    cairn: the old way of the MPI engine's rows (and of the other benchmarks)
//   inline-funneled  the same with MPI at MPI_THREAD_FUNNELED: before cairn asked for single
//
// The table shows each way's median round, its min and max, and its ratio to `plain`.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "json.hpp"
#include "kernels.hpp"
#include "placement.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr std::string_view modes[] = {"plain", "after-launch", "inline", "inline-funneled"};
constexpr std::size_t size = 8;

#if CAIRN_BENCH_HAVE_MPI
struct figure {
  std::string_view metric;
  double (*kernel)(std::size_t size, bool quick);
};
constexpr figure figures[] = {{"pingpong_latency_us", raw_mpi_pingpong_us},
                              {"allreduce_latency_us", raw_mpi_allreduce_us}};

// One child under mpirun: the figures measured the way `mode` says; rank 0 prints them.
int run_child(const invocation& inv, std::string_view mode) {
  std::vector<double> values(std::size(figures));
  std::string level;
  auto measure = [&] {
    for (std::size_t i = 0; i < std::size(figures); ++i)
      values[i] = figures[i].kernel(size, inv.opts.quick);
    level = mpi_thread_level_name();
  };
  cairn::launch_options lo;
  lo.engine = cairn::engine::mpi;
  bool own_mpi = false;
  if (mode == "plain" || mode == "after-launch") {
    MPI_Init(nullptr, nullptr);
    own_mpi = true;
    if (mode == "after-launch") {
      const int rc = cairn::launch(inv.argc, inv.argv, lo, [](cairn::world& w) {
        double x = 1, y = 0;
        w.allreduce(std::span(&x, 1), std::span(&y, 1), cairn::plus{});
      });
      if (rc != 0) return rc;
    }
    measure();
  } else if (mode == "inline" || mode == "inline-funneled") {
    if (mode == "inline-funneled") lo.mpi_thread_level = cairn::thread_level::funneled;
    const int rc = cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world&) { measure(); });
    if (rc != 0) return rc;
  } else {
    note("calibrate: unknown --mode=" + std::string(mode));
    return 2;
  }
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (me == 0) {
    report rep(true);
    for (std::size_t i = 0; i < std::size(figures); ++i) {
      row r("calibrate", "mpi", n, size, std::string(figures[i].metric), "lower", std::nullopt,
            std::string(mpi_raw_name), values[i]);
      r.set("baseline_mode", json_text(mode));
      r.set("baseline_thread_level", json_text(level));
      rep.add(std::move(r));
    }
  }
  if (own_mpi) MPI_Finalize();  // cairn finalizes at exit the MPI it initialized
  return 0;
}

std::string number(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), v >= 10 ? "%.2f" : "%.3f", v);
  return buf.data();
}
#endif

int run_calibrate(const invocation& inv) {
#if !CAIRN_BENCH_HAVE_MPI
  (void)inv;
  note("calibrate: this cairn-bench was built without MPI");
  return 2;
#else
  if (const auto it = inv.opts.params.find("mode"); it != inv.opts.params.end())
    return run_child(inv, it->second);
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::mpi) {
    note("calibrate: run it without mpirun; it starts its own 2-process runs");
    return 2;
  }
  const int rounds =
      static_cast<int>(count_param(inv.opts, "rounds", inv.opts.quick ? 1 : 3, 1, 100));
  // values[metric][mode] over the rounds; the thread level of each mode.
  std::map<std::string, std::map<std::string, std::vector<double> > > values;
  std::map<std::string, std::string> level;
  std::vector<double> probes;
  for (int round = 0; round < rounds; ++round) {
    if (const auto ns = handoff_ns()) probes.push_back(*ns);
    for (const std::string_view mode : modes) {
      std::vector<std::string> args{"calibrate", "--mode=" + std::string(mode), "--json"};
      if (inv.opts.quick) args.emplace_back("--quick");
      std::vector<std::string> lines;
      const std::string why = spawn_mpi_rows(2, args, lines);
      if (!why.empty()) note("calibrate (" + std::string(mode) + "): " + why);
      for (const auto& line : lines) {
        const auto r = parse_json(line);
        if (!r) continue;
        const auto metric = r->string_at("metric");
        const auto v = r->number_at("baseline_value");
        if (!metric || !v) continue;
        values[*metric][std::string(mode)].push_back(*v);
        if (const auto l = r->string_at("baseline_thread_level")) level[std::string(mode)] = *l;
      }
    }
  }
  if (const auto ns = handoff_ns()) probes.push_back(*ns);
  placement_span where;
  if (!probes.empty()) {
    where.before = probes.front();
    where.after = probes.back();
    where.all = probes;
  }

  std::optional<report> rep;
  if (inv.opts.json) rep.emplace(true);
  std::string table =
      "figure (8 B, 2 processes)  way              MPI level  median  min-max        vs plain\n";
  for (const auto& [metric, by_mode] : values) {
    std::optional<double> plain;
    if (const auto it = by_mode.find("plain"); it != by_mode.end()) plain = median(it->second);
    for (const std::string_view mode : modes) {
      const auto it = by_mode.find(std::string(mode));
      if (it == by_mode.end() || it->second.empty()) continue;
      const auto& v = it->second;
      const double med = median(v);
      const double lo = *std::min_element(v.begin(), v.end());
      const double hi = *std::max_element(v.begin(), v.end());
      const std::optional<double> vs =
          plain && *plain > 0 ? std::optional(med / *plain) : std::nullopt;
      if (rep) {
        row r("calibrate", "mpi", 2, size, metric, "lower", std::nullopt, std::string(mpi_raw_name),
              med);
        r.baseline_min = lo;
        r.baseline_max = hi;
        r.set("baseline_mode", json_text(mode));
        r.set("baseline_thread_level", json_text(level[std::string(mode)]));
        r.set("ratio_to_plain", json_text(vs));
        r.set("handoff_ns_before", json_text(where.before));
        r.set("handoff_ns_after", json_text(where.after));
        r.set("placement_changed", json_text(where.changed()));
        rep->add(std::move(r));
        continue;
      }
      std::array<char, 256> line{};
      std::snprintf(line.data(), line.size(), "%-26s %-16s %-10s %-7s %-14s %s\n", metric.c_str(),
                    std::string(mode).c_str(), level[std::string(mode)].c_str(),
                    number(med).c_str(), (number(lo) + "-" + number(hi)).c_str(),
                    vs ? number(*vs).c_str() : "n/a");
      table += line.data();
    }
  }
  if (!rep) {
    std::string probe_line = "placement probe (handoff ns, before each round and after):";
    for (const double p : probes) {
      probe_line += ' ';
      probe_line += std::to_string(static_cast<long>(p + 0.5));
    }
    if (where.changed()) probe_line += " (changed)";
    std::fputs((table + probe_line + "\n").c_str(), stdout);
  }
  return 0;
#endif
}

const registrar reg{{"calibrate",
                     "the mpi-raw baseline of pingpong and allreduce 8 B measured plainly, after a "
                     "cairn launch, and inline (the old way), side by side (us)",
                     run_calibrate}};
const param_registrar params{
    "calibrate",
    {{"rounds", "alternating rounds of the four ways", "3, 1 with --quick"},
     {"mode", "(internal) one child's way: plain, after-launch, inline, inline-funneled", "none"}}};

}  // namespace

}  // namespace cairn::bench
