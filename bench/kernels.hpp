#pragma once
/// \file
/// Raw-MPI kernels of the subcommands that other subcommands reuse (`calibrate`). Each runs on
/// every process of MPI_COMM_WORLD (MPI initialized, by whoever) and returns rank 0's figure,
/// with the sampling of its subcommand's defaults.

#include <cstddef>

namespace cairn::bench {

#if CAIRN_BENCH_HAVE_MPI
/// `pingpong`'s baseline: one-way latency in microseconds between ranks 0 and 1, MPI_Send and
/// MPI_Recv (the median of its samples).
double raw_mpi_pingpong_us(std::size_t size, bool quick);

/// `allreduce`'s baseline: MPI_Allreduce latency in microseconds of `size` bytes of doubles
/// (sum), the slowest rank's median time per call.
double raw_mpi_allreduce_us(std::size_t size, bool quick);
#endif

}  // namespace cairn::bench
