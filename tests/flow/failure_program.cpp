// Flow graph runs that must end the whole run with a message and a non-zero status:
//   flow_failure_program throws      module p[1] throws in its run
//   flow_failure_program unbound     p[0] sends on a queue no flow statement binds
//   flow_failure_program unfed       p[1] dequeues from a queue nothing flows into
//   flow_failure_program undequeued  q[0] returns with items left in its queue
//   flow_failure_program rounds      reduce participants send different numbers of items
//   flow_failure_program rounds_held ... 12 against 2, the receiver on a participating rank (no
//                                    channel): the rounds past the missing ones stay held back
//                                    by the window of rounds in flight
#include <cstring>
#include <stdexcept>

#include "cairn/cairn.hpp"
#include "cairn/flow/graph.hpp"

namespace {

namespace flow = cairn::flow;
const char* mode = "";

struct worker {
  static constexpr flow::input<int> in{};
  static constexpr flow::output<int> out{};
  static constexpr flow::output<int> spare{"spare"};
  flow::task run(flow::context& ctx) {
    if (std::strcmp(mode, "throws") == 0) {
      ctx.send(out, 1);
      if (ctx.index() == 1) throw std::runtime_error("the ODE step diverged");
      (void)co_await ctx.dequeue(in);
    } else if (std::strcmp(mode, "unbound") == 0) {
      if (ctx.index() == 0) ctx.send(spare, 1);
    } else if (std::strcmp(mode, "unfed") == 0) {
      if (ctx.index() == 1) (void)co_await ctx.dequeue(in);
    } else if (ctx.name()[0] == 'q') {  // q: receives, dequeues nothing
    } else if (std::strcmp(mode, "undequeued") == 0) {
      for (int k = 0; k < 3; ++k) ctx.send(out, k);  // q[0] never dequeues them
    } else if (std::strcmp(mode, "rounds") == 0) {
      for (int k = 0; k < (ctx.index() == 1 ? 2 : 3); ++k) ctx.send(out, k);
    } else if (std::strcmp(mode, "rounds_held") == 0) {
      for (int k = 0; k < (ctx.index() == 1 ? 2 : 12); ++k) ctx.send(out, k);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  mode = argc > 1 ? argv[1] : "";
  return cairn::launch(argc, argv, [&](cairn::world& w) {
    flow::graph g(w);
    auto p = g.add<worker>("p", 2);
    if (std::strcmp(mode, "throws") == 0) {
      g.flow(p, g.reduce<int>("r", cairn::plus{}), p);
    } else if (std::strcmp(mode, "unbound") == 0 || std::strcmp(mode, "unfed") == 0) {
      g.flow(p[1], p[0]);
    } else if (std::strcmp(mode, "undequeued") == 0) {
      auto q = g.add<worker>("q", 1);
      g.flow(p, q);  // fan-in; q[0] never dequeues
    } else if (std::strcmp(mode, "rounds") == 0 || std::strcmp(mode, "rounds_held") == 0) {
      auto q = g.add<worker>("q", 1);
      g.flow(p, g.reduce<int>("r", cairn::plus{}), q);
      g.place(p, {0, w.size() - 1});
      // Receiver on a participating rank: nothing crosses ranks but the reduce (no channel).
      if (std::strcmp(mode, "rounds_held") == 0) g.place(q, {0});
    }
    g.run();
  });
}
