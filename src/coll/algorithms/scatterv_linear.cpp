#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_scatterv_linear(int p, int me, int root, const std::vector<std::size_t>& send_bytes,
                              const std::vector<std::size_t>& send_offsets,
                              std::size_t recv_bytes) {
  schedule s("scatterv/linear", p, me);
  if (me != root) {
    s.recv(root, {slot::output, 0}, recv_bytes);
    return s;
  }
  const auto at = [&](int r) { return static_cast<std::size_t>(r); };
  s.copy({slot::input, send_offsets[at(me)]}, {slot::output, 0}, send_bytes[at(me)]);
  // Farthest first is no better here (every send leaves the root): rank order.
  for (int r = 0; r < p; ++r)
    if (r != root) s.send(r, {slot::input, send_offsets[at(r)]}, send_bytes[at(r)]);
  return s;
}

}  // namespace cairn::coll
