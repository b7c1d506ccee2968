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
