#pragma once
/// \file
/// `cairn::launch`: start the ranks of a run on the threads or the MPI engine.

#include <concepts>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "cairn/runtime/world.hpp"

namespace cairn {

/// How a rank's communication and collectives advance while the rank computes outside cairn.
enum class progress_mode {
  /// Only inside cairn calls (test, wait, progress, sends, starts): the default.
  calls,
  /// Threads engine: a rank that sends to another rank also advances the receiver's pending
  /// communication and collectives, if the receiver is outside cairn. No extra thread.
  peers,
  /// One progress thread per process advances every rank that is outside cairn with
  /// something pending, and sleeps `progress_interval_us` after a sweep that found nothing.
  /// On the MPI engine this needs MPI_THREAD_MULTIPLE (cairn asks for it).
  thread,
};

/// MPI's levels of thread support (MPI_Init_thread), in increasing order.
enum class thread_level {
  /// One thread of the process calls MPI: what a plain `MPI_Init` program gets, and the
  /// cheapest per message (Open MPI 4.1: 0.10 us one way against 0.15 us at funneled).
  single,
  /// Only the thread that initialized MPI calls it; other threads exist.
  funneled,
  /// Any thread calls MPI, one at a time.
  serialized,
  /// Any thread calls MPI at any time (cairn's progress thread needs this).
  multiple,
};

/// Explicit settings for a run; unset fields come from the command line (`--cairn-<name>`),
/// else the environment (`CAIRN_<NAME>`), else the default. `--cairn-help` lists both.
struct launch_options {
  /// Engine to use; default: mpi under an MPI launcher (Open MPI, MPICH/Hydra, PMIx, Slurm's
  /// srun), otherwise threads. `--cairn-engine` or `CAIRN_ENGINE=threads|mpi` overrides the
  /// detection.
  std::optional<cairn::engine> engine = std::nullopt;
  /// Ranks for the threads engine; default: `--cairn-ranks=N`, else `CAIRN_RANKS`, else the
  /// number of hardware threads. Ignored by the MPI engine (the launcher decides).
  std::optional<int> ranks = std::nullopt;
  /// Emulated nodes, on both engines: the ranks are split into this many nodes of consecutive
  /// ranks (on MPI, within each real node), and nothing crosses them through node memory (no
  /// shared-memory board, cross-memory reads or straight copies; only messages), as between
  /// real nodes. Default: `--cairn-nodes`, `CAIRN_NODES`, else `threads_nodes`, else 1.
  std::optional<int> nodes = std::nullopt;
  /// The threads engine's older name for `nodes` (`--cairn-threads-nodes`,
  /// `CAIRN_THREADS_NODES`); `nodes` wins where both are given.
  std::optional<int> threads_nodes = std::nullopt;
  /// Watchdog: a wait that sees no progress for this many seconds prints the rank and its
  /// pending operations and ends the run non-zero. Default: `--cairn-watchdog-s`,
  /// `CAIRN_WATCHDOG_S`, else off (0).
  std::optional<double> watchdog_s = std::nullopt;
  /// Progress while ranks compute; default: `--cairn-progress`,
  /// `CAIRN_PROGRESS=calls|peers|thread`, else calls.
  /// In `peers` and `thread` modes reduction operators may run on another thread than the
  /// rank's (never concurrently for one rank); channel handlers always run on the rank's own.
  std::optional<progress_mode> progress = std::nullopt;
  /// `thread` mode: microseconds the progress thread sleeps after an idle sweep, in [0, 1e6];
  /// default `--cairn-progress-interval-us`, `CAIRN_PROGRESS_INTERVAL_US`, else 20.
  std::optional<double> progress_interval_us = std::nullopt;
  /// MPI engine: the least thread support to ask MPI for, for an application that calls MPI
  /// from threads of its own; default: `--cairn-mpi-thread-level`,
  /// `CAIRN_MPI_THREAD_LEVEL=single|funneled|serialized|multiple`, else single. cairn asks for
  /// `multiple` when the progress mode is `thread`, whatever this says. Where the application
  /// initialized MPI itself, cairn uses the level MPI provided and fails only for a progress mode
  /// that needs more.
  std::optional<thread_level> mpi_thread_level = std::nullopt;
};

namespace detail {
/// Internal: an argument count as `launch` takes it (any integer; `int&` to update it).
template <class A>
concept argument_count = std::integral<std::remove_cvref_t<A>>;

/// Internal: what every `launch` overload calls. `update` is the caller's argc where cairn's
/// flags are to be removed from argv in place (null: argv is left as it is); `mpi_comm` points
/// to the MPI_Comm to run on (cairn/runtime/mpi.hpp), null for MPI_COMM_WORLD.
int launch_main(int* update, int argc, char** argv, const launch_options& options,
                const void* mpi_comm, const std::function<void(world&)>& fn);

/// Internal: launch_main with `update` set only where `argc` is a modifiable `int`.
template <argument_count A>
int launch_forward(A&& argc, char** argv, const launch_options& options, const void* mpi_comm,
                   const std::function<void(world&)>& fn) {
  if constexpr (std::is_same_v<A, int&>)
    return launch_main(&argc, argc, argv, options, mpi_comm, fn);
  else
    return launch_main(nullptr, static_cast<int>(argc), argv, options, mpi_comm, fn);
}
}  // namespace detail

/// Runs `fn(world&)` once per rank and returns the process exit code:
/// - 0 on success, and for `--cairn-help` (which prints cairn's flags and environment
///   variables, on the MPI engine on rank 0 only, and runs no rank);
/// - 2 after printing one line `cairn: <what is wrong>` to stderr (on the MPI engine, every
///   process prints it) when a `--cairn-*` flag is unknown, a flag, a `CAIRN_*` environment
///   variable or a launch_options field has a bad value, or the run cannot start as asked (no
///   MPI in this build, a thread level MPI does not provide); no rank runs then, and nothing
///   is thrown;
/// - 1 after printing the message if `fn` threw on any rank (the other ranks are released; on
///   the MPI engine the job is ended with MPI_Abort).
///
/// cairn's flags, `--cairn-<name>=<value>` or `--cairn-<name> <value>` (`--cairn-help` lists
/// them), are read up to a `--` argument. Where `argc` is a modifiable `int` (as `main`'s),
/// they are removed from argv in place, `argc` is decreased and `argv[argc]` set to null, as
/// MPI_Init does; a later launch with the same argc and argv then no longer sees them. Where
/// `argc` is a constant or a temporary, argv is left as it is. Either way each rank reads the
/// program's other arguments with world::args(). Can be called several times in one process.
template <detail::argument_count A>
[[nodiscard]] int launch(A&& argc, char** argv, const std::function<void(world&)>& fn) {
  return detail::launch_forward(std::forward<A>(argc), argv, launch_options{}, nullptr, fn);
}

/// As above, with explicit options taking precedence over the command line and environment.
template <detail::argument_count A>
[[nodiscard]] int launch(A&& argc, char** argv, const launch_options& options,
                         const std::function<void(world&)>& fn) {
  return detail::launch_forward(std::forward<A>(argc), argv, options, nullptr, fn);
}

/// Engine that launch() would choose for these arguments and this environment: the
/// `--cairn-engine` flag, else `CAIRN_ENGINE`, else mpi under an MPI launcher, else threads.
/// Throws cairn::error for a value other than threads or mpi.
cairn::engine detect_engine(int argc, char** argv);

/// True when this build of cairn contains the MPI engine.
bool mpi_available() noexcept;

/// The thread level the MPI engine asks MPI for with these options and the environment (not
/// the command line): `multiple` with the progress thread, else the requested level (default
/// single). Throws cairn::error for a bad CAIRN_PROGRESS or CAIRN_MPI_THREAD_LEVEL.
thread_level mpi_thread_level_requested(const launch_options& options);

/// The thread level MPI provides in this process, or nothing while MPI is not initialized
/// (or already finalized, or this build has no MPI).
std::optional<thread_level> mpi_thread_level_provided() noexcept;

/// "single", "funneled", "serialized" or "multiple".
const char* to_string(thread_level level) noexcept;

}  // namespace cairn
