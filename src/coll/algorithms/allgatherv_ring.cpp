#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allgatherv_ring(int p, int me, const std::vector<std::size_t>& bytes,
                              const std::vector<std::size_t>& offsets) {
  schedule s("allgatherv/ring", p, me);
  const auto wrap = [&](int b) { return static_cast<std::size_t>(((b % p) + p) % p); };
  const auto at = [&](int b) { return region{slot::output, offsets[wrap(b)]}; };
  const auto len = [&](int b) { return bytes[wrap(b)]; };
  s.copy({slot::input, 0}, at(me), len(me));
  // Step k: pass on the block received in step k - 1 (own block first), receive the next;
  // every rank knows every size, so sender and receiver agree without a size exchange.
  const int right = (me + 1) % p, left = (me - 1 + p) % p;
  for (int k = 0; k < p - 1; ++k) {
    if (k > 0) s.begin_round();  // the copy above joins the first step
    s.send(right, at(me - k), len(me - k));
    s.recv(left, at(me - k - 1), len(me - k - 1));
  }
  return s;
}

}  // namespace cairn::coll
