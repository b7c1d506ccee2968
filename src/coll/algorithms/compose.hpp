#pragma once
// Composing schedules: an algorithm built from others (Rabenseifner's allreduce = reduce-scatter
// then allgather, ...) appends their plans with each buffer of a part mapped onto a region of
// the whole. Planning only; the executor sees one flat schedule.

#include <algorithm>

#include "cairn/coll/schedule.hpp"

namespace cairn::coll {

/// Where the input, output and scratch of a part go in the composed schedule.
struct slot_map {
  region input{slot::input, 0};
  region output{slot::output, 0};
  region temp{slot::temp, 0};
};

/// Appends the rounds of `part` to `whole` (starting a new round), remapping every region by
/// `m`, and grows `whole`'s scratch to hold the part's scratch where `m.temp` puts it.
inline void append(schedule& whole, const schedule& part, const slot_map& m) {
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
      whole.add(st);
    }
  }
  if (m.temp.slot == slot::temp)
    whole.temp_bytes = std::max(whole.temp_bytes, m.temp.offset + part.temp_bytes);
}

}  // namespace cairn::coll
