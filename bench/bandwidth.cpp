// `cairn-bench bandwidth`: streaming bandwidth rank 0 -> rank 1, as OSU's osu_bw: a window of
// isends back to back, wait_all, then a one-byte ack from the receiver, which pre-posts the
// window of irecvs. Baseline: MPI_Isend/MPI_Irecv/MPI_Waitall.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "two_rank.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr int data_tag = 1;
constexpr int ack_tag = 2;
constexpr std::size_t max_window = 64;
// Each message of a window gets its own receive buffer (no two writes to the same bytes), so
// large sizes use a smaller window to stay within this much receive memory (16 at 4 MiB).
constexpr std::size_t window_memory = std::size_t{64} << 20;

// Messages per window for `size`-byte messages.
std::size_t window_for(std::size_t size) {
  return std::clamp<std::size_t>(window_memory / size, 1, max_window);
}

// About 32 MiB per sample (8 MiB with --quick), at least one window and at most 100 (30).
sampling bandwidth_plan(std::size_t size, bool quick) {
  const std::size_t budget = quick ? std::size_t{8} << 20 : std::size_t{32} << 20;
  const std::size_t lo = 1;
  const std::size_t hi = quick ? 30 : 100;
  const int iters = static_cast<int>(std::clamp(budget / (window_for(size) * size), lo, hi));
  return sampling{iters, quick ? 5 : 11, iters};
}

// Names the transfer in a verification failure.
std::string describe(const char* who, std::size_t size) {
  return std::string("bandwidth (") + who + ") rank 1, " + human_size(size);
}

// Bytes of one window over its time, in 1e6 bytes per second.
double mb_per_s(std::size_t size, double seconds_per_window) {
  return static_cast<double>(window_for(size) * size) / seconds_per_window / 1e6;
}

// cairn's streaming bandwidth in MB/s for `size` bytes (rank 0's figure; rank 1 receives
// and verifies).
double cairn_bandwidth(cairn::world& w, std::size_t size, bool quick) {
  const int me = w.rank();
  if (me > 1) return 0;
  const std::size_t window = window_for(size);
  const auto n = static_cast<std::int64_t>(size);
  std::vector<cairn::request> reqs(window);
  std::byte ack{1};
  const sampling plan = bandwidth_plan(size, quick);

  if (me == 0) {
    std::vector<std::byte> out(size);
    fill_pattern(out, size);
    auto windows = [&](int iters) {
      for (int it = 0; it < iters; ++it) {
        for (auto& r : reqs) r = w.isend(out.data(), n, 1, data_tag);
        cairn::wait_all(reqs);
        w.recv(&ack, 1, 1, ack_tag);
      }
    };
    windows(1);  // the receiver's checked window
    const double seconds = median_seconds_per_iter(plan, windows);
    windows(1);
    return mb_per_s(size, seconds);
  }

  std::vector<std::byte> in(window * size, std::byte{0});
  auto windows = [&](int iters) {
    for (int it = 0; it < iters; ++it) {
      for (std::size_t i = 0; i < window; ++i)
        reqs[i] = w.irecv(in.data() + i * size, n, 0, data_tag);
      cairn::wait_all(reqs);
      w.send(&ack, 1, 0, ack_tag);
    }
  };
  // One checked window before and one after timing; every slot must hold the whole message.
  const std::string what = describe("cairn", size);
  auto checked_window = [&](const std::string& when) {
    std::fill(in.begin(), in.end(), std::byte{0});
    windows(1);
    for (std::size_t i = 0; i < window; ++i) {
      check_bytes(reqs[i].last_status().bytes, size, what + when);
      check_pattern(std::span(in).subspan(i * size, size), size, what + when);
    }
  };
  checked_window("");
  median_seconds_per_iter(plan, windows);
  checked_window(" (after timing)");
  return 0;
}

#if CAIRN_BENCH_HAVE_MPI
// The same with MPI_Isend/MPI_Irecv/MPI_Waitall on MPI_COMM_WORLD.
double raw_mpi_bandwidth(std::size_t size, bool quick) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me > 1) return 0;
  const std::size_t window = window_for(size);
  const int n = static_cast<int>(size);  // sizes are capped at 1 GiB
  std::vector<MPI_Request> reqs(window, MPI_REQUEST_NULL);
  std::vector<MPI_Status> sts(window);
  std::byte ack{1};
  const sampling plan = bandwidth_plan(size, quick);
  const int count = static_cast<int>(window);

  if (me == 0) {
    std::vector<std::byte> out(size);
    fill_pattern(out, size);
    auto windows = [&](int iters) {
      for (int it = 0; it < iters; ++it) {
        for (auto& r : reqs) MPI_Isend(out.data(), n, MPI_BYTE, 1, data_tag, MPI_COMM_WORLD, &r);
        MPI_Waitall(count, reqs.data(), MPI_STATUSES_IGNORE);
        MPI_Recv(&ack, 1, MPI_BYTE, 1, ack_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    };
    windows(1);
    const double seconds = median_seconds_per_iter(plan, windows);
    windows(1);
    return mb_per_s(size, seconds);
  }

  std::vector<std::byte> in(window * size, std::byte{0});
  auto windows = [&](int iters) {
    for (int it = 0; it < iters; ++it) {
      for (std::size_t i = 0; i < window; ++i)
        MPI_Irecv(in.data() + i * size, n, MPI_BYTE, 0, data_tag, MPI_COMM_WORLD, &reqs[i]);
      MPI_Waitall(count, reqs.data(), sts.data());
      MPI_Send(&ack, 1, MPI_BYTE, 0, ack_tag, MPI_COMM_WORLD);
    }
  };
  const std::string what = describe("mpi-raw", size);
  auto checked_window = [&](const std::string& when) {
    std::fill(in.begin(), in.end(), std::byte{0});
    windows(1);
    for (std::size_t i = 0; i < window; ++i) {
      int got = 0;
      MPI_Get_count(&sts[i], MPI_BYTE, &got);
      check_bytes(static_cast<std::size_t>(got), size, what + when);
      check_pattern(std::span(in).subspan(i * size, size), size, what + when);
    }
  };
  checked_window("");
  median_seconds_per_iter(plan, windows);
  checked_window(" (after timing)");
  return 0;
}
#endif

// The subcommand: the two-rank driver with the kernels above.
int run_bandwidth(const invocation& inv) {
  two_rank_spec spec;
  spec.metric = "bandwidth_MBps";
  spec.better = "higher";
  spec.cairn_kernel = cairn_bandwidth;
#if CAIRN_BENCH_HAVE_MPI
  spec.raw_mpi_kernel = raw_mpi_bandwidth;
#endif
  return run_two_rank(inv, spec);
}

const param_registrar params{
    "bandwidth",
    {{"rounds", "alternating rounds of cairn and the baseline per figure", "3, 1 with --quick"}}};

const registrar reg{{"bandwidth",
                     "streaming bandwidth rank 0 -> 1, windows of isends + ack (MB/s, 1e6 B/s)",
                     run_bandwidth}};

}  // namespace

}  // namespace cairn::bench
