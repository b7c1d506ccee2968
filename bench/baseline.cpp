#include "baseline.hpp"

#include "json.hpp"
#include "placement.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

#if CAIRN_BENCH_HAVE_MPI
namespace {

// Single quotes protect everything from /bin/sh except single quotes themselves.
std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::optional<std::string> find_in_path(const char* program) {
  const char* path = std::getenv("PATH");
  if (!path || !*path) return std::nullopt;
  std::string_view rest(path);
  while (true) {
    const auto colon = rest.find(':');
    // An empty PATH entry means the current directory.
    const std::string_view dir = rest.substr(0, colon);
    std::string candidate(dir.empty() ? std::string_view(".") : dir);
    candidate.append("/").append(program);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

// The launcher for the baseline child. The one found by CMake next to the MPI this program
// links is preferred: with two MPIs installed, the first `mpirun` in PATH may be the other
// one, whose processes would not find each other (or each run as a singleton).
std::optional<std::string> find_launcher() {
#ifdef CAIRN_BENCH_MPIEXEC
  if (::access(CAIRN_BENCH_MPIEXEC, X_OK) == 0) return std::string(CAIRN_BENCH_MPIEXEC);
#endif
  return find_in_path("mpirun");
}

std::optional<std::string> own_executable() {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return std::nullopt;
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

// Variables that MPI launchers set in the processes they start (as cairn's own detection).
bool inside_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
                        "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"}) {
    const char* value = std::getenv(v);
    if (value && *value) return true;
  }
  return false;
}

std::string describe_exit(int status) {
  if (status == -1) return "could not be waited for (" + std::string(std::strerror(errno)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended abnormally";
}

}  // namespace
#endif

std::optional<double> baseline_figures::at(std::size_t size) const {
  const auto it = by_size.find(size);
  if (it == by_size.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> json_field(std::string_view line, std::string_view key) {
  const auto doc = parse_json(line);
  if (!doc) return std::nullopt;
  const json_value* v = doc->get(key);
  if (!v) return std::nullopt;
  switch (v->type) {
    case json_value::kind::string: return v->string;
    case json_value::kind::number: {
      // Integers (sizes) exactly; other numbers with all the digits a double holds.
      std::array<char, 64> buf{};
      std::snprintf(buf.data(), buf.size(), "%.17g", v->number);
      return std::string(buf.data());
    }
    case json_value::kind::boolean: return std::string(v->boolean ? "true" : "false");
    default: return std::nullopt;
  }
}

std::string spawn_mpi_rows(int processes, const std::vector<std::string>& args,
                           std::vector<std::string>& rows, std::string_view env) {
#if !CAIRN_BENCH_HAVE_MPI
  (void)processes;
  (void)args;
  (void)rows;
  (void)env;
  return "this cairn-bench was built without MPI";
#else
  if (inside_mpi_launcher()) {
    // The threads engine was forced under an MPI launcher; nesting mpirun would not work.
    return "running inside an MPI launcher with the threads engine; not nesting mpirun";
  }
  const auto mpirun = find_launcher();
  if (!mpirun) {
#ifdef CAIRN_BENCH_MPIEXEC
    return "neither " + std::string(CAIRN_BENCH_MPIEXEC) + " nor an mpirun in PATH is executable";
#else
    return "mpirun not found in PATH";
#endif
  }
  const auto self = own_executable();
  if (!self) return "cannot read /proc/self/exe to re-run this program under mpirun";
  std::string cmd;
  if (!env.empty()) cmd += "env " + std::string(env) + " ";
  cmd += shell_quote(*mpirun) + " -np " + std::to_string(processes);
#ifdef OPEN_MPI
  // Open MPI refuses to start as root, and more ranks than cores, unless told otherwise; and
  // --oversubscribe turns its binding off, which costs the baseline up to 15 % here: bind
  // again when there are enough cores.
  cmd += " --oversubscribe --allow-run-as-root";
  if (processes <= static_cast<int>(std::thread::hardware_concurrency())) cmd += " --bind-to core";
#endif
  cmd += " " + shell_quote(*self);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " </dev/null";  // mpirun forwards stdin to rank 0; keep ours out of it

  std::fflush(nullptr);  // nothing buffered may be written twice by the child
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return "cannot start mpirun: " + std::string(std::strerror(errno));
  std::string line;
  std::array<char, 1024> chunk{};
  while (std::fgets(chunk.data(), static_cast<int>(chunk.size()), pipe)) {
    line += chunk.data();
    if (line.empty() || line.back() != '\n') continue;  // a longer line continues
    // Launchers may print their own text on stdout; only our rows start with '{'.
    if (line.starts_with("{")) rows.push_back(line);
    line.clear();
  }
  const int status = ::pclose(pipe);
  if (status != 0) return "`" + cmd + "` " + describe_exit(status);
  return "";
#endif
}

namespace {
// The subcommand, --quick, --sizes and the parameters of this command line, for a child.
std::vector<std::string> forwarded_args(const invocation& inv) {
  std::vector<std::string> args{std::string(inv.name)};
  if (inv.opts.quick) args.emplace_back("--quick");
  if (inv.opts.sizes_given)
    args.push_back("--sizes=" + std::to_string(inv.opts.min_size) + "-" +
                   std::to_string(inv.opts.max_size));
  for (const auto& [key, value] : inv.opts.params) args.push_back("--" + key + "=" + value);
  return args;
}
}  // namespace

std::string spawn_raw_mpi_rows(const invocation& inv, int processes,
                               std::vector<std::string>& rows) {
  std::vector<std::string> args = forwarded_args(inv);
  args.emplace_back("--raw-mpi-only");
  args.emplace_back("--json");
  return spawn_mpi_rows(processes, args, rows);
}

baseline_figures spawn_raw_mpi_baseline(const invocation& inv, std::string_view metric,
                                        int processes) {
  baseline_figures out;
  std::vector<std::string> rows;
  out.why_missing = spawn_raw_mpi_rows(inv, processes, rows);
  for (const auto& line : rows) {
    const auto r = parse_json(line);
    if (!r || r->string_at("bench") != inv.name || r->string_at("metric") != metric ||
        r->string_at("baseline") != mpi_raw_name)
      continue;
    const auto size = r->number_at("size");
    const auto value = r->number_at("baseline_value");
    if (size && value && *size >= 0) out.by_size[static_cast<std::size_t>(*size)] = *value;
  }
  if (out.why_missing.empty() && out.by_size.empty())
    out.why_missing = "the raw-MPI child printed no " + std::string(metric) + " rows";
  return out;
}

int threads_run_ranks(const invocation& inv) {
  int ranks = 0;
  const int rc =
      cairn::launch(inv.argc, inv.argv, cairn::launch_options{.engine = cairn::engine::threads},
                    [&](cairn::world& w) {
                      if (w.rank() == 0) ranks = w.size();
                    });
  if (rc != 0) throw std::runtime_error("cannot start a threads run to count its ranks");
  return ranks;
}

baseline_figures prepare_baseline(const invocation& inv, std::string_view metric, int processes) {
  baseline_figures spawned;
  const bool threads_run = cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads;
  // A threads run measures its baseline before cairn, so the two never compete for the cores.
  if (!inv.opts.baseline)
    spawned.why_missing = "skipped (--no-baseline)";
  else if (threads_run)
    spawned = spawn_raw_mpi_baseline(inv, metric, processes);
  if (!spawned.why_missing.empty() && !spawned.by_size.empty())
    note(std::string(inv.name) + ": " + spawned.why_missing + "; using the " +
         std::to_string(spawned.by_size.size()) + " " + std::string(mpi_raw_name) +
         " figure(s) it printed");
  return spawned;
}

int rounds_param(const options& o) {
  return static_cast<int>(count_param(o, "rounds", o.quick ? 1 : 3, 1, 1000));
}

std::string mpi_thread_level_name() {
  const auto level = cairn::mpi_thread_level_provided();
  return level ? cairn::to_string(*level) : "";
}

namespace {

// The figures of one size over the rounds of its measurement.
struct size_state {
  std::vector<double> mine, base;
  std::vector<double> probes;  // the placement probes of its measurement
  bool remeasured = false;
};

// max / min of the rounds (1 for fewer than two).
double spread(const std::vector<double>& v) {
  if (v.size() < 2) return 1;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (*lo <= 0) return *hi > 0 ? std::numeric_limits<double>::infinity() : 1;
  return *hi / *lo;
}

constexpr double unstable_spread = 1.5;

std::string size_list_arg(const std::vector<std::size_t>& sizes) {
  std::string arg = "--size-list=";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i) arg += ',';
    arg += std::to_string(sizes[i]);
  }
  return arg;
}

// `--raw-mpi-only` of a sized benchmark: the plain child. MPI_Init, the baseline's rounds, no
// cairn at all; rank 0 prints one JSON row per size.
int run_plain_child(const invocation& inv, const sized_spec& spec) {
#if !CAIRN_BENCH_HAVE_MPI
  (void)spec;
  note(std::string(inv.name) + " --raw-mpi-only: this cairn-bench was built without MPI");
  return 2;
#else
  if (!spec.raw) {
    note(std::string(inv.name) + " --raw-mpi-only: no raw MPI kernel");
    return 2;
  }
  plain_mpi mpi;
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < spec.min_ranks)
    throw std::runtime_error(std::string(inv.name) + " needs at least " +
                             std::to_string(spec.min_ranks) + " processes, this run has " +
                             std::to_string(n));
  std::map<std::size_t, std::vector<double> > figures;
  for (int round = 0; round < spec.rounds; ++round)
    for (const std::size_t size : spec.sizes) figures[size].push_back(spec.raw(size));
  if (me == 0) {
    report rep(true);  // the parent reads JSON lines
    const std::string level = mpi_thread_level_name();
    for (const std::size_t size : spec.sizes) {
      const auto& f = figures[size];
      row r = raw_mpi_row(std::string(inv.name), n, size, spec.metric, spec.better, median(f));
      r.baseline_min = *std::min_element(f.begin(), f.end());
      r.baseline_max = *std::max_element(f.begin(), f.end());
      r.set("baseline_rounds", std::to_string(f.size()));
      r.set("baseline_mode", json_text("plain-child"));
      r.set("baseline_thread_level", json_text(level));
      rep.add(std::move(r));
    }
  }
  return 0;
#endif
}

}  // namespace

