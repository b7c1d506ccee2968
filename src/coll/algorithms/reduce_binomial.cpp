#include "coll/algorithms/planners.hpp"

#include <vector>

namespace cairn::coll {

schedule plan_reduce_binomial(int p, int me, int root, std::size_t bytes, bool commutative) {
  schedule s("reduce/binomial", p, me);
  // A commutative tree is rooted at `root` directly; otherwise at 0, whose subtrees are
  // contiguous rank ranges combined in rank order, and the result moves to `root` at the end.
  const int tree_root = commutative ? root : 0;
  const int v = (me - tree_root + p) % p;
  auto real = [&](int vr) { return (vr + tree_root) % p; };
  // The accumulator: the output buffer on the root, scratch elsewhere (their output may be
  // empty). Scratch layout: [accumulator][one slot per child].
  const bool result_here = me == tree_root && me == root;
  const region acc = result_here ? region{slot::output, 0} : region{slot::temp, 0};
  std::size_t next_temp = result_here ? 0 : bytes;

  std::vector<region> children;
  int mask = 1;
  int parent = -1;
  for (; mask < p; mask <<= 1) {
    if (v & mask) {
      parent = real(v - mask);
      break;
    }
    if (v + mask < p) {
      children.push_back({slot::temp, next_temp});
      s.recv(real(v + mask), children.back(), bytes);
      next_temp += bytes;
    }
  }
  s.copy({slot::input, 0}, acc, bytes);  // local steps run first in the round
  s.begin_round();
  // Children in increasing mask order cover increasing rank ranges: right operands.
  for (const region& c : children) s.reduce(c, acc, bytes, /*from_is_left=*/false);
  if (parent >= 0) s.send(parent, acc, bytes);
  if (!commutative && root != 0) {
    s.begin_round();
    if (me == 0) s.send(root, acc, bytes);
    if (me == root) s.recv(0, {slot::output, 0}, bytes);
  }
  s.temp_bytes = next_temp;
  return s;
}

}  // namespace cairn::coll
