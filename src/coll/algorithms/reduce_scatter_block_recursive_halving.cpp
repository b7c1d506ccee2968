#include "coll/algorithms/planners.hpp"

#include <algorithm>
#include <vector>

namespace cairn::coll {

schedule plan_reduce_scatter_block_recursive_halving(int p, int me, std::size_t block) {
  schedule s("reduce_scatter_block/recursive_halving", p, me);
  const region in{slot::input, 0}, out{slot::output, 0};
  auto sz = [](int v) { return static_cast<std::size_t>(v); };
  if (p == 1) {
    s.copy(in, out, block);
    return s;
  }
  int p2 = 1, levels = 0;
  while (p2 * 2 <= p) {
    p2 *= 2;
    ++levels;
  }
  const int extra = p - p2;

  // Fold onto p2 "core" ranks in adjacent pairs, so that operands stay in rank order: rank 2i
  // (i < extra) hands its whole input to 2i + 1 and gets its block back at the end.
  if (me < 2 * extra && me % 2 == 0) {
    s.send(me + 1, in, sz(p) * block);
    s.begin_round();
    s.recv(me + 1, out, block);
    return s;
  }
  const bool folds = me < 2 * extra;  // receives the input of me - 1
  const int v = folds ? me / 2 : me - extra;
  auto real = [&](int vr) { return vr < extra ? 2 * vr + 1 : vr + extra; };
  // Core rank g owns "group" g: the blocks of the real ranks it stands for (2g and 2g + 1 for
  // g < extra, else g + extra), contiguous in the input.
  auto first_block = [&](int g) { return g < extra ? 2 * g : g + extra; };
  auto group_blocks = [&](int g) { return g < extra ? 2 : 1; };

  // Halving with increasing distance 1, 2, 4, ... keeps every partial result a reduction over
  // a contiguous range of ranks (the partner's range is adjacent, on the left when the
  // partner is lower), as a non-commutative operation needs. In the step with distance 2^j a
  // rank keeps the groups whose bit j matches its own and sends the others: with the groups
  // laid out in scratch in bit-reversed order, what it keeps and what it sends are both one
  // contiguous range (the lower or upper half of the current one).
  auto rev = [&](int g) {
    int r = 0;
    for (int b = 0; b < levels; ++b)
      if (g & (1 << b)) r |= 1 << (levels - 1 - b);
    return r;
  };
  std::vector<std::size_t> off(sz(p2) + 1, 0);  // byte offset of each position in scratch
  for (int pos = 0; pos < p2; ++pos)
    off[sz(pos) + 1] = off[sz(pos)] + sz(group_blocks(rev(pos))) * block;
  auto acc = [&](int pos) { return region{slot::temp, off[sz(pos)]}; };
  // Scratch: [accumulator: all p blocks][receive area: the folded input, then halves].
  const region recv_area{slot::temp, sz(p) * block};
  std::size_t recv_bytes = folds ? sz(p) * block : 0;

  for (int pos = 0; pos < p2; ++pos) {
    const int g = rev(pos);
    s.copy({slot::input, sz(first_block(g)) * block}, acc(pos), sz(group_blocks(g)) * block);
  }
  if (folds) {
    s.recv(me - 1, recv_area, sz(p) * block);
    s.begin_round();
    for (int pos = 0; pos < p2; ++pos) {
      const int g = rev(pos);
      s.reduce({slot::temp, recv_area.offset + sz(first_block(g)) * block}, acc(pos),
               sz(group_blocks(g)) * block, /*from_is_left=*/true);
    }
  }
  int lo = 0, hi = p2;  // the positions this rank still holds
  bool pending_left = false;
  const bool direct = group_blocks(v) == 1;  // the last half is this rank's block: into the output
  for (int j = 0; j < levels; ++j) {
    if (j > 0) {
      s.begin_round();
      s.reduce(recv_area, acc(lo), off[sz(hi)] - off[sz(lo)], pending_left);
    }
    const int partner = v ^ (1 << j), mid = (lo + hi) / 2;
    const bool keep_low = !(v & (1 << j));
    const int klo = keep_low ? lo : mid, khi = keep_low ? mid : hi;
    const int slo = keep_low ? mid : lo, shi = keep_low ? hi : mid;
    s.send(real(partner), acc(slo), off[sz(shi)] - off[sz(slo)]);
    const std::size_t keep_bytes = off[sz(khi)] - off[sz(klo)];
    const bool last = j == levels - 1;
    s.recv(real(partner), last && direct ? out : recv_area, keep_bytes);
    if (!(last && direct)) recv_bytes = std::max(recv_bytes, keep_bytes);
    pending_left = partner < v;
    lo = klo;
    hi = khi;
  }
  s.begin_round();
  if (direct) {  // out = partner's op mine, or mine op partner's
    s.reduce(acc(lo), out, block, /*from_is_left=*/!pending_left);
  } else {  // two blocks: 2v for the folded rank me - 1, 2v + 1 for this one
    s.reduce(recv_area, acc(lo), 2 * block, pending_left);
    s.copy({slot::temp, off[sz(lo)] + block}, out, block);
    s.send(me - 1, acc(lo), block);
  }
  s.temp_bytes = sz(p) * block + recv_bytes;
  return s;
}

}  // namespace cairn::coll
