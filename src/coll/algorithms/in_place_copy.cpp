#include "coll/algorithms/planners.hpp"

namespace cairn::coll {

schedule plan_in_place_copy(const schedule& plan, std::size_t in_bytes) {
  // A plan that never reads its input, or never writes its output, runs in place as it is.
  bool reads = false, writes = false;
  for (const step& st : plan.steps) {
    reads = reads || st.from.slot == slot::input;
    const bool writes_to =
        st.kind == step_kind::recv || st.kind == step_kind::copy || st.kind == step_kind::reduce;
    writes = writes || (writes_to && st.to.slot == slot::output);
  }
  if (!reads || !writes) return plan;
  schedule s = plan;
  const region copy_of_input{slot::temp, plan.temp_bytes};
  s.temp_bytes += in_bytes;
  for (step& st : s.steps)
    for (region* r : {&st.from, &st.to})
      if (r->slot == slot::input) *r = {slot::temp, copy_of_input.offset + r->offset};
  // First step of the first round: local steps run in order, before the round's messages.
  const step copy{step_kind::copy, -1, {slot::output, 0}, copy_of_input, in_bytes, false};
  if (s.round_starts.empty()) {
    s.add(copy);
  } else {
    s.steps.insert(s.steps.begin(), copy);
    for (std::size_t r = 1; r < s.round_starts.size(); ++r) ++s.round_starts[r];
  }
  return s;
}

}  // namespace cairn::coll
