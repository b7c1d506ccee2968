#include "coll/algorithms/planners.hpp"

#include <algorithm>

namespace cairn::coll {

schedule plan_gather_binomial(int p, int me, int root, std::size_t block) {
  schedule s("gather/binomial", p, me);
  // The tree of the binomial broadcast, rooted at `root`, over relative ranks v: the children
  // of v are v + mask for the masks below v's lowest set bit, and the subtree of v is the
  // relative rank range [v, v + min(lowbit(v), p - v)). Each rank gathers its subtree's blocks
  // in relative order and hands them to its parent as one message.
  const int v = (me - root + p) % p;
  auto real = [&](int vr) { return (vr + root) % p; };
  auto sz = [](int blocks) { return static_cast<std::size_t>(blocks); };
  const region in{slot::input, 0};

  if (v != 0) {
    int mask = 1;
    while (!(v & mask)) mask <<= 1;  // v's lowest set bit: the parent is v - mask
    const int parent = real(v - mask);
    const int subtree = std::min(mask, p - v);
    if (subtree == 1) {  // a leaf sends its block straight from the input
      s.send(parent, in, block);
      return s;
    }
    // Scratch: the subtree's blocks in relative order, this rank's own first.
    s.temp_bytes = sz(subtree) * block;
    s.copy(in, {slot::temp, 0}, block);
    for (int m = 1; m < mask && v + m < p; m <<= 1)
      s.recv(real(v + m), {slot::temp, sz(m) * block}, sz(std::min(m, p - v - m)) * block);
    s.begin_round();
    s.send(parent, {slot::temp, 0}, s.temp_bytes);
    return s;
  }

  // The root: relative block u belongs in output block (u + root) % p. A child's range
  // [m, m + len) is contiguous in the output unless it wraps past the end; at most one child's
  // does, and only that one is received into scratch and copied into place in two pieces.
  s.copy(in, {slot::output, sz(root) * block}, block);
  int wrap_first = -1, wrap_len = 0;
  for (int m = 1; m < p; m <<= 1) {
    const int len = std::min(m, p - m);
    if (m + root < p && m + len + root > p) {
      wrap_first = m;
      wrap_len = len;
      s.temp_bytes = sz(len) * block;
      s.recv(real(m), {slot::temp, 0}, s.temp_bytes);
    } else {
      s.recv(real(m), {slot::output, sz(real(m)) * block}, sz(len) * block);
    }
  }
  if (wrap_first >= 0) {
    s.begin_round();
    const int head = p - (wrap_first + root);  // blocks before the wrap
    s.copy({slot::temp, 0}, {slot::output, sz(wrap_first + root) * block}, sz(head) * block);
    s.copy({slot::temp, sz(head) * block}, {slot::output, 0}, sz(wrap_len - head) * block);
  }
  return s;
}

}  // namespace cairn::coll
