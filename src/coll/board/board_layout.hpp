#pragma once
// The board: the collectives' part of every rank's node region (src/node/node_regions.hpp),
// through which short collectives run without messages (src/coll/board/shared_memory_flat.cpp,
// src/coll/board/shared_memory_group.cpp) and long ones publish their buffers
// (src/coll/board/shared_memory_direct.cpp).
//
// Each rank owns `slots` slots, used by successive board collectives on the world in turn,
// and a `done` word; it is the only writer of them. A slot is a header (the collective's
// number, published last, and its signature) and a payload of up to `payload_max` bytes, whose
// first 32 bytes share the header's cache line.
//
// Collectives on other groups (src/coll/board/shared_memory_group.cpp) use a rank's `group_slots`
// keyed slots: a header naming the collective (group identity and sequence number), a count
// of acknowledgments its readers add once done with it, and a payload. A rank's doorbell is
// written by others: they add to it when they published or acknowledged something it may wait
// for.
//
// The staging (node_staging, below) is a second part of the region: progress counters and
// rings of chunks that the staged collectives copy through (shared_memory_staged.cpp), one for
// the world and one per keyed slot.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "node/node_regions.hpp"

namespace cairn::detail {

/// One slot's header, at the start of its cache line.
struct board_slot {
  /// The board collective this slot holds (0: none yet); stored last (release), read first.
  std::atomic<std::uint64_t> seq{0};
  std::uint32_t kind = 0;   ///< which collective (coll: board_collective)
  std::int32_t root = -1;   ///< its root, -1 for none
  std::uint64_t bytes = 0;  ///< bytes the rank passed
  /// 0 if the collective runs on the board; else it runs by messages and this is a fingerprint
  /// of its algorithm (the slot only checks the signatures: prepared::gate)
  std::uint64_t algorithm = 0;
};
static_assert(sizeof(board_slot) == 32);

/// A keyed slot's header (collectives on groups): the header line, and the acknowledgments on
/// a line of their own (the readers write it, the owner reads it).
struct group_slot {
  /// key_of(group, seq) of the collective it holds (0: never used); stored last (release),
  /// read first.
  std::atomic<std::uint64_t> key{0};
  std::uint64_t group = 0;      ///< the group's identity
  std::uint32_t seq = 0;        ///< the collective's number on that group
  std::uint32_t kind = 0;       ///< which collective (coll: board_collective)
  std::int32_t root = -1;       ///< its root, -1 for none
  std::uint32_t readers = 0;    ///< acknowledgments that free the slot
  std::uint64_t bytes = 0;      ///< bytes the rank passed
  std::uint64_t shape = 0;      ///< a generalized reduce's participants and receivers (fingerprint)
  std::uint64_t algorithm = 0;  ///< as board_slot::algorithm
  /// Readers done with the slot, counting up from 0 for each use.
  alignas(64) std::atomic<std::uint64_t> acks{0};
  /// 1 while its owner waits for one of its slots to be free: the reader that frees this one
  /// rings it (on the acknowledgments' line, which that reader has just written).
  std::atomic<std::uint32_t> owner_waits{0};
};
static_assert(sizeof(group_slot) == 128);

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "board slots are shared between processes: their atomics must be lock-free");

class node_board {
 public:
  /// Board collectives a rank may have started beyond the last one every rank completed.
  static constexpr std::uint64_t slots = 32;
  /// Longest payload a slot carries.
  static constexpr std::size_t payload_max = 16384;
  /// Bytes between two slots (slack keeps neighbours' cache-line pairs apart).
  static constexpr std::size_t slot_stride = sizeof(board_slot) + payload_max + 96;
  /// Bytes before the first slot: the `done` word's line pair (the doorbell in the second).
  static constexpr std::size_t done_stride = 128;
  /// Where the doorbell sits in a region.
  static constexpr std::size_t doorbell_offset = 64;
  /// Where the count of keyed-slot publications sits (the `done` word's line: both are
  /// written by the owner only).
  static constexpr std::size_t publications_offset = 8;
  /// Keyed slots per rank (collectives on groups in flight from one rank).
  static constexpr std::size_t group_slots = 8;
  /// Bytes between two keyed slots.
  static constexpr std::size_t group_slot_stride = sizeof(group_slot) + payload_max;
  /// Bytes before the first keyed slot.
  static constexpr std::size_t group_offset = done_stride + slots * slot_stride;
  /// Bytes of a rank's part (a multiple of 128).
  static constexpr std::size_t part_bytes = group_offset + group_slots * group_slot_stride;

  /// The (never 0) key of collective `seq` on the group of identity `group`; readers compare
  /// the header's fields too, so a collision of keys is never mistaken for a match.
  static std::uint64_t key_of(std::uint64_t group, std::uint32_t seq) noexcept {
    std::uint64_t h = group ^ (static_cast<std::uint64_t>(seq) * 0x9E3779B97F4A7C15ull);
    h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
    return h ? h : 1;
  }

  node_board() = default;
  /// The board in the node's regions (its part of each).
  explicit node_board(const node_regions& n) : bases_(n.parts(part_offset())) {}

  /// Where the board sits in a node region (reserved at static initialization).
  static std::size_t part_offset() noexcept;
  /// Constructs the words of one rank's part (its owner, before any rank reads it).
  static void format(std::byte* region) noexcept {
    new (region) std::atomic<std::uint64_t>{0};
    new (region + doorbell_offset) std::atomic<std::uint64_t>{0};
    new (region + publications_offset) std::atomic<std::uint64_t>{0};
    for (std::size_t i = 0; i < slots; ++i)
      new (region + done_stride + i * slot_stride) board_slot{};
    for (std::size_t i = 0; i < group_slots; ++i)
      new (region + group_offset + i * group_slot_stride) group_slot{};
  }

