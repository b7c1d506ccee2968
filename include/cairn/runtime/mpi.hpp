#pragma once
/// \file
/// cairn beside MPI: a run on a communicator of the application's choosing, and MPI
/// communicators for cairn's world and groups, for a program that also calls MPI itself.
///
/// The only public header of cairn that includes <mpi.h>; `cairn/cairn.hpp` does not include
/// it. Usable where cairn was built with MPI (cairn::mpi_available()); the program links MPI
/// itself (CMake: `MPI::MPI_CXX`).

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "cairn/runtime/group.hpp"
#include "cairn/runtime/launch.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn {

/// Runs `fn(world&)` on the MPI engine over the processes of `comm`: world rank r is rank r
/// of `comm`, and cairn talks only on duplicates of it, so several runs may proceed at once
/// on disjoint communicators (e.g. the halves of an MPI_Comm_split). Collective over `comm`.
/// MPI must be initialized (by the application); cairn keeps the thread level provided. The
/// engine is MPI whatever `--cairn-engine` or `CAIRN_ENGINE` say (they are still checked).
/// Otherwise as launch(argc, argv, fn): flags, environment, exit codes (2 for MPI_COMM_NULL,
/// MPI not initialized, or `launch_options::engine` = threads). A rank that fails ends the
/// whole job (MPI_Abort on MPI_COMM_WORLD).
template <detail::argument_count A>
[[nodiscard]] int launch(MPI_Comm comm, A&& argc, char** argv,
                         const std::function<void(world&)>& fn) {
  return detail::launch_forward(std::forward<A>(argc), argv, launch_options{}, &comm, fn);
}

/// As above, with explicit options taking precedence over the command line and environment.
template <detail::argument_count A>
[[nodiscard]] int launch(MPI_Comm comm, A&& argc, char** argv, const launch_options& options,
                         const std::function<void(world&)>& fn) {
  return detail::launch_forward(std::forward<A>(argc), argv, options, &comm, fn);
}

/// cairn inside an MPI program that keeps its own structure instead of handing a function to
/// launch: the MPI engine over the processes of `comm` (world rank r is rank r of `comm`), open
/// from construction to close(). For code that calls cairn from a library, a time step at a
/// time, or from Python beside mpi4py (`cairn.world_from_mpi4py`).
///
///     MPI_Init(&argc, &argv);
///     {
///       cairn::mpi_session session(MPI_COMM_WORLD);
///       cairn::world& w = session.world();
///       ... cairn calls on w, MPI calls of the application ...
///     }  // closes the session: waits for every process to close its own
///     MPI_Finalize();
///
/// As launch on a communicator, except that settings come from `options` and the environment
/// (`CAIRN_*`; the command line only where argc and argv are given) and a failure ends the job
/// instead of returning an exit code: while a session is open, a cairn failure on any process,
/// exit() (with its status) and an exception that leaves the session's scope end the whole
/// job (MPI_Abort on MPI_COMM_WORLD) after a message naming the rank.
class mpi_session {
 public:
  /// Opens the session: collective over `comm`. MPI must be initialized; cairn keeps the
  /// thread level provided. Throws cairn::error (naming what is wrong, before any
  /// communication) for MPI_COMM_NULL, MPI not initialized, a bad `options` field or `CAIRN_*`
  /// value, `launch_options::engine` = threads, a build without MPI, or a thread level too low
  /// for the progress mode.
  explicit mpi_session(MPI_Comm comm, const launch_options& options = {});
  /// As above, reading cairn's flags (`--cairn-NAME=VALUE`, up to a `--`) from the program's
  /// arguments too, as launch does; a flag wins over its variable, `options` over both. argv is
  /// left as it is; world::args() holds argv[0] and the arguments that are not cairn's.
  /// `--cairn-help` prints the flags on the first process of `comm` (the session opens all the
  /// same); an unknown `--cairn-` flag or a missing value throws cairn::error.
  mpi_session(MPI_Comm comm, int argc, char** argv, const launch_options& options = {});
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;
  /// Closes the session if it is open; if an exception is leaving the session's scope, ends
  /// the job instead (the other processes may be waiting for this one).
  ~mpi_session();

  /// This process's rank of the session. Throws cairn::error after close().
  [[nodiscard]] cairn::world& world();
  /// True until close().
  [[nodiscard]] bool is_open() const noexcept { return state_ != nullptr; }
  /// Ends the session as a rank of launch ends: collective over the session's processes (waits
  /// for each to close its own), then reports messages nobody received, which ends the job.
  /// Afterwards every world and group of the session throws on use. Does nothing if closed.
  void close();
  /// Ends the whole job now (MPI_Abort on MPI_COMM_WORLD, exit code 1) after printing
  /// `cairn: rank <r> failed: <what>`: for a process that cannot go on while the others may
  /// be waiting for it (Python's cairn.MPISession calls it for an uncaught exception).
  [[noreturn]] void abort(const std::string& what) noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// An MPI communicator over the world's ranks (MPI rank = world rank), for the application's
/// own MPI calls beside cairn's: a duplicate of the run's communicator made at launch, which
/// cairn never uses itself, freed when the run ends (do not free it). No communication.
/// Throws cairn::error on the threads engine and after the run ended.
[[nodiscard]] MPI_Comm mpi_comm(const world& w);

/// An MPI communicator over the members of `g` (MPI rank = group rank), made on this rank's
/// first call for groups with these members (MPI_Comm_create_group: collective over the
/// members only, which call it for their groups in the same order), then cached for the rest
/// of the run and freed when it ends (do not free it). MPI_COMM_NULL on a rank that is not a
/// member, with no communication. Throws cairn::error on the threads engine, for an empty
/// group and after the run ended.
[[nodiscard]] MPI_Comm mpi_comm(const group& g);

}  // namespace cairn
