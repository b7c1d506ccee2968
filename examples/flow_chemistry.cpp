// Flow graphs: Aspen's Figure 3, the chemistry code. Sixteen `chemical` instances each fit a
// rate constant of a small stiff ODE system to its own "experiment"; every iteration each sends
// its squared error and its work to the reduce r, which sums them and delivers the sums back
// to every instance (an all-reduce: c ||| r(sum) ||| c). Instances adjust their step from the
// global error, so all trajectories depend on all instances. The program checks every
// instance's final state against a sequential run of the same model.
//
//   build/examples/flow_chemistry --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/flow_chemistry
#include <array>
#include <cairn/flow/graph.hpp>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"

namespace flow = cairn::flow;

namespace {

constexpr int instances = 16, iterations = 40;

// One instance's model: Robertson's stiff kinetics with its rate k1 scaled by `rate`,
// integrated by a few implicit Euler steps (Newton on the 3x3 system); the error is the
// distance of the final concentration of species 1 to the instance's target.
struct model {
  double rate = 0.04, target = 0.0;
  std::array<double, 3> y{1.0, 0.0, 0.0};

  // Advances y by `steps` implicit Euler steps of length h; returns the squared error.
  double step(int steps, double h) {
    for (int s = 0; s < steps; ++s) {
      const double k1 = rate, k2 = 3e7, k3 = 1e4;
      std::array<double, 3> z = y;
      for (int newton = 0; newton < 4; ++newton) {
        // f(z) = z - y - h * rhs(z), J = I - h * d rhs / dz
        const double r0 = -k1 * z[0] + k3 * z[1] * z[2];
        const double r1 = k1 * z[0] - k3 * z[1] * z[2] - k2 * z[1] * z[1];
        const double r2 = k2 * z[1] * z[1];
        const double f[3] = {z[0] - y[0] - h * r0, z[1] - y[1] - h * r1, z[2] - y[2] - h * r2};
        double j[3][3] = {{1 + h * k1, -h * k3 * z[2], -h * k3 * z[1]},
                          {-h * k1, 1 + h * (k3 * z[2] + 2 * k2 * z[1]), h * k3 * z[1]},
                          {0, -h * 2 * k2 * z[1], 1}};
        double b[3] = {-f[0], -f[1], -f[2]};
        for (int c = 0; c < 3; ++c)  // Gaussian elimination without pivoting (diagonal dominant)
          for (int r = c + 1; r < 3; ++r) {
            const double m = j[r][c] / j[c][c];
            for (int k = c; k < 3; ++k) j[r][k] -= m * j[c][k];
            b[r] -= m * b[c];
          }
        for (int r = 2; r >= 0; --r) {
          for (int k = r + 1; k < 3; ++k) b[r] -= j[r][k] * b[k];
          b[r] /= j[r][r];
          z[static_cast<std::size_t>(r)] += b[r];
        }
      }
      y = z;
    }
    return (y[0] - target) * (y[0] - target);
  }
  // The optimizer's move: a relative step on the rate, damped by the global error.
  void adjust(double local_error, double global_error) {
    const double damping = 1.0 / (1.0 + 10.0 * global_error);
    rate *= 1.0 + 0.05 * damping * (y[0] > target ? 1 : -1) * std::min(1.0, local_error * 100);
  }
};

model make_model(int i) {
  model m;
  m.target = 0.9 - 0.01 * i;
  return m;
}

struct chemical {
  static constexpr flow::input<std::vector<double>> in{};
  static constexpr flow::output<std::vector<double>> out{};
  model m;
  model* result = nullptr;  // where the final state goes (this process's slot for it)

  flow::task run(flow::context& ctx) {
    for (int it = 0; it < iterations; ++it) {
      const double err = m.step(4, 0.1);
      ctx.send(out, std::vector<double>{err, 4.0});               // S15: send qs
      const std::vector<double> sums = co_await ctx.dequeue(in);  // S16: qr = dequeue()
      m.adjust(err, sums[0] / ctx.count());
    }
    *result = m;
  }
};

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    std::vector<model> results(instances);
    flow::graph g(w);
    auto c = g.add<chemical>("c", instances, [&](int i) {
      return chemical{make_model(i), &results[static_cast<std::size_t>(i)]};
    });
    g.flow(c, g.reduce<std::vector<double>>("r", cairn::plus{}), c);  // S6: c ||| r ||| c
    g.run();

    // The same model sequentially: every iteration, all instances step, then all adjust.
    std::vector<model> ref;
    for (int i = 0; i < instances; ++i) ref.push_back(make_model(i));
    for (int it = 0; it < iterations; ++it) {
      std::vector<double> errs;
      double sum = 0;
      for (model& m : ref) sum += errs.emplace_back(m.step(4, 0.1));
      for (int i = 0; i < instances; ++i)
        ref[static_cast<std::size_t>(i)].adjust(errs[static_cast<std::size_t>(i)], sum / instances);
    }
    for (int i = 0; i < instances; ++i) {
      if (g.rank_of(c[i]) != w.rank()) continue;
      const model& got = results[static_cast<std::size_t>(i)];
      const model& want = ref[static_cast<std::size_t>(i)];
      // The sums are added in another order than sequentially: equal to rounding.
      if (std::abs(got.rate - want.rate) > 1e-9 * want.rate ||
          std::abs(got.y[0] - want.y[0]) > 1e-9)
        throw std::runtime_error("c[" + std::to_string(i) + "]: rate " + std::to_string(got.rate) +
                                 ", expected " + std::to_string(want.rate));
    }
    if (w.rank() == 0)
      std::printf("flow_chemistry: %d instances, %d iterations on %d ranks, all match\n", instances,
                  iterations, w.size());
  });
}
