#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_scan_recursive_doubling(int p, int me, std::size_t bytes) {
  schedule s("scan/recursive_doubling", p, me);
  s.temp_bytes = me > 0 ? bytes : 0;
  const region out{slot::output, 0}, tmp{slot::temp, 0};
  // Hillis-Steele: the output holds the reduction over ranks (me - 2^k, me] after round k - 1;
  // in round k it goes to me + 2^k, and the partial of me - 2^k, the adjacent range on the
  // left, comes in and is folded in as the left operand. A rank stops receiving (sending) in
  // the first round whose partner would be below 0 (at or above p), and never resumes.
  s.copy({slot::input, 0}, out, bytes);
  bool pending = false;
  for (int d = 1; d < p; d <<= 1) {
    if (d > 1) s.begin_round();
    if (pending) s.reduce(tmp, out, bytes, /*from_is_left=*/true);
    pending = false;
    if (me + d < p) s.send(me + d, out, bytes);
    if (me - d >= 0) {
      s.recv(me - d, tmp, bytes);
      pending = true;
    }
  }
  if (pending) {
    s.begin_round();
    s.reduce(tmp, out, bytes, true);
  }
  return s;
}

}  // namespace cairn::coll
