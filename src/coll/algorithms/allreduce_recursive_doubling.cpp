#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allreduce_recursive_doubling(int p, int me, std::size_t bytes, std::size_t,
                                           bool commutative) {
  schedule s(commutative ? "allreduce/recursive_doubling" : "allreduce/recursive_doubling_ordered",
             p, me);
  s.temp_bytes = bytes;
  const region out{slot::output, 0}, tmp{slot::temp, 0}, in{slot::input, 0};
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const int extra = p - p2;

  // Fold onto p2 "core" ranks. `v` is the rank in the butterfly (-1: folded away), `partner`
  // the rank this one folds with (-1: none), `partner_left` whether its data is the left operand.
  int v = -1, partner = -1;
  bool partner_left = false;
  if (commutative) {  // Aspen: ranks p2.. send to rank - p2
    if (me >= p2)
      partner = me - p2;
    else {
      v = me;
      if (me < extra) partner = me + p2;
    }
  } else {  // adjacent pairs keep rank order: 2i folds into 2i+1
    if (me < 2 * extra) {
      if (me % 2 == 0)
        partner = me + 1;
      else {
        v = me / 2;
        partner = me - 1;
        partner_left = true;
      }
    } else {
      v = me - extra;
    }
  }
  auto real = [&](int vr) {
    if (commutative) return vr;
    return vr < extra ? 2 * vr + 1 : vr + extra;
  };

  if (v < 0) {  // folded away: hand the data over, get the result back
    s.send(partner, in, bytes);
    s.begin_round();
    s.recv(partner, out, bytes);
    return s;
  }
  s.copy(in, out, bytes);
  bool pending_left = false;
  bool pending = false;
  if (partner >= 0) {
    s.recv(partner, tmp, bytes);
    pending = true;
    pending_left = partner_left;
  }
  for (int d = 1; d < p2; d <<= 1) {
    s.begin_round();
    if (pending) s.reduce(tmp, out, bytes, pending_left);
    const int pv = v ^ d;
    s.send(real(pv), out, bytes);
    s.recv(real(pv), tmp, bytes);
    pending = true;
    pending_left = pv < v;
  }
  s.begin_round();
  if (pending) s.reduce(tmp, out, bytes, pending_left);
  if (partner >= 0) s.send(partner, out, bytes);
  return s;
}

}  // namespace cairn::coll
