#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_reduce_scatter_gather(int p, int me, int root, std::size_t bytes, std::size_t elem,
                                    bool commutative) {
  schedule s("reduce/reduce_scatter_gather", p, me);
  // Rabenseifner's reduce: reduce-scatter p blocks of whole elements, then gather the reduced
  // blocks to the root. The count % p elements left over go through a binomial reduce.
  const std::size_t count = bytes / elem, per = count / static_cast<std::size_t>(p) * elem;
  const std::size_t main = per * static_cast<std::size_t>(p);
  const region reduced{slot::temp, 0}, scratch{slot::temp, per};
  s.temp_bytes = per;
  // Every part runs, even when empty: the messages do not depend on the count, so a count that
  // differs across ranks is reported by a receiver instead of leaving ranks waiting.
  append(s,
         commutative && p > 2 ? plan_reduce_scatter_block_ring(p, me, per)
                              : plan_reduce_scatter_block_recursive_halving(p, me, per),
         {{slot::input, 0}, reduced, scratch});
  append(s, plan_gather_binomial(p, me, root, per), {reduced, {slot::output, 0}, scratch});
  append(s, plan_reduce_binomial(p, me, root, bytes - main, commutative),
         {{slot::input, main}, {slot::output, main}, scratch});
  return s;
}

}  // namespace cairn::coll
