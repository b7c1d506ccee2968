#pragma once
/// \file
/// Internal: division by a fixed divisor by multiplication, and the key index of the built-in
/// distributions.

#include <cstdint>
#include <type_traits>

namespace cairn::msg {

namespace detail {

__extension__ typedef unsigned __int128 uint128;  // GCC/Clang builtin (silences -Wpedantic)

/// Division of 32-bit numerators by a fixed divisor with one 64x64->128 multiply (Lemire,
/// Kaser & Kurz, "Faster remainder by direct computation", 2019): exact for all x < 2^32.
/// Wider numerators fall back to the hardware divide.
class fast_divider {
 public:
  fast_divider() = default;
  /// Prepares division by `d` (d >= 1).
  explicit fast_divider(std::uint64_t d)
      : d_(d), m_(d > 0 && d < (std::uint64_t{1} << 32) ? ~std::uint64_t{0} / d + 1 : 0) {}
  /// x / d.
  [[nodiscard]] std::uint64_t div(std::uint64_t x) const noexcept {
    if (m_ != 0 && x < (std::uint64_t{1} << 32)) [[likely]]
      return static_cast<std::uint64_t>((static_cast<uint128>(m_) * x) >> 64);
    return x / d_;
  }
  /// The divisor.
  [[nodiscard]] std::uint64_t divisor() const noexcept { return d_; }

 private:
  std::uint64_t d_ = 1;
  std::uint64_t m_ = 0;
};

/// Converts a key to the 64-bit index the built-in distributions work on.
template <class K>
std::uint64_t key_index(const K& k) noexcept {
  static_assert(std::is_integral_v<K>,
                "built-in distributions take integral keys; use .of(key_fn)");
  return static_cast<std::uint64_t>(k);
}

}  // namespace detail

}  // namespace cairn::msg
