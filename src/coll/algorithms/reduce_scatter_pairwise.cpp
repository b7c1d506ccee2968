#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_reduce_scatter_pairwise(int p, int me, const std::vector<std::size_t>& bytes) {
  schedule s("reduce_scatter/pairwise", p, me);
  const auto at = [](int r) { return static_cast<std::size_t>(r); };
  std::vector<std::size_t> offset(at(p) + 1, 0);  // block r of the input: [offset[r], offset[r+1])
  for (int r = 0; r < p; ++r) offset[at(r) + 1] = offset[at(r)] + bytes[at(r)];
  const std::size_t mine = bytes[at(me)];
  // Every other rank's block for this rank lands in scratch, in rank order without this rank.
  const auto held = [&](int r) {
    return r == me ? region{slot::input, offset[at(me)]}
                   : region{slot::temp, at(r < me ? r : r - 1) * mine};
  };
  s.temp_bytes = at(p - 1) * mine;
  for (int r = 0; r < p; ++r)
    if (r != me) {
      s.send(r, {slot::input, offset[at(r)]}, bytes[at(r)]);
      s.recv(r, held(r), mine);
    }
  // Fold from the last rank down, each operand on the left: in_0 op (in_1 op (... op in_p-1)),
  // rank order for any associative operation.
  s.begin_round();
  s.copy(held(p - 1), {slot::output, 0}, mine);
  for (int r = p - 2; r >= 0; --r)
    s.reduce(held(r), {slot::output, 0}, mine, /*from_is_left=*/true);
  return s;
}

}  // namespace cairn::coll
