// Distributed arrays: a 3-D Jacobi solver for -laplace(u) = 1 on a box, zero on the faces of
// dimensions 0 and 1, periodic along dimension 2. The grid is a ghosted_darray (one ghost cell
// per side) spread over all ranks by BLOCK; a persistent halo exchange per array, planned once,
// fills the ghosts before every 7-point sweep (faces only: the stencil needs no corners). The
// result is gathered on rank 0 by a redistribution and compared with the same sweeps run
// sequentially there.
//
//   build/examples/stencil --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/stencil
#include <algorithm>
#include <array>
#include <cairn/cairn.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t nx = 23, ny = 18, nz = 16;  // global interior points (any sizes)
constexpr double h2 = 1.0 / (24.0 * 24.0);         // grid spacing squared
constexpr int sweeps = 60;

// One sweep's new value from the six neighbours, added in one fixed order on every path.
double update(double xm, double xp, double ym, double yp, double zm, double zp) {
  return (((((xm + xp) + ym) + yp) + zm) + zp + h2) / 6.0;
}

// The same sweeps on one rank: u[(i + 1, j + 1, k + 1)] over a box padded by one cell, the
// padding zero along x and y and wrapped along z.
std::vector<double> sequential() {
  const std::int64_t sx = (ny + 2) * (nz + 2), sy = nz + 2;
  std::vector<double> u((nx + 2) * sx, 0.0), next = u;
  for (int s = 0; s < sweeps; ++s) {
    for (std::int64_t i = 1; i <= nx; ++i)
      for (std::int64_t j = 1; j <= ny; ++j) {
        u[i * sx + j * sy] = u[i * sx + j * sy + nz];  // periodic along z
        u[i * sx + j * sy + nz + 1] = u[i * sx + j * sy + 1];
      }
    for (std::int64_t i = 1; i <= nx; ++i)
      for (std::int64_t j = 1; j <= ny; ++j)
        for (std::int64_t k = 1; k <= nz; ++k) {
          const std::int64_t o = i * sx + j * sy + k;
          next[o] = update(u[o - sx], u[o + sx], u[o - sy], u[o + sy], u[o - 1], u[o + 1]);
        }
    std::swap(u, next);
  }
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const cairn::layout<3> l(all, {nx, ny, nz},
                             {cairn::dist::block, cairn::dist::block, cairn::dist::block});
    // Two arrays, each with its exchange: the sweep reads one and writes the other.
    std::array<cairn::ghosted_darray<double, 3>, 2> u{
        cairn::ghosted_darray<double, 3>(l, {1, 1, 1}, {false, false, true}),
        cairn::ghosted_darray<double, 3>(l, {1, 1, 1}, {false, false, true})};
    std::array<cairn::halo_exchange, 2> halo{cairn::halo_exchange(u[0], {.corners = false}),
                                             cairn::halo_exchange(u[1], {.corners = false})};
    if (w.rank() == 0) {  // the plan: faces, peers, bytes
      std::ostringstream plan;
      plan << *halo[0].plan();
      std::printf("%s", plan.str().c_str());
    }

    const auto n = u[0].interior_shape();
    for (int s = 0; s < sweeps; ++s) {
      auto& from = u[s % 2];
      auto& to = u[(s + 1) % 2];
      halo[s % 2].start();  // ghosts of `from` from the neighbours' interiors
      halo[s % 2].wait();
      for (std::int64_t i = 0; i < n[0]; ++i)
        for (std::int64_t j = 0; j < n[1]; ++j)
          for (std::int64_t k = 0; k < n[2]; ++k)
            to(i, j, k) = update(from(i - 1, j, k), from(i + 1, j, k), from(i, j - 1, k),
                                 from(i, j + 1, k), from(i, j, k - 1), from(i, j, k + 1));
    }

    // Gather the result on rank 0 (a layout over rank 0 alone) and compare it there.
    cairn::darray<double, 3> result = u[sweeps % 2].to_darray();
    const cairn::layout<3> one(w.group(cairn::ranks{0, 1}), {nx, ny, nz},
                               {cairn::dist::block, cairn::dist::block, cairn::dist::block});
    cairn::darray<double, 3> whole(one);
    cairn::redistribute(result, whole);
    if (w.rank() != 0) return;
    const std::vector<double> expected = sequential();
    double diff = 0, mid = 0;
    whole.for_each([&](const auto& gi, double& x) {
      const double e = expected[((gi[0] + 1) * (ny + 2) + gi[1] + 1) * (nz + 2) + gi[2] + 1];
      diff = std::max(diff, std::abs(x - e));
      if (gi[0] == nx / 2 && gi[1] == ny / 2 && gi[2] == 0) mid = x;
    });
    std::printf(
        "stencil: %d ranks (%s engine), %lldx%lldx%lld points, %d sweeps; u(center) %.6g, "
        "largest difference to the sequential run %g\n",
        w.size(), std::string(cairn::to_string(w.engine())).c_str(), static_cast<long long>(nx),
        static_cast<long long>(ny), static_cast<long long>(nz), sweeps, mid, diff);
    if (diff != 0 || !(mid > 0))
      throw cairn::error("stencil: the parallel solution differs from the sequential one");
  });
}
