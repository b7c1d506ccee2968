#include "coll/algorithms/planners.hpp"

#include <algorithm>
#include <vector>

namespace cairn::coll {

schedule plan_allreduce_ring(int p, int me, std::size_t bytes, std::size_t elem) {
  schedule s("allreduce/ring", p, me);
  const region in{slot::input, 0};
  s.copy(in, {slot::output, 0}, bytes);
  if (p == 1) return s;
  // p chunks of whole elements; the first `rem` chunks get one element more.
  const std::size_t count = bytes / elem;
  std::vector<std::size_t> off(static_cast<std::size_t>(p) + 1, 0);
  for (int c = 0; c < p; ++c)
    off[static_cast<std::size_t>(c) + 1] =
        off[static_cast<std::size_t>(c)] +
        (count / static_cast<std::size_t>(p) +
         (static_cast<std::size_t>(c) < count % static_cast<std::size_t>(p) ? 1 : 0)) *
            elem;
  auto chunk = [&](int c) { return ((c % p) + p) % p; };
  auto at = [&](int c) { return off[static_cast<std::size_t>(chunk(c))]; };
  auto len = [&](int c) { return off[static_cast<std::size_t>(chunk(c)) + 1] - at(c); };
  const int right = (me + 1) % p, left = (me - 1 + p) % p;
  std::size_t max_chunk = 0;
  for (int c = 0; c < p; ++c) max_chunk = std::max(max_chunk, len(c));
  s.temp_bytes = max_chunk;
  const region tmp{slot::temp, 0};
  // Reduce-scatter: in step k send chunk me-k, receive chunk me-k-1 and fold it in.
  for (int k = 0; k < p - 1; ++k) {
    if (k > 0) {
      s.begin_round();
      s.reduce(tmp, {slot::output, at(me - k)}, len(me - k), /*from_is_left=*/false);
    }
    s.send(right, {slot::output, at(me - k)}, len(me - k));
    s.recv(left, tmp, len(me - k - 1));
  }
  s.begin_round();
  s.reduce(tmp, {slot::output, at(me - p + 1)}, len(me - p + 1), false);
  // Now chunk me+1 is complete here. Allgather: pass complete chunks around the ring.
  for (int k = 0; k < p - 1; ++k) {
    if (k > 0) s.begin_round();
    s.send(right, {slot::output, at(me + 1 - k)}, len(me + 1 - k));
    s.recv(left, {slot::output, at(me - k)}, len(me - k));
  }
  return s;
}

}  // namespace cairn::coll
