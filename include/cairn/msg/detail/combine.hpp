#pragma once
/// \file
/// Internal: a channel's outgoing buffer and the slot hashing of the combining caches.

#include <bit>
#include <cstddef>
#include <cstdint>

namespace cairn::msg {

namespace detail {

/// An outgoing buffer of a channel: wire bytes (header, items, then per-item metadata), the
/// number of items in it, and a generation that changes whenever the buffer is sent.
struct out_buffer {
  std::byte* data = nullptr;  ///< allocated on first use
  std::uint32_t n = 0;        ///< items buffered
  std::uint32_t gen = 0;      ///< bumped on every send: invalidates cached positions
};

/// Mixes a 64-bit key into a slot index.
inline std::size_t slot_of(std::uint64_t k, std::size_t mask) noexcept {
  k ^= k >> 31;
  k *= 0x7fb5d329728ea185ULL;
  k ^= k >> 27;
  return static_cast<std::size_t>(k) & mask;
}

/// Slot count rounded up to a power of two (at least 1).
inline std::size_t slot_count(std::size_t slots) noexcept {
  return std::bit_ceil(slots < 1 ? std::size_t{1} : slots);
}

}  // namespace detail

}  // namespace cairn::msg
