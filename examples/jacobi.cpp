// Point-to-point: a 1-D Jacobi solver for -u'' = f on (0, 1) with u(0) = u(1) = 0. Each rank
// owns a block of the grid plus one halo cell per side, exchanges halo cells with its
// neighbours by isend/irecv every sweep, and an allreduce of the largest update decides when to
// stop. The result is checked against the same iteration run sequentially.
//
//   build/examples/jacobi --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/jacobi
#include <algorithm>
#include <array>
#include <cairn/cairn.hpp>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr int n = 64;                // interior grid points (global)
constexpr double h = 1.0 / (n + 1);  // grid spacing
constexpr double tolerance = 1e-9;   // stop when no point moves more than this
constexpr int max_sweeps = 100000;

// Right-hand side at global point i (1-based: x = i h); the exact solution is sin(pi x).
double f(int i) { return std::numbers::pi * std::numbers::pi * std::sin(std::numbers::pi * i * h); }

// The whole iteration on one rank, for the check: u[1..n] with u[0] = u[n + 1] = 0.
std::vector<double> sequential_jacobi(int& sweeps) {
  std::vector<double> u(n + 2, 0.0), next(n + 2, 0.0);
  for (sweeps = 1; sweeps <= max_sweeps; ++sweeps) {
    double change = 0;
    for (int i = 1; i <= n; ++i) {
      next[i] = 0.5 * (u[i - 1] + u[i + 1] + h * h * f(i));
      change = std::max(change, std::abs(next[i] - u[i]));
    }
    std::swap(u, next);
    if (change < tolerance) break;
  }
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    // This rank's block of global points [first, first + m), stored at u[1..m]; u[0] and
    // u[m + 1] are halo cells (or the boundary value 0 at the ends of the domain).
    const int p = w.size(), r = w.rank();
    const int first = 1 + n * r / p, m = n * (r + 1) / p - n * r / p;
    const int left = r > 0 ? r - 1 : -1, right = r + 1 < p ? r + 1 : -1;
    std::vector<double> u(m + 2, 0.0), next(m + 2, 0.0);

    int sweeps = 0;
    for (sweeps = 1; sweeps <= max_sweeps; ++sweeps) {
      // Halo exchange: post the receives, send the edge cells, wait for all four.
      std::array<cairn::request, 4> pending;
      if (left >= 0) {
        pending[0] = w.irecv(&u[0], 1, left, /*tag=*/0);
        pending[1] = w.isend(&u[1], 1, left, /*tag=*/0);
      }
      if (right >= 0) {
        pending[2] = w.irecv(&u[m + 1], 1, right, /*tag=*/0);
        pending[3] = w.isend(&u[m], 1, right, /*tag=*/0);
      }
      cairn::wait_all(pending);

      // One Jacobi sweep over the block, and the largest change of any point.
      double change = 0;
      for (int i = 1; i <= m; ++i) {
        next[i] = 0.5 * (u[i - 1] + u[i + 1] + h * h * f(first + i - 1));
        change = std::max(change, std::abs(next[i] - u[i]));
      }
      std::swap(u, next);

      // The residual of the whole grid: the largest change on any rank.
      w.allreduce(cairn::in_place, std::span(&change, 1), cairn::max{});
      if (change < tolerance) break;
    }

    // Check: the same sweeps on one rank give the same values (max is exact, so the parallel
    // run stops after the same sweep), and the solution is close to sin(pi x).
    int expected_sweeps = 0;
    const std::vector<double> expected = sequential_jacobi(expected_sweeps);
    double error = 0, discretization = 0;
    for (int i = 1; i <= m; ++i) {
      error = std::max(error, std::abs(u[i] - expected[first + i - 1]));
      discretization = std::max(discretization,
                                std::abs(u[i] - std::sin(std::numbers::pi * (first + i - 1) * h)));
    }
    w.allreduce(cairn::in_place, std::span(&error, 1), cairn::max{});
    w.allreduce(cairn::in_place, std::span(&discretization, 1), cairn::max{});
    if (w.rank() == 0)
      std::printf(
          "jacobi: %d ranks (%s engine), %d points, %d sweeps; difference to the "
          "sequential run %g, to sin(pi x) %.2e\n",
          p, std::string(cairn::to_string(w.engine())).c_str(), n, sweeps, error, discretization);
    if (sweeps != expected_sweeps || error > 1e-12 || discretization > 1e-3)
      throw cairn::error("jacobi: the parallel solution differs from the sequential one");
  });
}
