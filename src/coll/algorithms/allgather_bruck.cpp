#include "coll/algorithms/planners.hpp"

#include <algorithm>

namespace cairn::coll {

schedule plan_allgather_bruck(int p, int me, std::size_t block) {
  schedule s("allgather/bruck", p, me);
  auto sz = [](int blocks) { return static_cast<std::size_t>(blocks); };
  // Working buffer B in rotated order: B[i] is the block of rank (me + i) % p. On rank 0 that
  // is the output order, so B is the output there; elsewhere it is scratch, rotated into the
  // output at the end.
  const slot b = me == 0 ? slot::output : slot::temp;
  if (b == slot::temp) s.temp_bytes = sz(p) * block;
  s.copy({slot::input, 0}, {b, 0}, block);
  // Step with distance d: B[0, d) holds blocks me .. me + d - 1; send them (at most p - d of
  // them) to me - d, and receive from me + d its first blocks, which are B[d, 2d) here.
  for (int d = 1; d < p; d <<= 1) {
    if (d > 1) s.begin_round();  // the copy above joins the first step
    const std::size_t bytes = sz(std::min(d, p - d)) * block;
    s.send((me - d + p) % p, {b, 0}, bytes);
    s.recv((me + d) % p, {b, sz(d) * block}, bytes);
  }
  if (b == slot::temp) {  // out[(me + i) % p] = B[i]
    s.begin_round();
    s.copy({slot::temp, 0}, {slot::output, sz(me) * block}, sz(p - me) * block);
    s.copy({slot::temp, sz(p - me) * block}, {slot::output, 0}, sz(me) * block);
  }
  return s;
}

}  // namespace cairn::coll
