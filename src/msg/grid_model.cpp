// TRAM's cost model of a grid route (include/cairn/msg/grid_model.hpp).

#include "cairn/msg/grid_model.hpp"

#include <cstdio>
#include <sstream>

#include "cairn/runtime/error.hpp"

namespace cairn::msg {

std::uint64_t grid_model::ranks() const noexcept {
  std::uint64_t n = 0;
  for (std::uint64_t c : ranks_at) n += c;
  return n;
}

std::uint64_t grid_model::messages_to_all() const noexcept {
  std::uint64_t m = 0;
  for (std::size_t a = 0; a < ranks_at.size(); ++a) m += a * ranks_at[a];
  return m;
}

double grid_model::mean_messages() const noexcept {
  const std::uint64_t n = ranks();
  return n ? static_cast<double>(messages_to_all()) / static_cast<double>(n) : 0.0;
}

std::string grid_model::describe() const {
  std::ostringstream os;
  os << "grid ";
  for (std::size_t d = 0; d < dims.size(); ++d) os << (d ? "x" : "") << dims[d];
  os << ": " << ranks() << " ranks\n  messages  destinations  % destinations\n";
  const double n = static_cast<double>(ranks());
  for (std::size_t a = 0; a < ranks_at.size(); ++a) {
    char row[96];
    std::snprintf(row, sizeof row, "  %8zu  %12llu  %14.3g\n", a,
                  static_cast<unsigned long long>(ranks_at[a]),
                  100.0 * static_cast<double>(ranks_at[a]) / n);
    os << row;
  }
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.4g", mean_messages());
  os << "  mean messages per item " << mean << "\n  peers per rank " << peers << ", buffers "
     << buffer_bytes << " bytes each, " << buffer_memory() << " bytes per rank\n";
  return os.str();
}

grid_model model_grid(std::vector<int> dims, std::size_t buffer_bytes) {
  grid_model m;
  m.buffer_bytes = buffer_bytes;
  // Elementary symmetric sums of (s_d - 1), one extent at a time: a destination differs in
  // this coordinate (s_d - 1 ways, one more message) or not (one way).
  m.ranks_at.assign(1, 1);
  std::uint64_t points = 1;
  for (int s : dims) {
    if (s < 1) throw error("cairn::msg::model_grid: extent " + std::to_string(s) + " is below 1");
    if (points > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(s))
      throw error("cairn::msg::model_grid: the grid has more than 2^62 points");
    points *= static_cast<std::uint64_t>(s);
    const auto other = static_cast<std::uint64_t>(s - 1);
    m.ranks_at.push_back(0);
    for (std::size_t a = m.ranks_at.size() - 1; a > 0; --a)
      m.ranks_at[a] += m.ranks_at[a - 1] * other;
    m.peers += s - 1;
  }
  m.dims = std::move(dims);
  return m;
}

}  // namespace cairn::msg
