// Must not compile: a non-blocking call given a temporary container (CAIRN_CF_CASE picks the
// call). With CAIRN_CF_POSITIVE the same call gets an lvalue, a span or a view and must compile.
// Run by check.cmake (tests/compile_fail/CMakeLists.txt); never built into the test programs.
#include <span>
#include <vector>

#include "cairn/runtime/p2p.hpp"

#ifdef CAIRN_CF_POSITIVE
#define CAIRN_CF_BUFFER(n) buf
#else
#define CAIRN_CF_BUFFER(n) std::vector<double>(n, 42.0)
#endif

void body(cairn::world& w) {
  [[maybe_unused]] std::vector<double> buf(100, 42.0);
  [[maybe_unused]] std::span<double> view(buf);
#if CAIRN_CF_CASE == 1
  auto r = w.isend(CAIRN_CF_BUFFER(100000), 1);
  r.wait();
#elif CAIRN_CF_CASE == 2
  auto r = w.irecv(CAIRN_CF_BUFFER(100), 0);
  r.wait();
#elif CAIRN_CF_CASE == 3
  auto p = w.send_init(CAIRN_CF_BUFFER(100), 1, 3);
  p.start();
  p.wait();
#elif CAIRN_CF_CASE == 4
  auto p = w.recv_init(CAIRN_CF_BUFFER(100), 0, 3);
  p.start();
  p.wait();
#elif CAIRN_CF_CASE == 5
  // A temporary span or view is fine: it does not own the elements (borrowed_range); only
  // the positive form is registered for this case.
  auto a = w.isend(std::span<const double>(buf), 1);
  auto b = w.irecv(std::span<double>(buf), 0);
  auto c = w.send_init(view.first(10), 1);
  auto d = w.recv_init(std::span<double>(buf).subspan(5), 0);
  a.wait();
  b.wait();
#elif CAIRN_CF_CASE == 6
  // Collectives: a temporary output of a non-blocking collective.
  std::vector<double> in(100, 1.0);
  auto r = w.iallreduce(in, CAIRN_CF_BUFFER(100), cairn::plus{});
  r.wait();
#elif CAIRN_CF_CASE == 7
  // ... and a temporary input (read by later rounds).
  std::vector<double> out(100 * static_cast<std::size_t>(w.size()));
  auto r = w.iallgather(CAIRN_CF_BUFFER(100), out);
  r.wait();
#else
#error "CAIRN_CF_CASE must be 1 to 7"
#endif
}

int main(int argc, char** argv) { return cairn::launch(argc, argv, body); }
