// `cairn-bench array-pingpong` (HPF/MPI Figure 5): two tasks of equal size pass a 2-D array of
// doubles back and forth, (BLOCK,*) on task A and (*,BLOCK) on task B (every sender talks to
// every receiver), 4 KiB and 1 MiB. The figure is the one-way time with persistent transfers
// (send_init/recv_init: descriptor exchange and plan once); the baseline in the same run is the
// same exchange with plain send/recv (descriptor exchange every time; the plan itself is
// cached). Values are checked after the timed round trips. A second row per size compares the
// centralized strategy (gather, one message, scatter) with the parallel one, both persistent —
// where the automatic choice's size threshold belongs.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

double slowest(cairn::world& w, double x) {
  std::vector<double> in{x}, out(1);
  w.allreduce(in, out, cairn::max{});
  return out[0];
}

int run_array_pingpong(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is cairn's own non-persistent transfer
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    if (w.size() < 2) throw std::runtime_error("array-pingpong needs at least 2 ranks (two tasks)");
    const int half = w.size() / 2;
    cairn::tasks t(w, {half, w.size() - half});
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    const std::string engine(to_string(w.engine()));
    for (const std::int64_t rows : {std::int64_t{16}, std::int64_t{256}}) {
      const std::int64_t cols = rows * 2;  // 16 x 32 doubles = 4 KiB, 256 x 512 = 1 MiB
      const auto bytes = static_cast<std::size_t>(rows * cols * 8);
      const bool a_side = t.task() == 0;
      const cairn::layout<2> l = a_side
          ? cairn::layout<2>(t.my_group(), {rows, cols}, {dist::block, dist::replicated}, {t.my_group().size(), 1})
          : cairn::layout<2>(t.my_group(), {rows, cols}, {dist::replicated, dist::block}, {1, t.my_group().size()});
      cairn::darray<double, 2> x(l);
      auto reference = [&](const auto& g) { return static_cast<double>(g[0] * cols + g[1]); };
      if (a_side) x.fill(reference);
      const int other = 1 - t.task();
      auto plain = [&](int iters) {
        for (int i = 0; i < iters; ++i) {
          if (a_side) {
            t.send(x, other, 1, {.strategy = transfer_strategy::parallel});
            t.recv(x, other, 2, {.strategy = transfer_strategy::parallel});
          } else {
            t.recv(x, other, 1, {.strategy = transfer_strategy::parallel});
            t.send(x, other, 2, {.strategy = transfer_strategy::parallel});
          }
        }
      };
      const transfer_options par{.strategy = transfer_strategy::parallel};
      const transfer_options cen{.strategy = transfer_strategy::centralized};
      cairn::persistent_transfer out = t.send_init(x, other, a_side ? 3 : 4, par);
      cairn::persistent_transfer in = t.recv_init(x, other, a_side ? 4 : 3, par);
      cairn::persistent_transfer cout = t.send_init(x, other, a_side ? 5 : 6, cen);
      cairn::persistent_transfer cin = t.recv_init(x, other, a_side ? 6 : 5, cen);
      auto centralized = [&](int iters) {
        for (int i = 0; i < iters; ++i) {
          if (a_side) {
            cout.start();
            cout.wait();
            cin.start();
            cin.wait();
          } else {
            cin.start();
            cin.wait();
            cout.start();
            cout.wait();
          }
        }
      };
      auto persistent = [&](int iters) {
        for (int i = 0; i < iters; ++i) {
          if (a_side) {
            out.start();
            out.wait();
            in.start();
            in.wait();
          } else {
            in.start();
            in.wait();
            out.start();
            out.wait();
          }
        }
      };
      const int iters = bytes <= 4096 ? (inv.opts.quick ? 100 : 1000) : (inv.opts.quick ? 5 : 50);
      const sampling s{2, inv.opts.quick ? 3 : 7, iters};
      const double plain_s = median_seconds_per_iter(s, [&] { w.barrier(); }, plain) / 2;
      const double pers_s = median_seconds_per_iter(s, [&] { w.barrier(); }, persistent) / 2;
      const double cen_s = median_seconds_per_iter(s, [&] { w.barrier(); }, centralized) / 2;
      std::int64_t bad = 0;
      x.for_each([&](const auto& g, double& v) { bad += v != reference(g); });
      if (bad) throw std::runtime_error("array-pingpong: " + std::to_string(bad) + " wrong elements");
      const double a = slowest(w, pers_s), b = slowest(w, plain_s), c = slowest(w, cen_s);
      if (rep) {
        rep->add(row{"array-pingpong", engine, w.size(), bytes, "one_way_us", "lower", a * 1e6, "non-persistent", b * 1e6});
        rep->add(row{"array-pingpong", engine, w.size(), bytes, "one_way_us_centralized", "lower", c * 1e6, "parallel", a * 1e6});
      }
    }
  });
}

const registrar reg{{"array-pingpong", "HPF/MPI Figure 5: one-way array transfer between two tasks, persistent vs not", run_array_pingpong}};

}  // namespace

}  // namespace cairn::bench
