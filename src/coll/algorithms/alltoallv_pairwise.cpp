#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_alltoallv_pairwise(int p, int me, const std::vector<std::size_t>& send_bytes,
                                 const std::vector<std::size_t>& send_offsets,
                                 const std::vector<std::size_t>& recv_bytes,
                                 const std::vector<std::size_t>& recv_offsets) {
  schedule s("alltoallv/pairwise", p, me);
  const auto at = [](int r) { return static_cast<std::size_t>(r); };
  s.copy({slot::input, send_offsets[at(me)]}, {slot::output, recv_offsets[at(me)]},
         recv_bytes[at(me)]);
  // Step k: send to me + k, receive from me - k (empty blocks too, so a count that differs
  // between sender and receiver is seen by the receiver instead of leaving it waiting).
  for (int k = 1; k < p; ++k) {
    if (k > 1) s.begin_round();  // the copy above joins the first step
    const int to = (me + k) % p, from = (me - k + p) % p;
    s.send(to, {slot::input, send_offsets[at(to)]}, send_bytes[at(to)]);
    s.recv(from, {slot::output, recv_offsets[at(from)]}, recv_bytes[at(from)]);
  }
  return s;
}

}  // namespace cairn::coll
