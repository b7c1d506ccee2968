// Must not compile: flow graphs whose types do not fit (CAIRN_CF_CASE picks the mistake). With
// CAIRN_CF_POSITIVE the same statement with fitting types must compile. Run by check.cmake
// (tests/compile_fail/CMakeLists.txt); never built into the test programs.
#include "cairn/flow/graph.hpp"

namespace flow = cairn::flow;

struct source {
  static constexpr flow::output<double> out{};
  static constexpr flow::output<int> count{"count"};
  flow::task run(flow::context&) { co_return; }
};
struct sink {
  static constexpr flow::input<double> in{};
  flow::task run(flow::context&) { co_return; }
};
struct no_run {
  static constexpr flow::input<double> in{};
};
// Neither commutative by cairn::is_commutative nor one of the known operations.
struct first_of {
  double operator()(double a, double) const { return a; }
};

void body(cairn::world& w) {
  flow::graph g(w);
  auto s = g.add<source>("s", 2);
  auto t = g.add<sink>("t", 2);
#if CAIRN_CF_CASE == 1  // an int queue into a double queue
#ifdef CAIRN_CF_POSITIVE
  g.flow(s, t);
#else
  g.flow(s.port(source::count), t);
#endif
#elif CAIRN_CF_CASE == 2  // a reduce of another type than its participants' queue
#ifdef CAIRN_CF_POSITIVE
  g.flow(s, g.reduce<double>("r", cairn::plus{}), t);
#else
  g.flow(s, g.reduce<float>("r", cairn::plus{}), t);
#endif
#elif CAIRN_CF_CASE == 3  // a reduce with an operation not known to commute
#ifdef CAIRN_CF_POSITIVE
  g.flow(s, g.reduce<double>("r", cairn::max{}), t);
#else
  g.flow(s, g.reduce<double>("r", first_of{}), t);
#endif
#elif CAIRN_CF_CASE == 4  // a module without run
  (void)s;
  (void)t;
#ifdef CAIRN_CF_POSITIVE
  (void)g.add<sink>("u", 1);
#else
  (void)g.add<no_run>("u", 1);
#endif
#elif CAIRN_CF_CASE == 5  // a sink as a flow's source (no default output queue)
#ifdef CAIRN_CF_POSITIVE
  g.flow(s, t);
#else
  g.flow(t, s);
#endif
#endif
  g.run();
}
