#pragma once
/// \file
/// The benchmarks' cheap deterministic randomness: a key stream, scaling into a range without
/// division, and keyed bijections of [0, n).

#include <cstdint>

namespace cairn::bench {

/// xorshift64*: a few cycles per key; the same stream in cairn and its baseline.
struct keygen {
  std::uint64_t s;  ///< state (nonzero)
  /// The next 64-bit value.
  std::uint64_t next() noexcept {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
};

/// Maps a random 64-bit value to [0, n) by multiplication (no division).
inline std::uint64_t scale(std::uint64_t x, std::uint64_t n) noexcept {
  __extension__ typedef unsigned __int128 u128;
  return static_cast<std::uint64_t>((static_cast<u128>(x) * n) >> 64);
}

/// A keyed bijection of [0, n): an invertible mix of the enclosing power of two (odd multiply,
/// add, xorshift), cycle-walked until the value falls inside [0, n).
class bijection {
 public:
  /// The bijection of [0, n) picked by `key`.
  bijection(std::uint64_t n, std::uint64_t key) : n_(n), a_(key | 1), c_(key >> 7) {
    while ((std::uint64_t{1} << bits_) < n) ++bits_;
    mask_ = (std::uint64_t{1} << bits_) - 1;
    shift_ = bits_ / 2 + 1;
  }
  /// The image of `x` (in [0, n)).
  [[nodiscard]] std::uint64_t operator()(std::uint64_t x) const noexcept {
    do {
      x = (x * a_ + c_) & mask_;
      x ^= x >> shift_;
      x = (x * 0x9E3779B97F4A7C15ULL) & mask_;
    } while (x >= n_);
    return x;
  }

 private:
  std::uint64_t n_, a_, c_, mask_ = 0;
  int bits_ = 1, shift_ = 1;
};

}  // namespace cairn::bench
