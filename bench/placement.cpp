#include "placement.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

bool pin_to(int core) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(core, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

// The two words on their own cache lines; `ping` carries the round number (negative: stop).
struct alignas(64) line {
  std::atomic<std::int64_t> v{0};
};

}  // namespace

std::optional<double> handoff_ns(std::chrono::milliseconds budget) {
  line ping, pong;
  std::atomic<int> pinned{0}, failed{0};
  std::int64_t rounds = 0;
  double seconds = 0;
  std::thread echo([&] {
    if (!pin_to(1)) failed.fetch_add(1);
    pinned.fetch_add(1);
    for (std::int64_t i = 1;; ++i) {
      std::int64_t got;
      while ((got = ping.v.load(std::memory_order_acquire)) != i && got >= 0) {
      }
      if (got < 0) return;
      pong.v.store(i, std::memory_order_release);
    }
  });
  std::thread lead([&] {
    if (!pin_to(0)) failed.fetch_add(1);
    pinned.fetch_add(1);
    while (pinned.load() < 2) {
    }
    if (failed.load()) {
      ping.v.store(-1, std::memory_order_release);
      return;
    }
    auto exchange = [&](std::int64_t from, std::int64_t to) {
      for (std::int64_t i = from; i < to; ++i) {
        ping.v.store(i, std::memory_order_release);
        while (pong.v.load(std::memory_order_acquire) != i) {
        }
      }
    };
    exchange(1, 2001);  // warm-up: both lines in play, both threads running
    const auto t0 = std::chrono::steady_clock::now();
    std::int64_t next = 2001;
    constexpr std::int64_t batch = 1024;
    while (true) {
      exchange(next, next + batch);
      next += batch;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (seconds >= std::chrono::duration<double>(budget).count()) break;
    }
    rounds = next - 2001;
    ping.v.store(-1, std::memory_order_release);
  });
  lead.join();
  echo.join();
  if (failed.load() || rounds == 0) return std::nullopt;
  return seconds / static_cast<double>(rounds) / 2 * 1e9;
}

std::optional<double> placement_probe(bool under_mpi) {
#if CAIRN_BENCH_HAVE_MPI
  if (under_mpi) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      int me = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      std::optional<double> ns;
      if (me == 0) ns = handoff_ns();
      // A barrier that sleeps between tests: the waiting ranks leave the cores to the probe.
      MPI_Request r;
      MPI_Ibarrier(MPI_COMM_WORLD, &r);
      int done = 0;
      while (MPI_Test(&r, &done, MPI_STATUS_IGNORE), !done)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      return ns;
    }
  }
#else
  (void)under_mpi;
#endif
  return handoff_ns();
}

bool placement_span::changed() const {
  if (all.size() < 2) return false;
  const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
  return *lo > 0 && *hi / *lo > 1.5;
}

}  // namespace cairn::bench
