#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_reduce_scatter_block_ring(int p, int me, std::size_t block, bool in_place) {
  schedule s("reduce_scatter_block/ring", p, me);
  const region out{slot::output, 0};
  auto in = [&](int b) {
    return region{slot::input, static_cast<std::size_t>(((b % p) + p) % p) * block};
  };
  if (p == 1) {
    s.copy(in(0), out, block);
    return s;
  }
  // The partial sum of block b starts at rank b + 1 and travels right, each rank folding in
  // its own input block, until it reaches rank b: in step k this rank sends block me - k - 1
  // and receives block me - k - 2. Partials alternate between two scratch slots (a slot is
  // received into while the other is sent from); the last one, block me, lands in the output.
  // In place the output is input block 0, which may still be read: the last partial comes
  // into scratch as well, and the result is copied out once every input block was read.
  const int right = (me + 1) % p, left = (me - 1 + p) % p;
  s.temp_bytes = p > 2 ? 2 * block : in_place ? block : 0;
  auto slot_of = [&](int k) { return region{slot::temp, static_cast<std::size_t>(k % 2) * block}; };
  const region last = in_place ? slot_of(p - 2) : out;
  for (int k = 0; k < p - 1; ++k) {
    if (k > 0) {
      s.begin_round();
      s.reduce(in(me - k - 1), slot_of(k - 1), block, /*from_is_left=*/false);
    }
    s.send(right, k == 0 ? in(me - 1) : slot_of(k - 1), block);
    s.recv(left, k == p - 2 ? last : slot_of(k), block);
  }
  s.begin_round();
  s.reduce(in(me), last, block, false);
  if (in_place) s.copy(last, out, block);
  return s;
}

}  // namespace cairn::coll
