// plain-mpi-check: a plain MPI program (MPI_Init, MPI_COMM_WORLD, no cairn anywhere) that
// measures what cairn-bench's mpi-raw baselines of `pingpong` and `allreduce` measure, written
// independently, so that anyone can check those baselines against a user's own MPI code:
//
//   mpirun -np 2 plain-mpi-check [--sizes=8,65536,1048576] [--rounds=3]
//
// pingpong: one-way latency (half the round trip) of MPI_Send/MPI_Recv between ranks 0 and 1,
// about 32 MiB per timed sample (20 to 5000 round trips), 11 samples, the median. allreduce:
// MPI_Allreduce of the size's doubles (sum), batches calibrated to about 10 ms, 11 samples
// each after a barrier, the median per call, the slowest rank's. Each figure is measured in
// `rounds` alternating rounds; rank 0 prints one JSON line per figure and size with the median,
// min and max of the rounds.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double max_over_ranks(double x) {
  double m = 0;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

// One-way microseconds for `size` bytes between ranks 0 and 1 (rank 0's figure).
double pingpong_us(std::size_t size) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int iters =
      static_cast<int>(std::clamp<std::size_t>((std::size_t{32} << 20) / size, 20, 5000));
  std::vector<char> buf(size, 1);
  const int n = static_cast<int>(size);
  auto run = [&](int k) {
    for (int i = 0; i < k; ++i) {
      if (me == 0) {
        MPI_Send(buf.data(), n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (me == 1) {
        MPI_Recv(buf.data(), n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
  };
  run(iters);  // warm-up
  std::vector<double> samples;
  for (int s = 0; s < 11; ++s) {
    const double t0 = now();
    run(iters);
    samples.push_back((now() - t0) / iters / 2 * 1e6);
  }
  return median(samples);
}

// Microseconds per MPI_Allreduce of `size` bytes of doubles, the slowest rank's median.
double allreduce_us(std::size_t size) {
  const int n = static_cast<int>(size / sizeof(double));
  std::vector<double> in(static_cast<std::size_t>(n), 1.0), out(static_cast<std::size_t>(n));
  auto run = [&](int k) {
    for (int i = 0; i < k; ++i)
      MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  };
  int k = 1;  // batches of 1, 4, 16, ... until one takes a tenth of a 10 ms sample
  while (true) {
    const double t0 = now();
    run(k);
    const double dt = max_over_ranks(now() - t0);
    if (dt >= 0.001 || k >= (1 << 16)) {
      k = static_cast<int>(std::clamp(0.01 / (dt / k), 1.0, double(1 << 16)));
      break;
    }
    k = std::min(k * 4, 1 << 16);
  }
  std::vector<double> samples;
  for (int s = 0; s < 11; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    run(k);
    samples.push_back((now() - t0) / k);
  }
  return max_over_ranks(median(samples)) * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::vector<std::size_t> sizes{8};
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--sizes=", 8) == 0) {
      sizes.clear();
      for (const char* p = argv[i] + 8; *p;) {
        char* end = nullptr;
        const auto v = std::strtoull(p, &end, 10);
        if (end == p || v == 0) break;
        sizes.push_back(v);
        p = *end == ',' ? end + 1 : end;
      }
    } else if (std::strncmp(argv[i], "--rounds=", 9) == 0) {
      rounds = std::max(1, std::atoi(argv[i] + 9));
    }
  }
  int me = 0, ranks = 0, provided = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Query_thread(&provided);
  const char* level = provided == MPI_THREAD_SINGLE       ? "single"
                      : provided == MPI_THREAD_FUNNELED   ? "funneled"
                      : provided == MPI_THREAD_SERIALIZED ? "serialized"
                                                          : "multiple";
  const char* figures[] = {"pingpong", "allreduce"};
  std::vector<std::vector<double>> values(2 * sizes.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      if (ranks >= 2) values[2 * s].push_back(pingpong_us(sizes[s]));
      if (sizes[s] % sizeof(double) == 0) values[2 * s + 1].push_back(allreduce_us(sizes[s]));
    }
  if (me == 0)
    for (std::size_t s = 0; s < sizes.size(); ++s)
      for (int f = 0; f < 2; ++f) {
        const auto& v = values[2 * s + static_cast<std::size_t>(f)];
        if (v.empty()) continue;
        std::string all;
        for (const double x : v) {
          if (!all.empty()) all += ',';
          all += std::to_string(x);
        }
        std::printf(
            "{\"program\":\"plain-mpi-check\",\"figure\":\"%s\",\"ranks\":%d,\"size\":%zu,"
            "\"metric\":\"latency_us\",\"value\":%.6g,\"min\":%.6g,\"max\":%.6g,\"rounds\":[%s],"
            "\"thread_level\":\"%s\"}\n",
            figures[f], ranks, sizes[s], median(v), *std::min_element(v.begin(), v.end()),
            *std::max_element(v.begin(), v.end()), all.c_str(), level);
      }
  MPI_Finalize();
  return 0;
}
