#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allgather_recursive_doubling(int p, int me, std::size_t block) {
  schedule s("allgather/recursive_doubling", p, me);
  const auto sz = [](int v) { return static_cast<std::size_t>(v); };
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const int extra = p - p2;
  // Ranks beyond the largest power of two hand their block to rank - p2 and get the whole
  // result back from it at the end (Aspen's fold, section 2.1).
  if (me >= p2) {
    s.send(me - p2, {slot::input, 0}, block);
    s.begin_round();
    s.recv(me - p2, {slot::output, 0}, sz(p) * block);
    return s;
  }
  // Core rank c holds a unit: its own block, followed (when p is not a power of two) by the
  // block of rank c + p2. Units lie in core-rank order, in the output for a power of two, else
  // in scratch, so that the d units a rank holds before the step of distance d are contiguous.
  const bool folded = extra > 0;
  const std::size_t unit = folded ? 2 * block : block;
  const slot w = folded ? slot::temp : slot::output;
  if (folded) s.temp_bytes = sz(p2) * unit;
  s.copy({slot::input, 0}, {w, sz(me) * unit}, block);
  if (me < extra) s.recv(me + p2, {w, sz(me) * unit + block}, block);
  for (int d = 1; d < p2; d <<= 1) {
    s.begin_round();
    const int partner = me ^ d;
    const int mine = me & ~(d - 1), theirs = partner & ~(d - 1);  // first units held
    s.send(partner, {w, sz(mine) * unit}, sz(d) * unit);
    s.recv(partner, {w, sz(theirs) * unit}, sz(d) * unit);
  }
  if (folded) {  // unpack the units into rank order, then serve the folded partner
    s.begin_round();
    for (int c = 0; c < p2; ++c) {
      s.copy({slot::temp, sz(c) * unit}, {slot::output, sz(c) * block}, block);
      if (c < extra)
        s.copy({slot::temp, sz(c) * unit + block}, {slot::output, sz(c + p2) * block}, block);
    }
    if (me < extra) s.send(me + p2, {slot::output, 0}, sz(p) * block);
  }
  return s;
}

}  // namespace cairn::coll
