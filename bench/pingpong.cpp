// `cairn-bench pingpong`: one-way latency (half the round trip) between ranks 0 and 1 with
// blocking send/recv; rank 1 echoes what it receives. Baseline: MPI_Send/MPI_Recv.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "two_rank.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr int data_tag = 1;

// About 32 MiB moved per sample (2 MiB with --quick), so small sizes run thousands of round
// trips (milliseconds, far above the clock's resolution) and large ones still twenty.
sampling pingpong_plan(std::size_t size, bool quick) {
  const std::size_t budget = quick ? std::size_t{2} << 20 : std::size_t{32} << 20;
  const std::size_t lo = quick ? 4 : 20;
  const std::size_t hi = quick ? 1000 : 5000;
  const int iters = static_cast<int>(std::clamp(budget / size, lo, hi));
  return sampling{iters, quick ? 5 : 11, iters};
}

// Names the transfer in a verification failure.
std::string describe(const char* who, int rank, std::size_t size) {
  return std::string("pingpong (") + who + ") rank " + std::to_string(rank) + ", " +
         human_size(size);
}

// cairn's one-way latency in microseconds for `size` bytes (rank 0's figure; rank 1 echoes).
double cairn_pingpong(cairn::world& w, std::size_t size, bool quick) {
  const int me = w.rank();
  if (me > 1) return 0;
  const auto n = static_cast<std::int64_t>(size);
  std::vector<std::byte> out(size);
  std::vector<std::byte> in(size, std::byte{0});
  fill_pattern(out, size);
  const std::string what = describe(me == 0 ? "cairn" : "cairn echo", me, size);

  // Untimed round trip with a checked status and payload in both directions.
  cairn::status st;
  if (me == 0) {
    w.send(out.data(), n, 1, data_tag);
    st = w.recv(in.data(), n, 1, data_tag);
  } else {
    st = w.recv(in.data(), n, 0, data_tag);
    w.send(in.data(), n, 0, data_tag);
  }
  check_bytes(st.bytes, size, what);
  check_pattern(in, size, what);
  std::fill(in.begin(), in.end(), std::byte{0});

  const double seconds = median_seconds_per_iter(pingpong_plan(size, quick), [&](int iters) {
    if (me == 0) {
      for (int i = 0; i < iters; ++i) {
        w.send(out.data(), n, 1, data_tag);
        w.recv(in.data(), n, 1, data_tag);
      }
    } else {
      for (int i = 0; i < iters; ++i) {
        w.recv(in.data(), n, 0, data_tag);
        w.send(in.data(), n, 0, data_tag);
      }
    }
  });
  check_pattern(in, size, what + " (after timing)");
  return seconds / 2 * 1e6;
}

#if CAIRN_BENCH_HAVE_MPI
// The same with MPI_Send/MPI_Recv on MPI_COMM_WORLD.
double raw_mpi_pingpong(std::size_t size, bool quick) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me > 1) return 0;
  const int n = static_cast<int>(size);  // sizes are capped at 1 GiB
  std::vector<std::byte> out(size);
  std::vector<std::byte> in(size, std::byte{0});
  fill_pattern(out, size);
  const std::string what = describe(me == 0 ? "mpi-raw" : "mpi-raw echo", me, size);

  MPI_Status st;
  if (me == 0) {
    MPI_Send(out.data(), n, MPI_BYTE, 1, data_tag, MPI_COMM_WORLD);
    MPI_Recv(in.data(), n, MPI_BYTE, 1, data_tag, MPI_COMM_WORLD, &st);
  } else {
    MPI_Recv(in.data(), n, MPI_BYTE, 0, data_tag, MPI_COMM_WORLD, &st);
    MPI_Send(in.data(), n, MPI_BYTE, 0, data_tag, MPI_COMM_WORLD);
  }
  int got = 0;
  MPI_Get_count(&st, MPI_BYTE, &got);
  check_bytes(static_cast<std::size_t>(got), size, what);
  check_pattern(in, size, what);
  std::fill(in.begin(), in.end(), std::byte{0});

  const double seconds = median_seconds_per_iter(pingpong_plan(size, quick), [&](int iters) {
    if (me == 0) {
      for (int i = 0; i < iters; ++i) {
        MPI_Send(out.data(), n, MPI_BYTE, 1, data_tag, MPI_COMM_WORLD);
        MPI_Recv(in.data(), n, MPI_BYTE, 1, data_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    } else {
      for (int i = 0; i < iters; ++i) {
        MPI_Recv(in.data(), n, MPI_BYTE, 0, data_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(in.data(), n, MPI_BYTE, 0, data_tag, MPI_COMM_WORLD);
      }
    }
  });
  check_pattern(in, size, what + " (after timing)");
  return seconds / 2 * 1e6;
}
#endif

// The subcommand: the two-rank driver with the kernels above.
int run_pingpong(const invocation& inv) {
  two_rank_spec spec;
  spec.metric = "latency_us";
  spec.better = "lower";
  spec.cairn_kernel = cairn_pingpong;
#if CAIRN_BENCH_HAVE_MPI
  spec.raw_mpi_kernel = raw_mpi_pingpong;
#endif
  return run_two_rank(inv, spec);
}

const param_registrar params{
    "pingpong",
    {{"rounds", "alternating rounds of cairn and the baseline per figure", "3, 1 with --quick"}}};

const registrar reg{
    {"pingpong", "one-way latency rank 0 <-> 1, blocking send/recv (us)", run_pingpong}};

}  // namespace

#if CAIRN_BENCH_HAVE_MPI
double raw_mpi_pingpong_us(std::size_t size, bool quick) { return raw_mpi_pingpong(size, quick); }
#endif

}  // namespace cairn::bench
