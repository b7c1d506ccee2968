#pragma once
// Memory every rank of a node can read and write: one region per rank, laid out as the parts
// its users reserved. The collectives' board (src/coll/board/board_layout.hpp), the array
// layer's offer words (src/array/offer_words.hpp) and the runtime's published waits
// (src/runtime/run_state.hpp) each reserve a part and own its layout; this
// component only sizes, places and formats the regions. The transports allocate them: the
// threads engine in one allocation, the MPI engine as an MPI-3 shared-memory window when all
// processes sit on one node.

#include <cstddef>
#include <vector>

namespace cairn::detail {

class node_regions {
 public:
  /// Alignment of every region and part (a cache-line pair: no false sharing across parts).
  static constexpr std::size_t alignment = 128;

  /// Reserves a part of `bytes` in every rank's region, whose words `format` constructs (by the
  /// region's owner, before any rank reads it); returns the part's offset in a region. Called
  /// during static initialization by the parts' owners, before any region exists.
  static std::size_t reserve(std::size_t bytes, void (*format)(std::byte* part) noexcept);
  /// Bytes a rank's region needs (a multiple of `alignment`).
  static std::size_t region_bytes() noexcept;
  /// Constructs every part of one region (its owner, before any rank reads it).
  static void format(std::byte* region) noexcept;

  node_regions() = default;
  /// The regions at `bases[r]` (region_bytes() each, `alignment`-aligned), formatted.
  explicit node_regions(std::vector<std::byte*> bases) : bases_(std::move(bases)) {}

  /// Rank r's region.
  std::byte* region(int r) const noexcept { return bases_[static_cast<std::size_t>(r)]; }
  /// Every rank's part at `offset` (what a part's owner keeps to reach its words).
  std::vector<std::byte*> parts(std::size_t offset) const {
    std::vector<std::byte*> p;
    p.reserve(bases_.size());
    for (std::byte* b : bases_) p.push_back(b + offset);
    return p;
  }
  int ranks() const noexcept { return static_cast<int>(bases_.size()); }

 private:
  std::vector<std::byte*> bases_;
};

}  // namespace cairn::detail
