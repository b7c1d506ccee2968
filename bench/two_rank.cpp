#include "two_rank.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"

namespace cairn::bench {

namespace {

// The benchmarks pair ranks 0 and 1; a single-rank run is a usage error, not a hang.
void require_two_ranks(const cairn::world& w, std::string_view name) {
  if (w.size() >= 2) return;
  throw std::runtime_error(std::string(name) + " needs at least 2 ranks, this run has " +
                           std::to_string(w.size()) +
                           (w.engine() == cairn::engine::mpi ? " (use mpirun -np 2)" : ""));
}

// `--raw-mpi-only`: the child of a threads run; prints only the raw MPI figures as JSON.
int run_raw_only(const invocation& inv, const two_rank_spec& spec,
                 const std::vector<std::size_t>& sizes) {
  raw_mpi_body body;
  if (spec.raw_mpi_kernel)
    body = [&](cairn::world& w, report* rep) {
      require_two_ranks(w, inv.name);
      for (const std::size_t size : sizes) {
        const double v = spec.raw_mpi_kernel(size, inv.opts.quick);
        if (rep)
          rep->add(raw_mpi_row(std::string(inv.name), w.size(), size, spec.metric, spec.better, v));
      }
    };
  return run_raw_mpi_only(inv, body);
}

}  // namespace

int run_two_rank(const invocation& inv, const two_rank_spec& spec) {
  const std::vector<std::size_t> sizes = size_ladder(inv.opts);
  if (inv.opts.raw_mpi_only) return run_raw_only(inv, spec, sizes);

  const baseline_figures spawned = prepare_baseline(inv, spec.metric, 2);
  // Two ranks on the threads engine; the MPI engine ignores it (mpirun decides).
  return cairn::launch(inv.argc, inv.argv, cairn::launch_options{.ranks = 2}, [&](cairn::world& w) {
    require_two_ranks(w, inv.name);
    const bool quick = inv.opts.quick;
    size_kernel raw;
    if (spec.raw_mpi_kernel)
      raw = [&](std::size_t size) { return spec.raw_mpi_kernel(size, quick); };
    measure_sizes(
        w, inv, spec.metric, spec.better, sizes, quick ? 1 : 3, spawned,
        [&](std::size_t size) { return spec.cairn_kernel(w, size, quick); }, raw);
  });
}

namespace {
// The pattern repeats every 251 bytes (131 is coprime to the prime 251), so a check can
// compare whole blocks with memcmp instead of recomputing every byte.
constexpr std::size_t pattern_period = 251;
}  // namespace

void fill_pattern(std::span<std::byte> buf, std::size_t seed) {
  // Position- and seed-dependent and never zero, so a shifted, stale or zeroed copy shows up.
  std::size_t v = (seed * 7 + 3) % pattern_period;
  for (std::byte& b : buf) {
    b = static_cast<std::byte>(v + 1);
    v += 131;
    if (v >= pattern_period) v -= pattern_period;
  }
}

void check_pattern(std::span<const std::byte> buf, std::size_t seed, std::string_view what) {
  std::array<std::byte, pattern_period * 16> block{};
  fill_pattern(block, seed);
  for (std::size_t off = 0; off < buf.size(); off += block.size()) {
    const std::size_t n = std::min(block.size(), buf.size() - off);
    if (std::memcmp(buf.data() + off, block.data(), n) == 0) continue;
    std::size_t i = 0;
    while (buf[off + i] == block[i]) ++i;
    throw std::runtime_error(std::string(what) + ": received data is wrong at byte " +
                             std::to_string(off + i) + " of " + std::to_string(buf.size()) +
                             " (got " + std::to_string(static_cast<int>(buf[off + i])) +
                             ", expected " + std::to_string(static_cast<int>(block[i])) + ")");
  }
}

void check_bytes(std::size_t got, std::size_t want, std::string_view what) {
  if (got != want)
    throw std::runtime_error(std::string(what) + ": received " + std::to_string(got) +
                             " bytes, expected " + std::to_string(want));
}

}  // namespace cairn::bench
