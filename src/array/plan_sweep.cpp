// The per-dimension merge sweep (FALLS / grid cover): the block boundaries of the source and
// the destination distribution, merged over one period lcm(ks*gs, kd*gd) (or the whole extent
// when that is shorter), cut the dimension into segments that each lie in one source block and
// one destination block. The period's segments, grouped by (source, destination) coordinate
// pair, are the template: period r repeats it with local indices shifted by r * period / g on
// each side, so unrolling costs no division. Cost O(blocks + output).
#include <algorithm>
#include <numeric>

#include "cairn/array/plan.hpp"

namespace cairn::detail {

namespace {

// One segment of the first period: global [a, b), local starts on both sides.
struct segment {
  std::int64_t a, b, src, dst;
};

// Length of the repeating pattern of one side (a replicated side never repeats within n).
std::int64_t period_of(const dim_map& m) {
  return m.rep ? std::max<std::int64_t>(m.n, 1) : m.k * m.g;
}

}  // namespace

dim_plan sweep_dimension(const dim_map& s, const dim_map& d) {
  dim_plan out;
  out.gs = s.g;
  out.gd = d.g;
  const std::size_t pairs = static_cast<std::size_t>(s.g) * static_cast<std::size_t>(d.g);
  const std::int64_t n = s.n;

  // The template: one period of segments, tagged by pair.
  const std::int64_t ps = period_of(s), pd = period_of(d);
  const std::int64_t gcd = std::gcd(ps, pd);
  const std::int64_t period = (ps / gcd > n / pd) ? n : std::min(n, ps / gcd * pd);
  std::vector<std::uint32_t> pair_of;
  std::vector<segment> segs;
  for (std::int64_t a = 0; a < period;) {
    const std::int64_t next_s = s.rep ? period : (a / s.k + 1) * s.k;
    const std::int64_t next_d = d.rep ? period : (a / d.k + 1) * d.k;
    const std::int64_t b = std::min({next_s, next_d, period});
    const segment seg{a, b, s.local(a), d.local(a)};
    for (int cd = d.rep ? 0 : d.owner(a); cd < (d.rep ? d.g : d.owner(a) + 1); ++cd) {
      const int cs = s.rep ? cd % s.g : s.owner(a);
      pair_of.push_back(static_cast<std::uint32_t>(cs * d.g + cd));
      segs.push_back(seg);
    }
    a = b;
  }
  // Group the template by pair (counting sort, stable: segments stay in global order).
  std::vector<std::uint32_t> first(pairs + 1, 0);
  for (std::uint32_t p : pair_of) ++first[p + 1];
  for (std::size_t i = 0; i < pairs; ++i) first[i + 1] += first[i];
  std::vector<segment> by_pair(segs.size());
  {
    std::vector<std::uint32_t> at(first.begin(), first.end() - 1);
    for (std::size_t i = 0; i < segs.size(); ++i) by_pair[at[pair_of[i]]++] = segs[i];
  }

  // Unroll over the periods, pair by pair, merging runs adjacent on both sides.
  const std::int64_t periods = period > 0 ? (n + period - 1) / period : 0;
  const std::int64_t shift_s = s.rep ? 0 : period / s.g;  // local advance per period
  const std::int64_t shift_d = d.rep ? 0 : period / d.g;
  out.first.assign(pairs + 1, 0);
  out.total.assign(pairs, 0);
  out.src_one.assign(pairs, 1);
  out.dst_one.assign(pairs, 1);
  out.runs.reserve(by_pair.size() * static_cast<std::size_t>(periods));
  for (std::size_t p = 0; p < pairs; ++p) {
    out.first[p] = static_cast<std::uint32_t>(out.runs.size());
    const std::size_t begin = out.runs.size();
    for (std::int64_t r = 0; r < periods; ++r) {
      const std::int64_t base = r * period;
      for (std::uint32_t i = first[p]; i < first[p + 1]; ++i) {
        const segment& g = by_pair[i];
        if (base + g.a >= n) break;
        const dim_run run{g.src + r * shift_s, g.dst + r * shift_d,
                          std::min(base + g.b, n) - base - g.a};
        out.total[p] += run.len;
        if (out.runs.size() > begin) {
          dim_run& last = out.runs.back();
          const bool src_next = last.src + last.len == run.src;
          const bool dst_next = last.dst + last.len == run.dst;
          if (!src_next) out.src_one[p] = 0;
          if (!dst_next) out.dst_one[p] = 0;
          if (src_next && dst_next) {
            last.len += run.len;
            continue;
          }
        }
        out.runs.push_back(run);
      }
    }
  }
  out.first[pairs] = static_cast<std::uint32_t>(out.runs.size());
  return out;
}

}  // namespace cairn::detail
