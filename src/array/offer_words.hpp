#pragma once
// Offer words: the array layer's part of every rank's node region
// (src/node/node_regions.hpp). Array transfers that copy straight from a sender's memory
// (array_exec.cpp) give each local part offered to a receiver a word: a generation above a
// state that the receiver claims before copying and releases after, and that the owner
// withdraws when its transfer is abandoned. The owner opens a word; receivers write it too.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "node/node_regions.hpp"

namespace cairn::detail {

class offer_words {
 public:
  /// Offer words per rank (direct-copy offers outstanding at once; more go unprotected).
  static constexpr std::size_t count = 4096;
  /// The state of an offer word, in its low two bits (its generation above).
  enum state : std::uint64_t { open = 0, claimed = 1, released = 2, withdrawn = 3 };
  /// An offer word's value: `generation` in `st`.
  static constexpr std::uint64_t value(std::uint64_t generation, state st) noexcept {
    return generation << 2 | st;
  }
  /// The state and the generation an offer word's value holds.
  static constexpr state state_of(std::uint64_t v) noexcept { return state(v & 3); }
  static constexpr std::uint64_t generation_of(std::uint64_t v) noexcept { return v >> 2; }
  /// Moves offer word `w` from state `from` to `to` within `generation`; false if it was not in
  /// `from` (another state, or a later generation).
  static bool move(std::atomic<std::uint64_t>& w, std::uint64_t generation, state from,
                   state to) noexcept {
    std::uint64_t v = value(generation, from);
    return w.compare_exchange_strong(v, value(generation, to), std::memory_order_acq_rel);
  }

  offer_words() = default;
  /// The offer words in the node's regions (their part of each).
  explicit offer_words(const node_regions& n) : bases_(n.parts(part_offset())) {}

  /// Where the offer words sit in a node region (reserved at static initialization).
  static std::size_t part_offset() noexcept;
  /// Constructs one rank's words, all released in generation 0 (their owner, before any rank
  /// reads them).
  static void format(std::byte* part) noexcept {
    for (std::size_t i = 0; i < count; ++i)
      new (part + i * sizeof(std::uint64_t)) std::atomic<std::uint64_t>{value(0, released)};
  }

  /// Rank r's offer word i (< count).
  std::atomic<std::uint64_t>& word(int r, std::size_t i) const noexcept {
    return *std::launder(reinterpret_cast<std::atomic<std::uint64_t>*>(
        bases_[static_cast<std::size_t>(r)] + i * sizeof(std::uint64_t)));
  }

 private:
  std::vector<std::byte*> bases_;
};

}  // namespace cairn::detail
