#pragma once
/// \file
/// `cairn::launch`: start the ranks of a run on the threads or the MPI engine.

#include <functional>
#include <optional>

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

/// Explicit settings for a run; unset fields come from the command line and environment.
struct launch_options {
  /// Engine to use; default: mpi under an MPI launcher (Open MPI, MPICH/Hydra, PMIx, Slurm's
  /// srun), otherwise threads. `CAIRN_ENGINE=threads|mpi` overrides the detection.
  std::optional<cairn::engine> engine = std::nullopt;
  /// Ranks for the threads engine; default: `--cairn-ranks=N`, else `CAIRN_RANKS`, else the
  /// number of hardware threads. Ignored by the MPI engine (the launcher decides).
  std::optional<int> ranks = std::nullopt;
  /// Pretend the threads engine's ranks sit on this many nodes (blocks of consecutive ranks);
  /// default: `CAIRN_THREADS_NODES`, else 1.
  std::optional<int> threads_nodes = std::nullopt;
  /// Watchdog: a wait that sees no progress for this many seconds prints the rank and its
  /// pending operations and ends the run non-zero. Default: `CAIRN_WATCHDOG_S`, else off (0).
  std::optional<double> watchdog_s = std::nullopt;
  /// Progress while ranks compute; default: `CAIRN_PROGRESS=calls|peers|thread`, else calls.
  /// In `peers` and `thread` modes reduction operators may run on another thread than the
  /// rank's (never concurrently for one rank); channel handlers always run on the rank's own.
  std::optional<progress_mode> progress = std::nullopt;
  /// `thread` mode: microseconds the progress thread sleeps after an idle sweep; default
  /// `CAIRN_PROGRESS_INTERVAL_US`, else 20.
  std::optional<double> progress_interval_us = std::nullopt;
};

/// Runs `fn(world&)` once per rank and returns the process exit code: 0 on success; non-zero
/// after printing the message if `fn` threw on any rank (the other ranks are released; on the
/// MPI engine the job is ended with MPI_Abort). Can be called several times in one process.
[[nodiscard]] int launch(int argc, char** argv, const std::function<void(world&)>& fn);

/// As above, with explicit options taking precedence over the command line and environment.
[[nodiscard]] int launch(int argc, char** argv, const launch_options& options,
                         const std::function<void(world&)>& fn);

/// Engine that launch() would choose for these arguments and this environment.
cairn::engine detect_engine(int argc, char** argv);

/// True when this build of cairn contains the MPI engine.
bool mpi_available() noexcept;

}  // namespace cairn
