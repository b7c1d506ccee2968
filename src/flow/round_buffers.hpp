#pragma once
// The reduce modules' round buffers (src/flow/runner.cpp), kept by their graph between runs:
// once a graph has run, its rounds take their buffers from here, so a steady run neither
// allocates nor faults their pages in, and nothing is zeroed.

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace cairn::flow::detail {

class round_buffers {
 public:
  /// One round's bytes (uninitialized when new).
  struct buffer {
    std::unique_ptr<std::byte[]> data;
    std::size_t size = 0;
    [[nodiscard]] std::byte* get() const noexcept { return data.get(); }
  };

  /// A kept buffer of exactly `bytes`, else a new one.
  buffer take(std::size_t bytes) {
    if (bytes == 0) return {};
    for (auto& [size, kept] : sizes_)
      if (size == bytes && !kept.empty()) {
        buffer b = std::move(kept.back());
        kept.pop_back();
        held_ -= bytes;
        return b;
      }
    return {std::unique_ptr<std::byte[]>(new std::byte[bytes]), bytes};
  }
  /// Keeps `b` for a later round while the kept bytes stay within max_held_bytes.
  void give(buffer&& b) {
    if (!b.data || held_ + b.size > max_held_bytes) return;
    held_ += b.size;
    for (auto& [size, kept] : sizes_)
      if (size == b.size) {
        kept.push_back(std::move(b));
        return;
      }
    sizes_.emplace_back(b.size, std::vector<buffer>{}).second.push_back(std::move(b));
  }

  /// The most a graph keeps (a producer that runs ahead holds a buffer per round it started).
  static constexpr std::size_t max_held_bytes = std::size_t{256} << 20;

 private:
  std::vector<std::pair<std::size_t, std::vector<buffer>>> sizes_;  // by size: few sizes
  std::size_t held_ = 0;
};

}  // namespace cairn::flow::detail
