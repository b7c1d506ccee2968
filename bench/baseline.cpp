#include "baseline.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  std::string needle(1, '"');
  needle.append(key).append("\":");
  const auto at = line.find(needle);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view v = line.substr(at + needle.size());
  if (v.starts_with("\"")) {
    v.remove_prefix(1);
    const auto end = v.find('"');
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(v.substr(0, end));
  }
  const auto end = v.find_first_of(",}");
  const std::string_view text = v.substr(0, end);
  if (text.empty() || text == "null") return std::nullopt;
  return std::string(text);
}

std::string spawn_raw_mpi_rows(const invocation& inv, int processes,
                               std::vector<std::string>& rows) {
#if !CAIRN_BENCH_HAVE_MPI
  (void)inv;
  (void)processes;
  (void)rows;
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
  std::string cmd = shell_quote(*mpirun) + " -np " + std::to_string(processes);
#ifdef OPEN_MPI
  // Open MPI refuses to start as root, and more ranks than cores, unless told otherwise; and
  // --oversubscribe turns its binding off, which costs the baseline up to 15 % here: bind
  // again when there are enough cores.
  cmd += " --oversubscribe --allow-run-as-root";
  if (processes <= static_cast<int>(std::thread::hardware_concurrency())) cmd += " --bind-to core";
#endif
  cmd += " " + shell_quote(*self) + " " + shell_quote(inv.name) + " --raw-mpi-only --json";
  if (inv.opts.quick) cmd += " --quick";
  if (inv.opts.sizes_given)
    cmd +=
        " --sizes=" + std::to_string(inv.opts.min_size) + "-" + std::to_string(inv.opts.max_size);
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

baseline_figures spawn_raw_mpi_baseline(const invocation& inv, std::string_view metric,
                                        int processes) {
  baseline_figures out;
  std::vector<std::string> rows;
  out.why_missing = spawn_raw_mpi_rows(inv, processes, rows);
  for (const auto& line : rows) {
    if (json_field(line, "bench") == inv.name && json_field(line, "metric") == metric &&
        json_field(line, "baseline") == mpi_raw_name) {
      const auto size = json_field(line, "size");
      const auto value = json_field(line, "baseline_value");
      if (size && value)
        out.by_size[std::strtoull(size->c_str(), nullptr, 10)] =
            std::strtod(value->c_str(), nullptr);
    }
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

void measure_sizes(cairn::world& w, const invocation& inv, std::string_view metric,
                   std::string_view better, const std::vector<std::size_t>& sizes, int rounds,
                   const baseline_figures& spawned, const size_kernel& mine,
                   const size_kernel& raw) {
  const bool inline_raw = w.engine() == cairn::engine::mpi && inv.opts.baseline;
  std::string why_missing = spawned.why_missing;
  if (inline_raw && !raw) why_missing = "this cairn-bench was built without MPI";
  std::optional<report> rep;
  if (w.rank() == 0) rep.emplace(inv.opts.json);
  bool told = false;
  for (const std::size_t size : sizes) {
    std::vector<double> mine_rounds, base_rounds;
    for (int round = 0; round < rounds; ++round) {
      mine_rounds.push_back(mine(size));
      if (inline_raw && raw) base_rounds.push_back(raw(size));
    }
    std::optional<double> base;
    if (!base_rounds.empty())
      base = median(base_rounds);
    else if (!inline_raw)
      base = spawned.at(size);
    if (!rep) continue;
    if (!base && !told) {
      note(std::string(inv.name) + ": baseline " + std::string(mpi_raw_name) + " not measured" +
           (why_missing.empty() ? "" : ": " + why_missing) +
           (spawned.by_size.empty() ? ""
                                    : " (first size without a figure: " + human_size(size) + ")"));
      told = true;
    }
    rep->add(row{std::string(inv.name), std::string(cairn::to_string(w.engine())), w.size(), size,
                 std::string(metric), std::string(better), median(mine_rounds),
                 std::string(mpi_raw_name), base});
  }
  if (rep) rep->finish();
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

}  // namespace cairn::bench
