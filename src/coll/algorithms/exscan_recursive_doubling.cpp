#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_exscan_recursive_doubling(int p, int me, std::size_t bytes) {
  schedule s("exscan/recursive_doubling", p, me);
  // The scan's recursive doubling with two partials: the inclusive one over ranks
  // (me - 2^k, me], which is sent, and the exclusive one over (me - 2^k, me), the result, in the
  // output. Rank 0 receives nothing and never writes its output; it always sends its input.
  // The first partial received (from me - 1) goes straight into the output; later ones come
  // into scratch and are folded into both partials as the left operand. The inclusive partial
  // is kept only while it will still be sent.
  const region in{slot::input, 0}, out{slot::output, 0};
  const bool keeps_incl = me >= 1 && me + 2 < p;
  const region incl{slot::temp, 0}, tmp{slot::temp, keeps_incl ? bytes : 0};
  s.temp_bytes = (keeps_incl ? bytes : 0) + (me >= 2 ? bytes : 0);
  enum { none, into_output, into_temp } pending = none;
  bool received = false;
  for (int d = 1; d < p; d <<= 1) {
    if (d > 1) s.begin_round();
    const bool sends = me + d < p;
    if (pending == into_output && sends) {  // incl = (me - 1) op me
      s.copy(in, incl, bytes);
      s.reduce(out, incl, bytes, /*from_is_left=*/true);
    } else if (pending == into_temp) {
      s.reduce(tmp, out, bytes, true);
      if (sends) s.reduce(tmp, incl, bytes, true);
    }
    pending = none;
    if (sends) s.send(me + d, received ? incl : in, bytes);
    if (me - d >= 0) {
      s.recv(me - d, received ? tmp : out, bytes);
      pending = received ? into_temp : into_output;
      received = true;
    }
  }
  if (pending == into_temp) {
    s.begin_round();
    s.reduce(tmp, out, bytes, true);
  }
  return s;
}

}  // namespace cairn::coll
