#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_barrier_dissemination(int p, int me) {
  schedule s("barrier/dissemination", p, me);
  // Round k: tell rank me + 2^k, hear from me - 2^k. After ceil(log2 p) rounds every rank has
  // heard, transitively, from every other.
  for (int d = 1; d < p; d <<= 1) {
    s.begin_round();
    s.send((me + d) % p, {slot::input, 0}, 0);
    s.recv((me - d + p) % p, {slot::temp, 0}, 0);
  }
  return s;
}

}  // namespace cairn::coll
