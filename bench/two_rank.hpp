#pragma once
/// \file
/// Driver for benchmarks between ranks 0 and 1 (pingpong, bandwidth): runs cairn's kernel per
/// message size, pairs it with the mpi-raw baseline and prints the rows. Also the data-pattern
/// helpers those kernels use to prove that every measured transfer delivered the right bytes.

#include <cstddef>
#include <span>
#include <string_view>

#include "cairn/cairn.hpp"
#include "registry.hpp"

namespace cairn::bench {

/// A benchmark between ranks 0 and 1 (any further ranks stay idle).
struct two_rank_spec {
  std::string_view metric;  ///< e.g. "latency_us"
  std::string_view better;  ///< "lower" or "higher"
  /// cairn's figure for one message size. Called on every rank of the run; only rank 0's
  /// result is reported.
  double (*cairn_kernel)(cairn::world& w, std::size_t size, bool quick) = nullptr;
  /// The same measurement with raw MPI on MPI_COMM_WORLD (MPI is initialized), called on every
  /// MPI process; only rank 0's result is reported. Null in builds without MPI.
  double (*raw_mpi_kernel)(std::size_t size, bool quick) = nullptr;
};

/// Runs `spec` for the subcommand and options in `inv` and returns the exit code.
///
/// Threads engine (plain run): 2 ranks; the baseline comes from a child mpirun run of this
/// program. MPI engine (under mpirun): cairn and raw MPI measured in the same processes.
/// `--raw-mpi-only`: only the raw MPI figures, as JSON rows with a null cairn value.
int run_two_rank(const invocation& inv, const two_rank_spec& spec);

/// Fills `buf` with a byte pattern that depends on `seed` and never contains zero.
void fill_pattern(std::span<std::byte> buf, std::size_t seed);

/// Throws std::runtime_error naming `what` unless `buf` holds fill_pattern(seed) exactly.
void check_pattern(std::span<const std::byte> buf, std::size_t seed, std::string_view what);

/// Throws std::runtime_error naming `what` unless a receive reported `got` == `want` bytes.
void check_bytes(std::size_t got, std::size_t want, std::string_view what);

}  // namespace cairn::bench
