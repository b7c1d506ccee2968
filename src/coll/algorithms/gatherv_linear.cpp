#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_gatherv_linear(int p, int me, int root, std::size_t send_bytes,
                             const std::vector<std::size_t>& recv_bytes,
                             const std::vector<std::size_t>& recv_offsets) {
  schedule s("gatherv/linear", p, me);
  if (me != root) {
    // Every rank sends, even zero bytes: the root then sees a mismatch instead of waiting.
    s.send(root, {slot::input, 0}, send_bytes);
    return s;
  }
  const auto at = [&](int r) { return static_cast<std::size_t>(r); };
  s.copy({slot::input, 0}, {slot::output, recv_offsets[at(me)]}, recv_bytes[at(me)]);
  // The root posts every receive at once: blocks of different sizes make a tree unbalanced,
  // and the root's link carries all the data anyway.
  for (int r = 0; r < p; ++r)
    if (r != root) s.recv(r, {slot::output, recv_offsets[at(r)]}, recv_bytes[at(r)]);
  return s;
}

}  // namespace cairn::coll
