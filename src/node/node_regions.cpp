#include "node/node_regions.hpp"

#include <cstdio>
#include <cstdlib>

namespace cairn::detail {

namespace {
struct part {
  std::size_t offset;
  void (*format)(std::byte*) noexcept;
};
struct layout {
  std::vector<part> parts;
  std::size_t bytes = 0;
  bool sized = false;  // region_bytes() was asked: a later part would not fit
};
// Made on first use: the parts' owners reserve during static initialization, in any order.
layout& the_layout() {
  static layout l;
  return l;
}
}  // namespace

std::size_t node_regions::reserve(std::size_t bytes, void (*format)(std::byte*) noexcept) {
  layout& l = the_layout();
  if (l.sized) {
    std::fputs("cairn: internal error: a node-memory part reserved after regions were sized\n",
               stderr);
    std::abort();
  }
  const std::size_t offset = l.bytes;
  l.parts.push_back({offset, format});
  l.bytes += (bytes + alignment - 1) / alignment * alignment;
  return offset;
}

std::size_t node_regions::region_bytes() noexcept {
  layout& l = the_layout();
  l.sized = true;
  return l.bytes;
}

void node_regions::format(std::byte* region) noexcept {
  for (const part& p : the_layout().parts) p.format(region + p.offset);
}

}  // namespace cairn::detail
