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

int run_two_rank(const invocation& inv, const two_rank_spec& spec) {
  sized_spec s;
  s.metric = spec.metric;
  s.better = spec.better;
  s.sizes = size_ladder(inv.opts);
  s.rounds = rounds_param(inv.opts);
  s.min_ranks = 2;     // the benchmarks pair ranks 0 and 1; one rank is a usage error, not a hang
  s.launch.ranks = 2;  // on the threads engine; the MPI engine ignores it (mpirun decides)
  s.processes = 2;
  const bool quick = inv.opts.quick;
  s.mine = [&](cairn::world& w, std::size_t size) { return spec.cairn_kernel(w, size, quick); };
  if (spec.raw_mpi_kernel)
    s.raw = [&](std::size_t size) { return spec.raw_mpi_kernel(size, quick); };
  return run_sized(inv, s);
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
