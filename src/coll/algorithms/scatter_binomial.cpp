#include "coll/algorithms/planners.hpp"

#include <algorithm>

namespace cairn::coll {

schedule plan_scatter_binomial(int p, int me, int root, std::size_t block) {
  schedule s("scatter/binomial", p, me);
  // The gather tree run backwards (see plan_gather_binomial): each rank receives its
  // subtree's blocks in relative-rank order from its parent, keeps the first and forwards the
  // children's ranges, largest subtree first so that it can start forwarding soonest.
  const int v = (me - root + p) % p;
  auto real = [&](int vr) { return (vr + root) % p; };
  auto sz = [](int blocks) { return static_cast<std::size_t>(blocks); };
  const region out{slot::output, 0};

  if (v != 0) {
    int mask = 1;
    while (!(v & mask)) mask <<= 1;  // v's lowest set bit: the parent is v - mask
    const int parent = real(v - mask);
    const int subtree = std::min(mask, p - v);
    if (subtree == 1) {  // a leaf receives its block straight into the output
      s.recv(parent, out, block);
      return s;
    }
    s.temp_bytes = sz(subtree) * block;
    s.recv(parent, {slot::temp, 0}, s.temp_bytes);
    s.begin_round();
    s.copy({slot::temp, 0}, out, block);
    for (int m = mask >> 1; m > 0; m >>= 1)
      if (v + m < p)
        s.send(real(v + m), {slot::temp, sz(m) * block}, sz(std::min(m, p - v - m)) * block);
    return s;
  }

  // The root sends each child's range straight from the input, unless it wraps past the end
  // of the input (at most one does): that one is assembled in scratch first.
  s.copy({slot::input, sz(root) * block}, out, block);
  int top = 1;
  while (top < p) top <<= 1;
  for (int m = top >> 1; m > 0; m >>= 1) {
    const int len = std::min(m, p - m);
    if (m + root < p && m + len + root > p) {
      const int head = p - (m + root);  // blocks before the wrap
      s.temp_bytes = sz(len) * block;
      s.copy({slot::input, sz(m + root) * block}, {slot::temp, 0}, sz(head) * block);
      s.copy({slot::input, 0}, {slot::temp, sz(head) * block}, sz(len - head) * block);
      s.send(real(m), {slot::temp, 0}, s.temp_bytes);
    } else {
      s.send(real(m), {slot::input, sz(real(m)) * block}, sz(len) * block);
    }
  }
  return s;
}

}  // namespace cairn::coll
