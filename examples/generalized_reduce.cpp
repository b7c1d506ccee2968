// Collectives: generalized reduces, whose participants and receivers are any sets of ranks. The
// ranks play two coupled codes: the first half a "fluid" solver, the second half a "structure"
// solver. The fluid ranks each compute forces on the shared interface; the structure ranks need
// their sum but contribute nothing, and fluid rank 0 wants it too. Then two reductions over
// overlapping sets run at once, and a persistent one is started every time step. Every result
// is checked against the sum computed sequentially.
//
//   build/examples/generalized_reduce --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/generalized_reduce
#include <algorithm>
#include <cairn/cairn.hpp>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr int points = 16;  // interface points

// The force fluid rank q computes on point i at time step s (integers: sums are exact).
double force(int q, int i, int s) { return (q + 1.0) * (i + 1) + 100.0 * s; }

bool contains(const std::vector<int>& v, int r) {
  return std::find(v.begin(), v.end(), r) != v.end();
}

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    std::vector<int> fluid((p + 1) / 2), all(p);
    std::iota(fluid.begin(), fluid.end(), 0);  // ranks 0 .. ceil(p/2) - 1
    std::iota(all.begin(), all.end(), 0);
    std::vector<int> receivers;  // the structure ranks, and fluid rank 0
    for (int r = (p + 1) / 2; r < p; ++r) receivers.push_back(r);
    receivers.push_back(0);

    const bool participant = contains(fluid, me), receiver = contains(receivers, me);
    std::int64_t wrong = 0;
    auto check = [&](const std::vector<double>& got, int step) {
      for (int i = 0; i < points; ++i) {
        double sum = 0;  // the sequential computation
        for (int q : fluid) sum += force(q, i, step);
        wrong += got[static_cast<std::size_t>(i)] != sum;
      }
    };

    // 1. Participants != receivers: a receiver that contributes nothing passes an empty input,
    //    a participant that receives nothing an empty output. Ranks in neither set do not call.
    std::vector<double> in, out;
    if (participant)
      for (int i = 0; i < points; ++i) in.push_back(force(me, i, 0));
    if (receiver) out.resize(points);
    if (participant || receiver) w.reduce(fluid, receivers, in, out, cairn::plus{});
    if (receiver) check(out, 0);

    // 2. Two reductions in flight at once on overlapping sets: the total work of all ranks to
    //    rank 0, and the largest residual of the fluid ranks (a user operation) to the receivers.
    double work = 1.0 + me, total_work = 0, residual = 1.0 / (me + 1), worst = 0;
    cairn::request r1 = w.ireduce(all, {0}, std::span(&work, 1),
                                  std::span(&total_work, me == 0 ? 1 : 0), cairn::plus{});
    cairn::request r2;
    if (participant || receiver)
      r2 = w.ireduce(fluid, receivers, std::span(&residual, participant ? 1 : 0),
                     std::span(&worst, receiver ? 1 : 0),
                     cairn::op([](double a, double b) { return std::max(a, b); },
                               /*commutative=*/true));
    r1.wait();
    r2.wait();
    if (me == 0 && total_work != p * (p + 1) / 2.0) ++wrong;
    if (receiver && worst != 1.0) ++wrong;  // fluid rank 0's 1 / (0 + 1)

    // 3. Persistent: planned once, started every time step on the current contents of `in`.
    cairn::persistent_request step_sum;
    if (participant || receiver)
      step_sum = w.ireduce_init(fluid, receivers, in, out, cairn::plus{});
    for (int step = 1; step <= 3; ++step) {
      if (participant)
        for (int i = 0; i < points; ++i) in[static_cast<std::size_t>(i)] = force(me, i, step);
      if (participant || receiver) {
        step_sum.start();
        step_sum.wait();
      }
      if (receiver) check(out, step);
    }

    w.allreduce(cairn::in_place, std::span(&wrong, 1), cairn::plus{});
    if (me == 0)
      std::printf(
          "generalized_reduce: %d ranks (%s engine), %zu participants, %zu receivers, "
          "interface force on point 0 at the last step %g, %lld wrong\n",
          p, std::string(cairn::to_string(w.engine())).c_str(), fluid.size(), receivers.size(),
          out[0], static_cast<long long>(wrong));
    if (wrong != 0)
      throw cairn::error("generalized_reduce: a result differs from the sequential sum");
  });
}