  /// The last board collective rank r completed, all earlier ones included (release).
  std::atomic<std::uint64_t>& done(int r) const noexcept {
    return *std::launder(
        reinterpret_cast<std::atomic<std::uint64_t>*>(bases_[static_cast<std::size_t>(r)]));
  }
  /// Rank r's slot for board collective number `seq`.
  board_slot& slot(int r, std::uint64_t seq) const noexcept {
    return *std::launder(reinterpret_cast<board_slot*>(bases_[static_cast<std::size_t>(r)] +
                                                       done_stride + (seq % slots) * slot_stride));
  }
  /// The payload behind a slot's header.
  static std::byte* payload(board_slot& s) noexcept {
    return reinterpret_cast<std::byte*>(&s) + sizeof(board_slot);
  }
  /// Rank r's doorbell: others add 1 (seq_cst, then wake r) when r may have something to do.
  std::atomic<std::uint64_t>& doorbell(int r) const noexcept {
    return *std::launder(reinterpret_cast<std::atomic<std::uint64_t>*>(
        bases_[static_cast<std::size_t>(r)] + doorbell_offset));
  }
  /// Keyed slots rank r has published so far (it adds 1 after each key, before ringing): a
  /// reader that found no slot for a collective need not look again until this changes.
  std::atomic<std::uint64_t>& publications(int r) const noexcept {
    return *std::launder(reinterpret_cast<std::atomic<std::uint64_t>*>(
        bases_[static_cast<std::size_t>(r)] + publications_offset));
  }
  /// Rank r's keyed slot i (< group_slots).
  group_slot& keyed(int r, std::size_t i) const noexcept {
    return *std::launder(reinterpret_cast<group_slot*>(bases_[static_cast<std::size_t>(r)] +
                                                       group_offset + i * group_slot_stride));
  }
  /// The payload behind a keyed slot's header.
  static std::byte* payload(group_slot& s) noexcept {
    return reinterpret_cast<std::byte*>(&s) + sizeof(group_slot);
  }
  int ranks() const noexcept { return static_cast<int>(bases_.size()); }

 private:
  std::vector<std::byte*> bases_;
};

/// The staging part of every rank's node region (src/coll/board/shared_memory_staged.cpp):
/// staging areas, each three progress counters (each on a line pair of its own: only the owner
/// writes them, each is polled by other ranks at its own step) and a ring of chunk slots the
/// staged collectives copy through. One area serves the staged collectives on the world, in
/// turn; each keyed slot (node_board::keyed) has one more for the group collective it holds.
class node_staging {
 public:
  /// The counters: chunks this rank staged (copied in), reduced (its segment combined) and
  /// copied out (released: it reads no rank's slot of those chunks again). The world area's
  /// count the chunks of every staged collective on the world so far, alike on every rank; a
  /// keyed slot's count from 0 for each collective it holds.
  enum counter : std::size_t { staged, reduced, copied };
  /// Bytes of the world area's ring: the most a collective's chunks in flight may take
  /// (chunk size x depth, CAIRN_COLL_CHUNK x CAIRN_COLL_DEPTH).
  static constexpr std::size_t ring_bytes = std::size_t{1} << 20;
  /// Bytes of a keyed slot's ring (chunks are made smaller or fewer to fit it).
  static constexpr std::size_t group_ring_bytes = std::size_t{1} << 18;
  /// Bytes before a ring: the counters' line pairs.
  static constexpr std::size_t counters_bytes = 3 * 128;
  /// Bytes from one keyed slot's area to the next.
  static constexpr std::size_t group_area_bytes = counters_bytes + group_ring_bytes;
  /// Bytes before the keyed slots' areas.
  static constexpr std::size_t group_offset = counters_bytes + ring_bytes;
  /// Bytes of a rank's part (a multiple of 128).
  static constexpr std::size_t part_bytes =
      group_offset + node_board::group_slots * group_area_bytes;

  node_staging() = default;
  /// The staging in the node's regions (its part of each).
  explicit node_staging(const node_regions& n) : bases_(n.parts(part_offset())) {}

  /// Where the staging sits in a node region (reserved at static initialization).
  static std::size_t part_offset() noexcept;
  /// Constructs the counters of one rank's part (its owner, before any rank reads it); the
  /// rings are left untouched (their pages are taken on first use).
  static void format(std::byte* part) noexcept {
    reset(part);
    for (std::size_t i = 0; i < node_board::group_slots; ++i)
      reset(part + group_offset + i * group_area_bytes);
  }
  /// Sets the counters of the area at `area` to 0 (its owner, before it publishes the area's
  /// use: a keyed slot's key).
  static void reset(std::byte* area) noexcept {
    for (std::size_t c = 0; c < 3; ++c) new (area + c * 128) std::atomic<std::uint64_t>{0};
  }
  /// Counter c of the area at `area`.
  static std::atomic<std::uint64_t>& word(std::byte* area, counter c) noexcept {
    return *std::launder(reinterpret_cast<std::atomic<std::uint64_t>*>(area + c * 128));
  }
  /// The ring of the area at `area`.
  static std::byte* ring(std::byte* area) noexcept { return area + counters_bytes; }

  /// Rank r's world area.
  std::byte* area(int r) const noexcept { return bases_[static_cast<std::size_t>(r)]; }
  /// Every rank's world area, by rank.
  const std::vector<std::byte*>& areas() const noexcept { return bases_; }
  /// Rank r's area of keyed slot i (< node_board::group_slots).
  std::byte* group_area(int r, std::size_t i) const noexcept {
    return area(r) + group_offset + i * group_area_bytes;
  }
  int ranks() const noexcept { return static_cast<int>(bases_.size()); }

 private:
  std::vector<std::byte*> bases_;
};

}  // namespace cairn::detail
