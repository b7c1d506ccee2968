#pragma once
/// \file
/// The `mpi-raw` baseline of a threads-engine run: the same benchmark in raw-MPI-only mode,
/// run as a child `mpirun -np N <this program> <name> --raw-mpi-only --json ...`, its JSON lines
/// read back through a pipe. The launcher is the `mpiexec` CMake found for the MPI this program
/// links (CAIRN_BENCH_MPIEXEC), else the first `mpirun` in PATH.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/cairn.hpp"
#include "registry.hpp"

namespace cairn::bench {

/// Name of the raw-MPI baseline in rows.
inline constexpr std::string_view mpi_raw_name = "mpi-raw";

/// Baseline figures by message size, and why some or all are missing.
struct baseline_figures {
  std::map<std::size_t, double> by_size;  ///< figure per message size in bytes
  std::string why_missing;                ///< non-empty when the child run failed or was skipped

  /// The figure for `size`, if measured.
  [[nodiscard]] std::optional<double> at(std::size_t size) const;
};

/// Runs this program under `mpirun -np <processes>` in `--raw-mpi-only` mode for the
/// subcommand and options of `inv` and collects its rows whose metric is `metric`. Never throws
/// for a missing mpirun or a failed child: the reason goes to `why_missing`.
baseline_figures spawn_raw_mpi_baseline(const invocation& inv, std::string_view metric,
                                        int processes);

/// Ranks a threads run of this command line gets, as cairn::launch decides it (a run that does
/// nothing): a spawned baseline child must have as many processes, and it runs first.
int threads_run_ranks(const invocation& inv);
/// Runs this program under `mpirun -np <processes>` in `--raw-mpi-only --json` mode for the
/// subcommand and options of `inv` and appends every JSON row it prints to `rows`. Returns why
/// the child failed (empty on success); never throws.
std::string spawn_raw_mpi_rows(const invocation& inv, int processes,
                               std::vector<std::string>& rows);
/// The value of `key` in a flat one-line JSON object as produced by to_json(): the string
/// contents for a string, the text of a number, nullopt for null or a missing key.
std::optional<std::string> json_field(std::string_view line, std::string_view key);

/// The baseline of a run: spawned as a child `mpirun -np <processes>` when this is a threads
/// run, nothing (measured inline) under mpirun, "skipped" with `--no-baseline`. Notes on stderr
/// when the child printed only some figures.
baseline_figures prepare_baseline(const invocation& inv, std::string_view metric, int processes);

/// The baseline figure of a row: `inline_figure` where the baseline ran in this run (under
/// mpirun), else — in a threads run — the spawned child's figure for `size`. Notes on stderr
/// why it is missing (the child failed or was skipped, or no MPI in this build).
std::optional<double> baseline_figure(const invocation& inv, std::string_view name,
                                      const baseline_figures& spawned, bool inline_mpi,
                                      std::optional<double> inline_figure, std::size_t size);

/// A benchmark measured per message size whose baseline is raw MPI ("mpi-raw") measured as a
/// plain MPI program would measure it (run_sized()).
struct sized_spec {
  std::string_view metric;         ///< e.g. "latency_us"
  std::string_view better;         ///< "lower" or "higher"
  std::vector<std::size_t> sizes;  ///< message sizes, in order
  int rounds = 3;                  ///< alternating rounds of cairn and the baseline per figure
  int min_ranks = 1;               ///< fewer ranks or processes is a usage error
  /// Options of every cairn::launch (the threads engine's ranks; the MPI engine's progress).
  cairn::launch_options launch;
  /// Processes of the baseline child of a threads run (the cairn run's ranks).
  int processes = 2;
  /// cairn's figure for one size, called on every rank inside cairn::launch; rank 0's counts.
  std::function<double(cairn::world& w, std::size_t size)> mine;
  /// The raw-MPI figure for one size on MPI_COMM_WORLD, called on every process of a plain MPI
  /// program (MPI initialized by MPI_Init, no cairn state); rank 0's counts. Empty without MPI.
  std::function<double(std::size_t size)> raw;
};

/// Runs `spec` and prints one row per size on rank 0.
///
/// The baseline runs the way a user's own MPI code runs: `MPI_Init` (MPI_THREAD_SINGLE with
/// Open MPI), no cairn world alive in the process, no cairn polling beside it. Threads engine
/// (plain run): each round spawns a plain child `mpirun -np <processes> <this program> <name>
/// --raw-mpi-only` that never starts cairn ("plain-child"), then runs cairn's round. MPI engine
/// (under mpirun): this process calls `MPI_Init` itself before cairn, runs the baseline round,
/// then one cairn::launch for cairn's round (cairn keeps the level it finds); later baseline
/// rounds run after that launch has returned and freed its communicators, window and requests
/// ("before-cairn"). The placement probe runs before every round and after the last; a size
/// whose rounds differ by more than 1.5x (max/min, cairn or baseline) is measured again once.
/// `--raw-mpi-only`: the plain child itself (rounds of the baseline only, JSON rows).
int run_sized(const invocation& inv, const sized_spec& spec);

/// The number of rounds of a sized benchmark: `--rounds=N`, default 3 (1 with --quick).
int rounds_param(const options& o);

/// Spawns `mpirun -np <processes> <this program> <args...>` (with `env` assignments before the
/// launcher, e.g. "CAIRN_MPI_THREAD_LEVEL=funneled") and appends every JSON row it prints to
/// `rows`. Returns why the child failed (empty on success); never throws.
std::string spawn_mpi_rows(int processes, const std::vector<std::string>& args,
                           std::vector<std::string>& rows, std::string_view env = {});

/// The name of the MPI thread level of this process (MPI_Query_thread), "" when MPI is not
/// initialized or this build has none.
std::string mpi_thread_level_name();

/// The largest `x` over the members of `c` (a world or a group; every member calls): the slowest
/// rank's time.
template <class Comm>
double slowest(Comm& c, double x) {
  double worst = 0;
  c.allreduce(std::span(&x, 1), std::span(&worst, 1), cairn::max{});
  return worst;
}

#if CAIRN_BENCH_HAVE_MPI
/// MPI initialized the way a plain program does it (`MPI_Init`), and finalized at the end when
/// this object initialized it (nothing happens when MPI is already initialized). With
/// CAIRN_PROGRESS=thread cairn needs MPI_THREAD_MULTIPLE, which MPI_Init does not give: then
/// MPI_Init_thread asks for `need` (the rows say the level).
class plain_mpi {
 public:
  /// Initializes MPI unless it is initialized already.
  explicit plain_mpi(std::optional<cairn::thread_level> need = std::nullopt);
  plain_mpi(const plain_mpi&) = delete;
  plain_mpi& operator=(const plain_mpi&) = delete;
  /// Finalizes MPI if this object initialized it.
  ~plain_mpi();

 private:
  bool owned_ = false;
};

/// The same over MPI_COMM_WORLD, for the raw-MPI baselines.
double mpi_slowest(double x);
#endif

/// What a `--raw-mpi-only` child measures, on every rank: `rep` is rank 0's JSON report (null
/// on the other ranks), to be given raw_mpi_row()s.
using raw_mpi_body = std::function<void(cairn::world& w, report* rep)>;

/// `--raw-mpi-only` (the child of a threads run): runs `body` on the MPI engine, forced so that
/// a CAIRN_ENGINE inherited from the parent cannot matter. An empty `body` (this program was
/// built without MPI) is noted and returns 2.
int run_raw_mpi_only(const invocation& inv, const raw_mpi_body& body);

/// The row a `--raw-mpi-only` child prints: the baseline's figure alone.
row raw_mpi_row(std::string bench, int ranks, std::size_t size, std::string_view metric,
                std::string_view better, double value);

}  // namespace cairn::bench
