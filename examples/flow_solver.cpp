// Flow graphs: an iterative solver with back-edges. A 1-D Poisson problem -u'' = 1 on (0, 1)
// with u(0) = u(1) = 0 is split into `blocks` instances of a module `block`, each holding
// `points` unknowns. Every Jacobi sweep a block sends its edge values to its neighbours (flows
// both ways between consecutive instances: cycles) and its largest change to the reduce
// `residual` (max), which flows back into every block; all stop in the same sweep, once the
// reduced change is below the tolerance. The result is checked against the same sweeps run
// sequentially (equal to the last bit: Jacobi's arithmetic per point does not depend on the
// split, and a max is exact), and against the exact solution x(1 - x)/2.
//
//   build/examples/flow_solver --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/flow_solver
#include <algorithm>
#include <cairn/flow/graph.hpp>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"

namespace flow = cairn::flow;

namespace {

constexpr int blocks = 6, points = 8, n = blocks * points;
constexpr double h = 1.0 / (n + 1), tolerance = 1e-7;

// One Jacobi sweep of u (with boundary values left and right); returns the largest change.
double sweep(std::vector<double>& u, double left, double right) {
  std::vector<double> next(u.size());
  double change = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const double l = i == 0 ? left : u[i - 1], r = i + 1 == u.size() ? right : u[i + 1];
    next[i] = (l + r + h * h) / 2;
    change = std::max(change, std::abs(next[i] - u[i]));
  }
  u.swap(next);
  return change;
}

struct block {
  static constexpr flow::input<double> from_left{"from_left"}, from_right{"from_right"};
  static constexpr flow::output<double> to_left{"to_left"}, to_right{"to_right"};
  static constexpr flow::output<double> change{"change"};
  static constexpr flow::input<double> residual{"residual"};
  std::vector<double>* result = nullptr;
  int* sweeps = nullptr;

  flow::task run(flow::context& ctx) {
    const bool first = ctx.index() == 0, last = ctx.index() + 1 == ctx.count();
    std::vector<double> u(points, 0.0);
    for (int s = 1;; ++s) {
      if (!first) ctx.send(to_left, u.front());
      if (!last) ctx.send(to_right, u.back());
      const double l = first ? 0.0 : co_await ctx.dequeue(from_left);
      const double r = last ? 0.0 : co_await ctx.dequeue(from_right);
      ctx.send(change, sweep(u, l, r));
      if (co_await ctx.dequeue(residual) < tolerance) {  // the back-edge through the reduce
        *sweeps = s;
        break;
      }
    }
    *result = u;
  }
};

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    std::vector<std::vector<double>> parts(blocks);
    int sweeps = 0;
    flow::graph g(w);
    auto b = g.add<block>("block", blocks, [&](int i) {
      return block{&parts[static_cast<std::size_t>(i)], &sweeps};
    });
    g.flow(b.slice(1, blocks).port(block::to_left), b.slice(0, blocks - 1).port(block::from_right));
    g.flow(b.slice(0, blocks - 1).port(block::to_right), b.slice(1, blocks).port(block::from_left));
    g.flow(b.port(block::change), g.reduce<double>("residual", cairn::max{}),
           b.port(block::residual));
    g.run();

    std::vector<double> ref(n, 0.0);
    int ref_sweeps = 0;
    for (int s = 1;; ++s)
      if (sweep(ref, 0.0, 0.0) < tolerance) {
        ref_sweeps = s;
        break;
      }
    bool here = false;
    for (int i = 0; i < blocks; ++i) {
      if (g.rank_of(b[i]) != w.rank()) continue;
      here = true;
      for (int k = 0; k < points; ++k) {
        const double got = parts[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)];
        const double x = (i * points + k + 1) * h;
        if (got != ref[static_cast<std::size_t>(i * points + k)] ||
            std::abs(got - x * (1 - x) / 2) > 1e-3)
          throw std::runtime_error("block[" + std::to_string(i) + "] point " + std::to_string(k) +
                                   ": " + std::to_string(got));
      }
    }
    if (here && sweeps != ref_sweeps)
      throw std::runtime_error("stopped after " + std::to_string(sweeps) + " sweeps, expected " +
                               std::to_string(ref_sweeps));
    if (w.rank() == 0)
      std::printf("flow_solver: %d blocks of %d points converged in %d sweeps on %d ranks\n",
                  blocks, points, ref_sweeps, w.size());
  });
}
