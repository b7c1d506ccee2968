// Flow graphs: Aspen's Figure 5. Four instances of a module `parallel` join two reductions
// at once, on overlapping instances, without naming a group: every instance sends to r1 (a
// sum, delivered to p[0] and p[2]); p[1] and p[2] also send on their `outQueue1` to r2 (a
// product, delivered to p[3], which contributes nothing to it). The modules only send and
// dequeue; the root (here: main) alone says which send is part of which reduction. Every
// result is checked against the one computed sequentially. With --dot, rank 0 prints the
// module graph and the rank graph it lowers to (Graphviz; `dot -Tpng`).
//
//   build/examples/flow_reduces --cairn-ranks=4
//   build/examples/flow_reduces --cairn-ranks=2 --dot | dot -Tpng > figure7.png
//   scripts/mpiexec -np 2 build/examples/flow_reduces
#include <cairn/flow/graph.hpp>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"

namespace flow = cairn::flow;

namespace {

constexpr int rounds = 10;

// Instance i's two inputs in round k (small integers: sums and products are exact).
double first_value(int i, int k) { return i + k + 1.0; }
double second_value(int i, int k) { return (i + k) % 3 + 1.0; }

struct parallel {
  static constexpr flow::input<double> in{};                // the default input queue
  static constexpr flow::output<double> out{};              // the default output queue
  static constexpr flow::output<double> out1{"outQueue1"};  // S12

  flow::task run(flow::context& ctx) {
    const int me = ctx.index();
    for (int k = 0; k < rounds; ++k) {
      ctx.send(out, first_value(me, k));                            // S18: joins r1
      if (me == 1 || me == 2) ctx.send(out1, second_value(me, k));  // S19: joins r2
      if (me == 0 || me == 2 || me == 3) {
        const double got = co_await ctx.dequeue(in);  // S20: r1 on p[0], p[2]; r2 on p[3]
        double want = 0;
        if (me == 3) {
          want = second_value(1, k) * second_value(2, k);
        } else {
          for (int i = 0; i < ctx.count(); ++i) want += first_value(i, k);
        }
        if (got != want)
          throw std::runtime_error(ctx.name() + " got " + std::to_string(got) + " in round " +
                                   std::to_string(k) + ", expected " + std::to_string(want));
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool dot = false;
  for (int i = 1; i < argc; ++i) dot |= std::strcmp(argv[i], "--dot") == 0;
  return cairn::launch(argc, argv, [&](cairn::world& w) {
    flow::graph g(w);
    auto p = g.add<parallel>("p", 4);                 // S3
    auto r1 = g.reduce<double>("r1", cairn::plus{});  // S4
    auto r2 = g.reduce<double>("r2", cairn::multiplies{});
    g.flow(p, r1, {p[0], p[2]});                           // S6
    g.flow(p.slice(1, 3).port(parallel::out1), r2, p[3]);  // S7
    g.run();
    if (w.rank() == 0) {
      if (dot)
        std::fputs(g.to_dot().c_str(), stdout);
      else
        std::printf("flow_reduces: %d rounds of r1 and r2 on %d ranks, all correct\n%s", rounds,
                    w.size(), g.describe().c_str());
    }
  });
}
