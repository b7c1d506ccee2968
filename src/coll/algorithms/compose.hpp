#pragma once
// Composing schedules: an algorithm built from others (Rabenseifner's allreduce = reduce-scatter
// then allgather, a hierarchical one = parts on a node's ranks and on the node leaders, ...)
// appends their plans with each buffer of a part mapped onto a region of the whole and, for a
// part planned on a subgroup, its ranks onto the whole's. Planning only; the executor sees one
// flat schedule.

#include <algorithm>
#include <span>

#include "cairn/coll/schedule.hpp"

namespace cairn::coll {

/// Where the input, output and scratch of a part go in the composed schedule.
struct slot_map {
  region input{slot::input, 0};
  region output{slot::output, 0};
  region temp{slot::temp, 0};
};

/// Appends the rounds of `part` to `whole` (starting a new round), remapping every region by
/// `m` and the peer of every send and receive by `ranks` (the part's group rank i is the whole's
/// ranks[i]; empty: the same group), and grows `whole`'s scratch to hold the part's scratch where
/// `m.temp` puts it.
inline void append(schedule& whole, const schedule& part, const slot_map& m,
                   std::span<const int> ranks = {}) {
  auto remap = [&](const region& r) {
    const region& base = r.slot == slot::input    ? m.input
                         : r.slot == slot::output ? m.output
                                                  : m.temp;
    return region{base.slot, base.offset + r.offset};
  };
  for (std::size_t k = 0; k < part.rounds(); ++k) {
    whole.begin_round();
    const auto [first, last] = part.round(k);
    for (std::size_t i = first; i < last; ++i) {
      step st = part.steps[i];
      st.from = remap(st.from);
      st.to = remap(st.to);
      if (!ranks.empty() && (st.kind == step_kind::send || st.kind == step_kind::recv))
        st.peer = ranks[static_cast<std::size_t>(st.peer)];
      whole.add(st);
    }
  }
  if (m.temp.slot == slot::temp)
    whole.temp_bytes = std::max(whole.temp_bytes, m.temp.offset + part.temp_bytes);
}

}  // namespace cairn::coll
