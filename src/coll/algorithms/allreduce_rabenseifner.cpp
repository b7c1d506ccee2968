#include "coll/algorithms/compose.hpp"
#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_allreduce_rabenseifner(int p, int me, std::size_t bytes, std::size_t elem,
                                     bool commutative) {
  schedule s("allreduce/rabenseifner", p, me);
  // Reduce-scatter by recursive halving (operands in rank order, any operation), then allgather
  // by recursive doubling: each rank moves about 2 bytes in 2 log2 p steps. The count % p
  // elements left over go through a recursive-doubling allreduce of their own.
  const std::size_t count = bytes / elem, per = count / static_cast<std::size_t>(p) * elem;
  const std::size_t main = per * static_cast<std::size_t>(p);
  const region reduced{slot::temp, 0}, scratch{slot::temp, per};
  s.temp_bytes = per;
  // Every part runs, even when empty: the messages do not depend on the count, so a count that
  // differs across ranks is reported by a receiver instead of leaving ranks waiting.
  // In place (input = output) is safe: the input is read only before the allgather writes.
  append(s, plan_reduce_scatter_block_recursive_halving(p, me, per),
         {{slot::input, 0}, reduced, scratch});
  append(s, plan_allgather_recursive_doubling(p, me, per), {reduced, {slot::output, 0}, scratch});
  append(s, plan_allreduce_recursive_doubling(p, me, bytes - main, elem, commutative),
         {{slot::input, main}, {slot::output, main}, scratch});
  return s;
}

}  // namespace cairn::coll
