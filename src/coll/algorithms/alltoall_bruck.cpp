#include "coll/algorithms/planners.hpp"

#include <algorithm>

namespace cairn::coll {

schedule plan_alltoall_bruck(int p, int me, std::size_t block) {
  schedule s("alltoall/bruck", p, me);
  const auto sz = [](int v) { return static_cast<std::size_t>(v); };
  // Scratch: W, the p blocks in rotated order (W[i] is bound for rank me + i), then a packing
  // buffer S and a receive buffer R for the blocks of one step.
  int most = 0;  // most blocks moved in one step
  for (int k = 1; k < p; k <<= 1) {
    int n = 0;
    for (int i = 0; i < p; ++i) n += (i & k) != 0;
    most = std::max(most, n);
  }
  const std::size_t W = 0, S = sz(p) * block, R = S + sz(most) * block;
  s.temp_bytes = R + sz(most) * block;
  s.copy({slot::input, sz(me) * block}, {slot::temp, W}, sz(p - me) * block);
  s.copy({slot::input, 0}, {slot::temp, W + sz(p - me) * block}, sz(me) * block);
  // Step k: the blocks whose index has bit k set move k ranks on (to me + k). After all steps
  // W[i] holds the block that rank me - i sent to this rank.
  auto each_moved = [&](int k, auto&& f) {
    int j = 0;
    for (int i = 0; i < p; ++i)
      if (i & k) f(i, j++);
  };
  int prev = 0;
  for (int k = 1; k < p; k <<= 1) {
    s.begin_round();
    if (prev)  // unpack the previous step's blocks
      each_moved(prev, [&](int i, int j) {
        s.copy({slot::temp, R + sz(j) * block}, {slot::temp, W + sz(i) * block}, block);
      });
    int n = 0;
    each_moved(k, [&](int i, int j) {
      s.copy({slot::temp, W + sz(i) * block}, {slot::temp, S + sz(j) * block}, block);
      n = j + 1;
    });
    s.send((me + k) % p, {slot::temp, S}, sz(n) * block);
    s.recv((me - k + p) % p, {slot::temp, R}, sz(n) * block);
    prev = k;
  }
  s.begin_round();
  if (prev)
    each_moved(prev, [&](int i, int j) {
      s.copy({slot::temp, R + sz(j) * block}, {slot::temp, W + sz(i) * block}, block);
    });
  for (int i = 0; i < p; ++i)  // out[me - i] = W[i]
    s.copy({slot::temp, W + sz(i) * block}, {slot::output, sz((me - i + p) % p) * block}, block);
  return s;
}

}  // namespace cairn::coll
