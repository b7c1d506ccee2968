#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_bcast_binomial(int p, int me, int root, std::size_t bytes) {
  schedule s("bcast/binomial", p, me);
  const int v = (me - root + p) % p;  // rank relative to the root
  auto real = [&](int vr) { return (vr + root) % p; };
  int mask = 1;
  while (mask < p) {
    if (v & mask) {  // the parent is v without its lowest set bit
      s.recv(real(v - mask), {slot::output, 0}, bytes);
      break;
    }
    mask <<= 1;
  }
  s.begin_round();
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < p) s.send(real(v + mask), {slot::output, 0}, bytes);
  return s;
}

}  // namespace cairn::coll
