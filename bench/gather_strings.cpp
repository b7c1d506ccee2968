// `cairn-bench gather-strings`: gather of a std::vector<std::string> per rank to rank 0,
// `std::vector<std::string> all = w.gatherv(mine, 0)` (the concatenation in rank order on the
// root), against the same gather written by hand in plain MPI:
//
//   pack      the count, the lengths (64-bit) and the characters into one byte buffer
//   gather    MPI_Gather of the byte counts to the root
//   gatherv   MPI_Gatherv of the buffers
//   unpack    the strings of every rank, in rank order, into one std::vector<std::string>
//
// Every rank holds `--strings=N` strings (default 100000) of random lengths 0..32 (fixed seed,
// a different stream per rank). The row's `size` is N, strings per rank (not bytes). The result
// on the root is checked once against the expected concatenation, untimed; the figure is the
// slowest rank's time per gather (median of the samples, median of the rounds). The baseline
// runs as a plain MPI program (run_sized: a plain child per round on the threads engine,
// before-cairn rounds under mpirun).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr int root = 0;
constexpr std::uint64_t seed = 20240521;
constexpr std::size_t max_length = 32;

/// How a figure is sampled: `samples` timed samples of `iters` gathers each.
struct plan {
  int samples = 7;
  int iters = 1;
};

/// The plan for `n` strings per rank: `--samples` (7, 3 with --quick); gathers per sample so
/// that about 10^5 strings per rank are moved per sample.
plan plan_of(const options& o, std::uint64_t n) {
  plan p;
  p.samples = static_cast<int>(count_param(o, "samples", o.quick ? 3 : 7, 1, 1001));
  p.iters = static_cast<int>(std::clamp<std::uint64_t>(100'000 / std::max<std::uint64_t>(n, 1),
                                                       std::uint64_t{1}, std::uint64_t{1000}));
  return p;
}

/// The `n` strings of `rank`: lengths uniform in 0..32, lowercase letters, from a fixed seed.
std::vector<std::string> strings_of(int rank, std::size_t n) {
  std::mt19937_64 rng(seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(rank));
  std::vector<std::string> out(n);
  for (std::string& s : out) {
    s.resize(static_cast<std::size_t>(rng() % (max_length + 1)));
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i % 8 == 0) bits = rng();
      s[i] = static_cast<char>('a' + (bits & 0xff) % 26);
      bits >>= 8;
    }
  }
  return out;
}

/// Throws naming `who` unless `all` is what the root must hold: the strings of ranks 0..p-1
/// concatenated (nothing off the root).
void check(const std::vector<std::string>& all, int rank, int ranks, std::size_t n,
           const char* who) {
  const std::string what =
      std::string("gather-strings (") + who + ") rank " + std::to_string(rank) + ": ";
  if (rank != root) {
    if (!all.empty())
      throw std::runtime_error(what + "a non-root got " + std::to_string(all.size()) + " strings");
    return;
  }
  if (all.size() != n * static_cast<std::size_t>(ranks))
    throw std::runtime_error(what + "got " + std::to_string(all.size()) + " strings, expected " +
                             std::to_string(n * static_cast<std::size_t>(ranks)));
  for (int r = 0; r < ranks; ++r) {
    const std::vector<std::string> want = strings_of(r, n);
    for (std::size_t i = 0; i < n; ++i)
      if (all[static_cast<std::size_t>(r) * n + i] != want[i])
        throw std::runtime_error(
            what + "string " + std::to_string(i) + " of rank " + std::to_string(r) + " is \"" +
            all[static_cast<std::size_t>(r) * n + i] + "\", expected \"" + want[i] + "\"");
  }
}

/// The median over `p.samples` of the slowest rank's seconds per call of `gather()`, each
/// sample after `barrier()`; `slowest_of(x)` is the maximum over the ranks (collective).
template <class Gather, class Barrier, class Slowest>
double seconds_per_gather(const plan& p, Gather&& gather, Barrier&& barrier, Slowest&& slowest_of) {
  std::vector<double> per;
  for (int s = 0; s < p.samples; ++s) {
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < p.iters; ++i) gather();
    const auto t1 = std::chrono::steady_clock::now();
    per.push_back(slowest_of(std::chrono::duration<double>(t1 - t0).count() / p.iters));
  }
  return median(std::move(per));
}

/// cairn's figure in microseconds: `w.gatherv(mine, root)`.
double cairn_gather(cairn::world& w, std::size_t n, const plan& p) {
  const std::vector<std::string> mine = strings_of(w.rank(), n);
  check(w.gatherv(mine, root), w.rank(), w.size(), n, "cairn");
  std::size_t sink = 0;
  const double s = seconds_per_gather(
      p,
      [&] {
        const std::vector<std::string> all = w.gatherv(mine, root);
        sink += all.size();
      },
      [&] { w.barrier(); }, [&](double x) { return slowest(w, x); });
  if (w.rank() == root && sink != n * static_cast<std::size_t>(w.size()) *
                                      static_cast<std::size_t>(p.samples * p.iters))
    throw std::runtime_error("gather-strings (cairn): a timed gather lost strings");
  return s * 1e6;
}

