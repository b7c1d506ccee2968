#include "coll/planners.hpp"

namespace cairn::coll {

schedule plan_reduce_scatter_block_ring(int p, int me, std::size_t block) {
  schedule s("reduce_scatter_block/ring", p, me);
  const region out{slot::output, 0};
  auto in = [&](int b) { return region{slot::input, static_cast<std::size_t>(((b % p) + p) % p) * block}; };
  if (p == 1) {
    s.copy(in(0), out, block);
    return s;
  }
  // The partial sum of block b starts at rank b + 1 and travels right, each rank folding in
  // its own input block, until it reaches rank b: in step k this rank sends block me - k - 1
  // and receives block me - k - 2. Partials alternate between two scratch slots (a slot is
  // received into while the other is sent from); the last one, block me, lands in the output.
  const int right = (me + 1) % p, left = (me - 1 + p) % p;
  s.temp_bytes = p > 2 ? 2 * block : 0;
  auto slot_of = [&](int k) { return region{slot::temp, static_cast<std::size_t>(k % 2) * block}; };
  for (int k = 0; k < p - 1; ++k) {
    if (k > 0) {
      s.begin_round();
      s.reduce(in(me - k - 1), slot_of(k - 1), block, /*from_is_left=*/false);
    }
    s.send(right, k == 0 ? in(me - 1) : slot_of(k - 1), block);
    s.recv(left, k == p - 2 ? out : slot_of(k), block);
  }
  s.begin_round();
  s.reduce(in(me), out, block, false);
  return s;
}

}  // namespace cairn::coll
