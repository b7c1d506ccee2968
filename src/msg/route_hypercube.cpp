// route::hypercube — bit-fixing routing (AP 3.4) that works for any number of ranks.

#include <bit>

#include "cairn/msg/route.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn::msg {

std::vector<int> hypercube_next_hops(int me, int ranks) {
  std::vector<int> next(static_cast<std::size_t>(ranks));
  const auto m = static_cast<unsigned>(me);
  for (int dest = 0; dest < ranks; ++dest) {
    const auto d = static_cast<unsigned>(dest);
    // Clearing a bit makes the rank smaller (still < ranks); once only bits to set remain,
    // every intermediate is a subset of dest's bits, hence <= dest. So every hop exists.
    const unsigned clear = m & ~d, set = d & ~m;
    unsigned hop = m;
    if (clear)
      hop = m & ~std::bit_floor(clear);
    else if (set)
      hop = m | std::bit_floor(set);
    next[static_cast<std::size_t>(dest)] = static_cast<int>(hop);
  }
  return next;
}

table_router route::hypercube::make(const world& w) const {
  const int bits = w.size() > 1 ? std::bit_width(static_cast<unsigned>(w.size() - 1)) : 1;
  return table_router(hypercube_next_hops(w.rank(), w.size()), bits,
                      "hypercube of " + std::to_string(bits) + " dimensions");
}

}  // namespace cairn::msg
