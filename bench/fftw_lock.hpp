#pragma once
/// \file
/// FFTW's planner (plan creation and destruction) is one process-wide, non-thread-safe state:
/// every benchmark that plans FFTs on the threads engine (ranks are threads) takes this lock.
#include <mutex>

namespace cairn::bench {

/// The one lock around FFTW plan creation and destruction in cairn-bench.
inline std::mutex& fftw_planner_lock() {
  static std::mutex m;
  return m;
}

}  // namespace cairn::bench
