#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allgather_ring(int p, int me, std::size_t block) {
  schedule s("allgather/ring", p, me);
  auto at = [&](int b) {
    return region{slot::output, static_cast<std::size_t>(((b % p) + p) % p) * block};
  };
  s.copy({slot::input, 0}, at(me), block);
  // Step k: pass on the block received in step k - 1 (own block first), receive the next.
  const int right = (me + 1) % p, left = (me - 1 + p) % p;
  for (int k = 0; k < p - 1; ++k) {
    if (k > 0) s.begin_round();  // the copy above joins the first step
    s.send(right, at(me - k), block);
    s.recv(left, at(me - k - 1), block);
  }
  return s;
}

}  // namespace cairn::coll