#if CAIRN_BENCH_HAVE_MPI
/// The hand-written gather: pack, MPI_Gather of the byte counts, MPI_Gatherv of the bytes,
/// unpack on the root (an empty vector elsewhere).
std::vector<std::string> plain_gather(const std::vector<std::string>& mine, int to, MPI_Comm comm) {
  int me = 0, p = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &p);

  // Pack: [count][length × count][characters], lengths and count as 64-bit integers.
  const std::uint64_t count = mine.size();
  std::size_t chars = 0;
  for (const std::string& s : mine) chars += s.size();
  std::vector<char> buf(sizeof(std::uint64_t) * (1 + count) + chars);
  char* at = buf.data();
  std::memcpy(at, &count, sizeof count);
  at += sizeof count;
  for (const std::string& s : mine) {
    const std::uint64_t len = s.size();
    std::memcpy(at, &len, sizeof len);
    at += sizeof len;
  }
  for (const std::string& s : mine) {
    std::memcpy(at, s.data(), s.size());
    at += s.size();
  }

  // The byte counts, then the bytes.
  const int bytes = static_cast<int>(buf.size());
  std::vector<int> counts(me == to ? static_cast<std::size_t>(p) : 0);
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, to, comm);
  std::vector<int> displs(counts.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = static_cast<int>(total);
    total += static_cast<std::size_t>(counts[r]);
  }
  std::vector<char> all(total);
  MPI_Gatherv(buf.data(), bytes, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, to,
              comm);
  if (me != to) return {};

  // Unpack, rank by rank.
  std::uint64_t strings = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    std::uint64_t c = 0;
    std::memcpy(&c, all.data() + displs[r], sizeof c);
    strings += c;
  }
  std::vector<std::string> out;
  out.reserve(strings);
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const char* head = all.data() + displs[r];
    std::uint64_t c = 0;
    std::memcpy(&c, head, sizeof c);
    const char* lens = head + sizeof c;
    const char* text = lens + c * sizeof(std::uint64_t);
    for (std::uint64_t i = 0; i < c; ++i) {
      std::uint64_t len = 0;
      std::memcpy(&len, lens + i * sizeof len, sizeof len);
      out.emplace_back(text, len);
      text += len;
    }
  }
  return out;
}

/// The baseline's figure in microseconds, on MPI_COMM_WORLD of a plain MPI program.
double raw_mpi_gather(std::size_t n, const plan& p) {
  int me = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::vector<std::string> mine = strings_of(me, n);
  check(plain_gather(mine, root, MPI_COMM_WORLD), me, ranks, n, "mpi-raw");
  std::size_t sink = 0;
  const double s = seconds_per_gather(
      p,
      [&] {
        const std::vector<std::string> all = plain_gather(mine, root, MPI_COMM_WORLD);
        sink += all.size();
      },
      [] { MPI_Barrier(MPI_COMM_WORLD); }, mpi_slowest);
  if (me == root &&
      sink != n * static_cast<std::size_t>(ranks) * static_cast<std::size_t>(p.samples * p.iters))
    throw std::runtime_error("gather-strings (mpi-raw): a timed gather lost strings");
  return s * 1e6;
}
#endif

/// The subcommand: run_sized with one "size", N strings per rank.
int run_gather_strings(const invocation& inv) {
  const std::uint64_t n =
      count_param(inv.opts, "strings", inv.opts.quick ? 10'000 : 100'000, 0, 100'000'000);
  const plan p = plan_of(inv.opts, n);
  sized_spec s;
  s.metric = "latency_us";
  s.better = "lower";
  s.sizes = {static_cast<std::size_t>(n)};
  s.rounds = rounds_param(inv.opts);
  if (!inv.opts.raw_mpi_only && cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    s.launch.ranks = s.processes = threads_run_ranks(inv);
  s.mine = [&](cairn::world& w, std::size_t strings) { return cairn_gather(w, strings, p); };
#if CAIRN_BENCH_HAVE_MPI
  s.raw = [&](std::size_t strings) { return raw_mpi_gather(strings, p); };
#endif
  return run_sized(inv, s);
}

const param_registrar params{
    "gather-strings",
    {{"strings", "strings per rank (lengths 0..32, fixed seed); the rows' size",
      "100000, 10000 with --quick"},
     {"samples", "timed samples per round (the median is the round's figure)", "7, 3 with --quick"},
     {"rounds", "alternating rounds of cairn and the baseline per figure", "3, 1 with --quick"}}};

const registrar reg{{"gather-strings",
                     "gatherv of std::vector<std::string> to rank 0 vs pack + MPI_Gatherv "
                     "(us; size = strings per rank)",
                     run_gather_strings}};

}  // namespace

}  // namespace cairn::bench
