#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_alltoall_pairwise(int p, int me, std::size_t block) {
  schedule s("alltoall/pairwise", p, me);
  auto off = [&](int r) { return static_cast<std::size_t>(r) * block; };
  s.copy({slot::input, off(me)}, {slot::output, off(me)}, block);
  // Step k: send to me + k, receive from me - k, so every rank sends and receives exactly one
  // block per step and every ordered pair meets once.
  for (int k = 1; k < p; ++k) {
    if (k > 1) s.begin_round();  // the copy above joins the first step
    const int to = (me + k) % p, from = (me - k + p) % p;
    s.send(to, {slot::input, off(to)}, block);
    s.recv(from, {slot::output, off(from)}, block);
  }
  return s;
}

}  // namespace cairn::coll