#if CAIRN_BENCH_HAVE_MPI
plain_mpi::plain_mpi(std::optional<cairn::thread_level> need) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  if (!need || *need == cairn::thread_level::single) {
    MPI_Init(nullptr, nullptr);
  } else {
    constexpr int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                              MPI_THREAD_MULTIPLE};
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, levels[static_cast<int>(*need)], &provided);
  }
  owned_ = true;
}

plain_mpi::~plain_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Finalize();
}
#endif

int run_sized(const invocation& inv, const sized_spec& spec) {
  if (inv.opts.raw_mpi_only) return run_plain_child(inv, spec);
  const bool under_mpi = cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::mpi;
  bool rank0 = true;
#if CAIRN_BENCH_HAVE_MPI
  // Under mpirun, MPI is initialized here, plainly, before cairn: the baseline's rounds then run
  // as in a user's program, and cairn::launch keeps the level it finds.
  std::optional<plain_mpi> mpi;
  if (under_mpi) {
    mpi.emplace(cairn::mpi_thread_level_requested(spec.launch));
    int me = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    rank0 = me == 0;
    if (n < spec.min_ranks)
      throw std::runtime_error(std::string(inv.name) + " needs at least " +
                               std::to_string(spec.min_ranks) + " ranks, this run has " +
                               std::to_string(n) + " (use mpirun -np " +
                               std::to_string(spec.min_ranks) + ")");
  }
#endif
  const std::string mode = under_mpi ? "before-cairn" : "plain-child";
  std::string level = under_mpi ? mpi_thread_level_name() : "";
  std::string why_missing;
  if (!inv.opts.baseline)
    why_missing = "skipped (--no-baseline)";
  else if (!spec.raw)
    why_missing = "this cairn-bench was built without MPI";
  bool told = false;
  std::map<std::size_t, size_state> state;
  std::string engine_name;
  int ranks = 0;

  // The plain child's arguments: this command line for one round of `sizes`.
  auto child_args = [&](const std::vector<std::size_t>& sizes) {
    std::vector<std::string> args = forwarded_args(inv);
    std::erase_if(args, [](const std::string& a) { return a.starts_with("--rounds="); });
    args.emplace_back("--rounds=1");
    args.push_back(size_list_arg(sizes));
    args.emplace_back("--raw-mpi-only");
    args.emplace_back("--json");
    return args;
  };

  auto baseline_round = [&](const std::vector<std::size_t>& sizes) {
    if (!why_missing.empty()) return;
    if (under_mpi) {
      for (const std::size_t size : sizes) {
        const double v = spec.raw(size);
        if (rank0) state[size].base.push_back(v);
      }
      return;
    }
    std::vector<std::string> lines;
    const std::string why = spawn_mpi_rows(spec.processes, child_args(sizes), lines);
    std::size_t got = 0;
    for (const auto& line : lines) {
      const auto r = parse_json(line);
      if (!r || r->string_at("bench") != inv.name || r->string_at("metric") != spec.metric ||
          r->string_at("baseline") != mpi_raw_name)
        continue;
      const auto size = r->number_at("size");
      const auto value = r->number_at("baseline_value");
      if (!size || !value || *size < 0) continue;
      state[static_cast<std::size_t>(*size)].base.push_back(*value);
      if (const auto l = r->string_at("baseline_thread_level")) level = *l;
      ++got;
    }
    if (!why.empty() || got == 0) {
      why_missing = why.empty()
                        ? "the plain MPI child printed no " + std::string(spec.metric) + " rows"
                        : why;
      if (got) note(std::string(inv.name) + ": " + why_missing + "; using what it printed");
    }
  };

  auto cairn_round = [&](const std::vector<std::size_t>& sizes) {
    const int rc = cairn::launch(inv.argc, inv.argv, spec.launch, [&](cairn::world& w) {
      if (w.size() < spec.min_ranks)
        throw std::runtime_error(std::string(inv.name) + " needs at least " +
                                 std::to_string(spec.min_ranks) + " ranks, this run has " +
                                 std::to_string(w.size()));
      for (const std::size_t size : sizes) {
        const double v = spec.mine(w, size);
        if (w.rank() == 0) state[size].mine.push_back(v);
      }
      if (w.rank() == 0) {
        engine_name = cairn::to_string(w.engine());
        ranks = w.size();
      }
    });
    if (rc != 0)
      throw std::runtime_error("the cairn run failed (exit code " + std::to_string(rc) + ")");
  };

  // One measurement of `sizes`: rounds of baseline and cairn alternating, the placement probe
  // before each round and after the last.
  auto measure = [&](const std::vector<std::size_t>& sizes) {
    std::vector<double> probes;
    auto probe = [&] {
      if (const auto ns = placement_probe(under_mpi)) probes.push_back(*ns);
    };
    for (int round = 0; round < spec.rounds; ++round) {
      probe();
      baseline_round(sizes);
      cairn_round(sizes);
    }
    probe();
    for (const std::size_t size : sizes) state[size].probes = probes;
  };

  measure(spec.sizes);
  // Sizes whose rounds spread over more than 1.5x are measured again once; rank 0 decides for
  // every process.
  std::vector<char> again(spec.sizes.size(), 0);
  if (rank0)
    for (std::size_t i = 0; i < spec.sizes.size(); ++i) {
      const size_state& s = state[spec.sizes[i]];
      again[i] = spread(s.mine) > unstable_spread || spread(s.base) > unstable_spread;
    }
#if CAIRN_BENCH_HAVE_MPI
  if (under_mpi)
    MPI_Bcast(again.data(), static_cast<int>(again.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
#endif
  std::vector<std::size_t> unstable;
  for (std::size_t i = 0; i < spec.sizes.size(); ++i)
    if (again[i]) unstable.push_back(spec.sizes[i]);
  if (!unstable.empty()) {
    for (const std::size_t size : unstable) {
      state[size] = size_state{};
      state[size].remeasured = true;
    }
    measure(unstable);
  }
  if (!rank0) return 0;

  report rep(inv.opts.json);
  for (const std::size_t size : spec.sizes) {
    const size_state& s = state[size];
    std::optional<double> base;
    if (!s.base.empty()) base = median(s.base);
    if (!base && !told) {
      note(std::string(inv.name) + ": baseline " + std::string(mpi_raw_name) + " not measured" +
           (why_missing.empty() ? "" : ": " + why_missing) +
           " (first size without a figure: " + human_size(size) + ")");
      told = true;
    }
    row r{std::string(inv.name),
          engine_name,
          ranks,
          size,
          std::string(spec.metric),
          std::string(spec.better),
          median(s.mine),
          std::string(mpi_raw_name),
          base};
    if (!s.mine.empty()) {
      r.min = *std::min_element(s.mine.begin(), s.mine.end());
      r.max = *std::max_element(s.mine.begin(), s.mine.end());
    }
    if (!s.base.empty()) {
      r.baseline_min = *std::min_element(s.base.begin(), s.base.end());
      r.baseline_max = *std::max_element(s.base.begin(), s.base.end());
    }
    r.set("rounds", std::to_string(s.mine.size()));
    r.set("baseline_rounds", std::to_string(s.base.size()));
    r.set("baseline_mode", base ? json_text(mode) : "null");
    r.set("baseline_thread_level", base && !level.empty() ? json_text(level) : "null");
    placement_span where;
    if (!s.probes.empty()) {
      where.before = s.probes.front();
      where.after = s.probes.back();
      where.all = s.probes;
    }
    r.set("handoff_ns_before", json_text(where.before));
    r.set("handoff_ns_after", json_text(where.after));
    std::string all = "[";
    for (std::size_t i = 0; i < where.all.size(); ++i) {
      if (i) all += ',';
      all += json_text(std::optional<double>(where.all[i]));
    }
    r.set("handoff_ns", all + "]");
    r.set("placement_changed", json_text(where.changed()));
    r.set("unstable",
          json_text(spread(s.mine) > unstable_spread || spread(s.base) > unstable_spread));
    r.set("remeasured", json_text(s.remeasured));
    rep.add(std::move(r));
  }
  return 0;
}

#if CAIRN_BENCH_HAVE_MPI
double mpi_slowest(double x) {
  double worst = 0;
  MPI_Allreduce(&x, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
#endif

int run_raw_mpi_only(const invocation& inv, const raw_mpi_body& body) {
  if (!body) {
    note(std::string(inv.name) + " --raw-mpi-only: this cairn-bench was built without MPI");
    return 2;
  }
  return cairn::launch(inv.argc, inv.argv, cairn::launch_options{.engine = cairn::engine::mpi},
                       [&](cairn::world& w) {
                         std::optional<report> rep;
                         if (w.rank() == 0) rep.emplace(true);  // the parent reads JSON lines
                         body(w, rep ? &*rep : nullptr);
                       });
}

row raw_mpi_row(std::string bench, int ranks, std::size_t size, std::string_view metric,
                std::string_view better, double value) {
  return row{std::move(bench),
             "mpi",
             ranks,
             size,
             std::string(metric),
             std::string(better),
             std::nullopt,
             std::string(mpi_raw_name),
             value};
}

std::optional<double> baseline_figure(const invocation& inv, std::string_view name,
                                      const baseline_figures& spawned, bool inline_mpi,
                                      std::optional<double> inline_figure, std::size_t size) {
  if (inline_figure) return inline_figure;
  std::optional<double> figure;
  std::string why = spawned.why_missing;
  if (!inline_mpi)
    figure = spawned.at(size);
  else
    why = "this cairn-bench was built without MPI";
  if (!figure)
    note(std::string(inv.name) + ": baseline " + std::string(name) + " not measured" +
         (why.empty() ? "" : ": " + why));
  return figure;
}

}  // namespace cairn::bench
