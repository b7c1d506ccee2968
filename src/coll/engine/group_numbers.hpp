#pragma once
// The numbers a rank gives each group's collectives (their tags: coll_tag), and the window
// that bounds how many of a group's collectives run by messages at once.

#include <cstdint>
#include <vector>

namespace cairn::detail {

/// The numbers a rank gives a group's collectives, and which of the last `window` of them still
/// run by messages (a bit each, by number modulo the window). Number n + window is given only
/// once the collective numbered n completed here, so at most `window` of a group's collectives
/// by messages are in flight on a rank (their tags, 31 bits of the number, never repeat among
/// them).
struct group_numbers {
  /// The window: 4096 numbers.
  static constexpr std::uint32_t window_bits = 12;
  std::uint32_t next = 0;
  std::uint32_t mask = 0;  // the window minus one (a power of two)
  std::vector<std::uint64_t> held;
  bool holds(std::uint32_t seq) const noexcept {
    const std::uint32_t at = seq & mask;
    return (held[at >> 6] >> (at & 63)) & 1u;
  }
  void hold(std::uint32_t seq) noexcept {
    const std::uint32_t at = seq & mask;
    held[at >> 6] |= std::uint64_t{1} << (at & 63);
  }
  void release(std::uint32_t seq) noexcept {
    const std::uint32_t at = seq & mask;
    held[at >> 6] &= ~(std::uint64_t{1} << (at & 63));
  }
};

/// A collective's number on its group, held in `numbers` until released.
struct numbered {
  group_numbers* numbers = nullptr;
  std::uint32_t seq = 0;
  /// Gives the number's tag back (a collective that completed, or never ran).
  void release() noexcept {
    if (numbers) numbers->release(seq);
    numbers = nullptr;
  }
};

}  // namespace cairn::detail
