#pragma once
// The node board: memory every rank of the run can read, through which short blocking
// collectives on the world run without messages (src/coll/shared_memory_flat.cpp). Threads
// engine: one allocation of the fabric; MPI engine: an MPI-3 shared-memory window, when all
// processes sit on one node.
//
// Each rank owns `slots` slots, used by successive board collectives in turn, and a `done`
// word; it is the only writer of its region. A slot is a header (the collective's number,
// published last, and its signature) and a payload of up to `payload_max` bytes, whose first
// 32 bytes share the header's cache line.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace cairn::detail {

/// One slot's header, at the start of its cache line.
struct board_slot {
  /// The board collective this slot holds (0: none yet); stored last (release), read first.
  std::atomic<std::uint64_t> seq{0};
  std::uint32_t kind = 0;   ///< which collective (coll: board_collective)
  std::int32_t root = -1;   ///< its root, -1 for none
  std::uint64_t bytes = 0;  ///< bytes the rank passed
  std::uint64_t reserved = 0;
};
static_assert(sizeof(board_slot) == 32);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "board slots are shared between processes: their atomics must be lock-free");

class node_board {
 public:
  /// Board collectives a rank may have started beyond the last one every rank completed.
  static constexpr std::uint64_t slots = 8;
  /// Longest payload a slot carries.
  static constexpr std::size_t payload_max = 16384;
  /// Bytes between two slots (slack keeps neighbours' cache-line pairs apart).
  static constexpr std::size_t slot_stride = sizeof(board_slot) + payload_max + 96;
  /// Bytes before the first slot: the `done` word's line pair.
  static constexpr std::size_t done_stride = 128;
  /// Bytes a rank's region needs (128-byte aligned).
  static constexpr std::size_t region_bytes = done_stride + slots * slot_stride;

  node_board() = default;
  /// A board over `bases[r]`, the region of rank r (region_bytes each, 128-byte aligned).
  explicit node_board(std::vector<std::byte*> bases) : bases_(std::move(bases)) {}

  /// Constructs the words of one region (its owner, before any rank reads it).
  static void format(std::byte* region) noexcept {
    new (region) std::atomic<std::uint64_t>{0};
    for (std::size_t i = 0; i < slots; ++i) new (region + done_stride + i * slot_stride) board_slot{};
  }

  /// The last board collective rank r completed, all earlier ones included (release).
  std::atomic<std::uint64_t>& done(int r) const noexcept {
    return *std::launder(reinterpret_cast<std::atomic<std::uint64_t>*>(bases_[static_cast<std::size_t>(r)]));
  }
  /// Rank r's slot for board collective number `seq`.
  board_slot& slot(int r, std::uint64_t seq) const noexcept {
    return *std::launder(reinterpret_cast<board_slot*>(bases_[static_cast<std::size_t>(r)] + done_stride +
                                                       (seq % slots) * slot_stride));
  }
  /// The payload behind a slot's header.
  static std::byte* payload(board_slot& s) noexcept {
    return reinterpret_cast<std::byte*>(&s) + sizeof(board_slot);
  }
  int ranks() const noexcept { return static_cast<int>(bases_.size()); }

 private:
  std::vector<std::byte*> bases_;
};

}  // namespace cairn::detail
