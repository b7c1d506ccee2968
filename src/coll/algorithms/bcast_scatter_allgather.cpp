#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_bcast_scatter_allgather(int p, int me, int root, std::size_t bytes) {
  schedule s("bcast/scatter_allgather", p, me);
  if (p == 1) return s;
  // van de Geijn: scatter p chunks from the root (binomial), then allgather them (ring): each
  // rank moves about 2 bytes instead of log2 p x bytes. Chunks of ceil(bytes / p); when that
  // does not divide evenly, the chunks live in a padded copy T in scratch. The messages are the
  // same for every size (empty chunks too), so a size that differs across ranks is reported by
  // a receiver instead of leaving ranks waiting for messages that never come.
  const std::size_t chunk = (bytes + static_cast<std::size_t>(p) - 1) / static_cast<std::size_t>(p);
  const std::size_t padded = chunk * static_cast<std::size_t>(p);
  const bool direct = padded == bytes;
  const region T = direct ? region{slot::output, 0} : region{slot::temp, 0};
  const region scratch{slot::temp, direct ? 0 : padded};
  if (!direct) {
    s.temp_bytes = padded;
    if (me == root) s.copy({slot::output, 0}, T, bytes);
  }
  const region mine{T.slot, T.offset + static_cast<std::size_t>(me) * chunk};
  append(s, plan_scatter_binomial(p, me, root, chunk), {T, mine, scratch});
  append(s, plan_allgather_ring(p, me, chunk), {mine, T, scratch});
  if (!direct && me != root) {
    s.begin_round();
    s.copy(T, {slot::output, 0}, bytes);
  }
  return s;
}

}  // namespace cairn::coll
