#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_count_check_dissemination(int p, int me, std::size_t bytes, int root) {
  schedule s("count_check/dissemination", p, me);
  // Scratch: this rank's running record, then the record received in a round.
  const region mine{slot::temp, 0}, theirs{slot::temp, signature_record_bytes};
  s.temp_bytes = 2 * signature_record_bytes;
  s.add({step_kind::signature, root, {}, mine, bytes, false});
  // Dissemination: in round k send the record to me + 2^k and fold in the one of me - 2^k;
  // min and max are idempotent, so after ceil(log2 p) rounds every rank holds the minimum and
  // maximum over all ranks, and all reach the same verdict.
  for (int d = 1; d < p; d <<= 1) {
    s.begin_round();
    if (d > 1)
      s.add({step_kind::signature_combine, -1, theirs, mine, signature_record_bytes, false});
    s.send((me + d) % p, mine, signature_record_bytes);
    s.recv((me - d + p) % p, theirs, signature_record_bytes);
  }
  s.begin_round();
  if (p > 1) s.add({step_kind::signature_combine, -1, theirs, mine, signature_record_bytes, false});
  s.add({step_kind::signature_verify, -1, {}, mine, signature_record_bytes, false});
  return s;
}

}  // namespace cairn::coll
