// route::grid — TRAM's N-dimensional virtual grid with dimension-ordered routing (TRAM 3.3).

#include <cmath>
#include <sstream>

#include "cairn/msg/route.hpp"
#include "msg/rank_space.hpp"

namespace cairn::msg {

std::vector<int> grid_next_hops(int me, const std::vector<int>& dims) {
  int total = 1;
  for (int d : dims) total *= d;
  std::vector<int> stride(dims.size(), 1);
  for (std::size_t d = dims.size(); d-- > 1;) stride[d - 1] = stride[d] * dims[d];
  std::vector<int> next(static_cast<std::size_t>(total));
  for (int dest = 0; dest < total; ++dest) {
    int hop = dest;
    // The slowest dimension in which me and dest differ is corrected first: the peer keeps
    // all of me's other coordinates.
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const int cm = me / stride[d] % dims[d], cd = dest / stride[d] % dims[d];
      if (cm != cd) {
        hop = me + (cd - cm) * stride[d];
        break;
      }
    }
    next[static_cast<std::size_t>(dest)] = hop;
  }
  return next;
}

namespace {
// The divisor of n closest to its k-th root from below (at least 1).
int root_divisor(int n, int k) {
  int best = 1;
  const int limit = static_cast<int>(std::pow(static_cast<double>(n), 1.0 / k) + 1e-9);
  for (int d = 1; d <= limit; ++d)
    if (n % d == 0) best = d;
  return best;
}

void balanced_into(int n, std::vector<int>& out) {
  // 1 dimension up to 3 ranks, 2 up to 511, 3 beyond: hops vs buffers per rank (Σ(s_d − 1)).
  const int k = n < 4 ? 1 : n < 512 ? 2 : 3;
  for (int left = k; left > 1; --left) {
    const int d = root_divisor(n, left);
    if (d > 1) {
      out.push_back(d);
      n /= d;
    }
  }
  out.push_back(n);
}
}  // namespace

std::vector<int> route::grid::balanced_dims(int ranks, int per_node) {
  std::vector<int> dims;
  if (per_node > 1 && per_node < ranks && ranks % per_node == 0) {
    balanced_into(ranks / per_node, dims);
    dims.push_back(per_node);  // last = fastest: the ranks of a node are one grid line
  } else {
    balanced_into(ranks, dims);
  }
  return dims;
}

namespace {
table_router make_grid(const detail::rank_space& s, std::vector<int> d) {
  if (d.empty()) {
    // Even placement: every node holds as many ranks as this one, in rank order.
    int per_node = 0;
    for (int n : s.node_of) per_node += n == s.node_of[static_cast<std::size_t>(s.me)];
    for (int r = 0; r < s.size && per_node > 0; ++r)
      if (s.node_of[static_cast<std::size_t>(r)] != r / per_node) per_node = 0;
    if (per_node > 0 && s.size % per_node != 0) per_node = 0;
    d = route::grid::balanced_dims(s.size, per_node);
  }
  long long product = 1;
  for (int x : d) {
    if (x < 1) cairn::detail::fail("channel", s.me, "route::grid extent ", x, " is below 1");
    product *= x;
  }
  if (product != s.size) {
    std::ostringstream os;
    for (std::size_t i = 0; i < d.size(); ++i) os << (i ? "x" : "") << d[i];
    cairn::detail::fail("channel", s.me, "route::grid ", os.str(), " has ", product,
                        " points, but the ", s.what, " has ", s.size, " ranks");
  }
  int hops = 0;
  std::ostringstream os;
  os << "grid ";
  for (std::size_t i = 0; i < d.size(); ++i) {
    os << (i ? "x" : "") << d[i];
    if (d[i] > 1) ++hops;
  }
  return table_router(grid_next_hops(s.me, d), hops < 1 ? 1 : hops, os.str());
}
}  // namespace

table_router route::grid::make(const world& w) const {
  return make_grid(detail::space_of(w), dims);
}
table_router route::grid::make(const group& g) const {
  return make_grid(detail::space_of(g), dims);
}

}  // namespace cairn::msg
