// route::hypercube — bit-fixing routing (AP 3.4) that works for any number of ranks.

#include <bit>

#include "cairn/msg/route.hpp"
#include "msg/rank_space.hpp"

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

namespace {
table_router make_hypercube(int me, int size) {
  const int bits = size > 1 ? std::bit_width(static_cast<unsigned>(size - 1)) : 1;
  return table_router(hypercube_next_hops(me, size), bits,
                      "hypercube of " + std::to_string(bits) + " dimensions");
}
}  // namespace

table_router route::hypercube::make(const world& w) const {
  return make_hypercube(w.rank(), w.size());
}
table_router route::hypercube::make(const group& g) const {
  const auto s = detail::space_of(g);  // checks membership
  return make_hypercube(s.me, s.size);
}

}  // namespace cairn::msg
