#pragma once
// Shared helpers for cairn's tests: run a body on every rank of the engine the test was
// registered for (CAIRN_ENGINE / CAIRN_RANKS, or mpiexec), and seeded random data.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"

namespace cairn::test {

/// argc/argv of the test program (set by the test main).
extern int argc;
extern char** argv;

/// Runs `body` on every rank; the run must end successfully.
inline void run(const std::function<void(world&)>& body) {
  EXPECT_EQ(cairn::launch(argc, argv, body), 0);
}

/// Deterministic pseudo-random values for (seed, stream); signed integers leave headroom for sums.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed, std::uint64_t stream = 0) {
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + stream);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = std::uniform_real_distribution<T>(-1, 1)(gen);
    } else if constexpr (std::is_signed_v<T> && std::numeric_limits<T>::digits >= 16) {
      // Headroom: sums over up to 256 ranks never overflow (signed overflow is undefined).
      constexpr T limit = T(1) << (std::numeric_limits<T>::digits - 8);
      x = std::uniform_int_distribution<T>(-limit, limit)(gen);
    } else {
      x = static_cast<T>(gen());
    }
  }
  return v;
}

// The message of the cairn::error that `call` raises, or "no error".
template <class F>
std::string message_of(F&& call) {
  try {
    call();
  } catch (const cairn::error& e) {
    return e.what();
  }
  return "no error";
}
// True when `s` contains `part` (error messages).
inline bool has_text(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Grid extents whose product is `size`, chosen at random among factorizations.
inline std::vector<int> random_dims(std::mt19937_64& g, int size) {
  std::vector<int> dims;
  int n = size;
  while (n > 1) {
    std::vector<int> divs;
    for (int d = 2; d <= n; ++d)
      if (n % d == 0) divs.push_back(d);
    const int d = divs[g() % divs.size()];
    dims.push_back(d);
    n /= d;
  }
  if (dims.empty()) dims.push_back(1);
  return dims;
}

}  // namespace cairn::test
