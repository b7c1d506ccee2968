#pragma once
/// \file
/// The placement probe. The two cores of a small VM may sit near each other (a cache-line
/// handoff between them in 55-60 ns one way) or far apart (about 270 ns), and move between the
/// two for tens of seconds at a time; every latency figure moves with them. The probe is a
/// cache-line ping-pong between two threads pinned to cores 0 and 1 for about 50 ms; rows record
/// it before and after their measurement.

#include <chrono>
#include <optional>
#include <vector>

namespace cairn::bench {

/// Nanoseconds one way of a cache-line handoff between two new threads pinned to cores 0 and 1,
/// measured for about `budget`; nullopt when the two cores cannot be pinned (fewer than 2 CPUs
/// allowed). The calling thread's affinity is not touched.
std::optional<double> handoff_ns(std::chrono::milliseconds budget = std::chrono::milliseconds(50));

/// The probe for a benchmark run: in a process under mpirun (MPI initialized), rank 0 probes
/// while the other ranks wait in a barrier that sleeps instead of spinning (a spinning rank
/// would take a core from the probe); elsewhere this process probes. The figure on rank 0 (and
/// in a plain process), nullopt on the other ranks. Called outside every timed region.
std::optional<double> placement_probe(bool under_mpi);

/// What the probes around one measurement say: the first and the last, and whether any two of
/// them differ by more than 1.5x (the placement changed while it ran).
struct placement_span {
  std::optional<double> before;        ///< the probe just before the measurement
  std::optional<double> after;         ///< the probe just after it
  std::vector<double> all;             ///< every probe of the measurement, in order
  [[nodiscard]] bool changed() const;  ///< max / min over `all` above 1.5
};

}  // namespace cairn::bench
