#include "cairn/coll/schedule.hpp"

#include <ostream>

namespace cairn::coll {

void schedule::begin_round() {
  if (!round_starts.empty() && round_starts.back() == steps.size()) return;  // already empty
  round_starts.push_back(static_cast<std::uint32_t>(steps.size()));
}

void schedule::add(const step& s) {
  if (round_starts.empty()) begin_round();
  steps.push_back(s);
}

std::pair<std::size_t, std::size_t> schedule::round(std::size_t r) const noexcept {
  const std::size_t first = round_starts[r];
  const std::size_t last = r + 1 < round_starts.size() ? round_starts[r + 1] : steps.size();
  return {first, last};
}

std::size_t schedule::message_rounds() const noexcept {
  std::size_t n = 0;
  for (std::size_t k = 0; k < rounds(); ++k) {
    const auto [first, last] = round(k);
    bool comm = false;
    for (std::size_t i = first; i < last; ++i)
      comm = comm || steps[i].kind == step_kind::send || steps[i].kind == step_kind::recv;
    n += comm;
  }
  return n;
}

namespace {
const char* slot_name(slot s) {
  switch (s) {
    case slot::input: return "in";
    case slot::output: return "out";
    case slot::temp: return "tmp";
  }
  return "?";
}
std::ostream& operator<<(std::ostream& os, const region& r) {
  return os << slot_name(r.slot) << "+" << r.offset;
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const schedule& s) {
  os << s.name << " (rank " << s.group_rank << " of " << s.group_size << ", " << s.rounds()
     << " rounds, " << s.temp_bytes << " scratch bytes)\n";
  for (std::size_t r = 0; r < s.rounds(); ++r) {
    os << "  round " << r << ":";
    const auto [first, last] = s.round(r);
    for (std::size_t i = first; i < last; ++i) {
      const step& st = s.steps[i];
      switch (st.kind) {
        case step_kind::send:
          os << " send(" << st.from << " -> " << st.peer << ", " << st.bytes << "B)";
          break;
        case step_kind::recv:
          os << " recv(" << st.peer << " -> " << st.to << ", " << st.bytes << "B)";
          break;
        case step_kind::reduce:
          os << " reduce(" << st.from << (st.from_is_left ? " op " : " into ") << st.to << ", "
             << st.bytes << "B)";
          break;
        case step_kind::copy:
          os << " copy(" << st.from << " -> " << st.to << ", " << st.bytes << "B)";
          break;
        case step_kind::signature:
          os << " signature(" << st.bytes << "B, root " << st.peer << " -> " << st.to << ")";
          break;
        case step_kind::signature_combine:
          os << " signature_combine(" << st.from << " into " << st.to << ")";
          break;
        case step_kind::signature_verify: os << " signature_verify(" << st.to << ")"; break;
      }
    }
    os << "\n";
  }
  return os;
}

}  // namespace cairn::coll
