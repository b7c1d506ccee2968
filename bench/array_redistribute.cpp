// `cairn-bench redistribute`: an N x N array of doubles moved from task A (the first half of
// the ranks) to task B (the second half): (BLOCK,*) -> (*,BLOCK) (metric bandwidth_MBps) and
// block_cyclic(3) -> block_cyclic(5) in both dimensions (metric bc_bandwidth_MBps), N = 1024
// and 4096 (--quick: 1024). The figure is N*N*8 bytes over the time of one redistribution
// (slowest rank, median). Baselines in the same run: the textbook pack (owner of every
// element) + MPI_Alltoallv + unpack in raw MPI (inline under mpirun; in a threads run, a child
// `mpirun -np P` of this program), and, on the threads engine, a memcpy of the same bytes.
// Chunked pipelining rows (time_us_chunksK, bc_time_us_chunksK): each peer's data in K = 1, 2,
// 4, 8 slabs through messages vs the same redistribution unchunked, measured back to back; and
// (work_time_us_chunksK) the receiver's pass over the received data done per slab as each
// lands (transfer_options::on_slab) vs after the unchunked redistribution.
// Every result is checked element by element.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

struct config {
  const char* metric;
  std::int64_t n;
  bool block_cyclic;  // false: (BLOCK,*) -> (*,BLOCK)
};

std::vector<config> configs(const options& o) {
  std::vector<std::uint64_t> def{1024};
  if (!o.quick) def.push_back(4096);
  std::vector<config> c;
  for (const auto n : count_list_param(o, "N", def, 2, 1 << 16)) {
    c.push_back({"bandwidth_MBps", static_cast<std::int64_t>(n), false});
    c.push_back({"bc_bandwidth_MBps", static_cast<std::int64_t>(n), true});
  }
  return c;
}

double value_at(std::int64_t i, std::int64_t j) { return static_cast<double>(i * 65536 + j); }

struct arrays {
  cairn::layout<2> la, lb;
  cairn::darray<double, 2> a, b;
};

arrays make_arrays(cairn::world& w, const config& c) {
  const int p = w.size(), half = p / 2;
  const cairn::group ga = w.group(cairn::ranks{0, half}), gb = w.group(cairn::ranks{half, p});
  arrays x;
  if (c.block_cyclic) {
    x.la = cairn::layout<2>(ga, {c.n, c.n}, {dist::block_cyclic(3), dist::block_cyclic(3)});
    x.lb = cairn::layout<2>(gb, {c.n, c.n}, {dist::block_cyclic(5), dist::block_cyclic(5)});
  } else {
    x.la = cairn::layout<2>(ga, {c.n, c.n}, {dist::block, dist::replicated}, {half, 1});
    x.lb = cairn::layout<2>(gb, {c.n, c.n}, {dist::replicated, dist::block}, {1, p - half});
  }
  x.a = cairn::darray<double, 2>(x.la);
  x.b = cairn::darray<double, 2>(x.lb);
  x.a.fill([](const auto& g) { return value_at(g[0], g[1]); });
  return x;
}

void check(cairn::darray<double, 2>& b, const char* who) {
  std::int64_t bad = 0;
  b.for_each([&](const auto& g, double& v) { bad += v != value_at(g[0], g[1]); });
  if (bad)
    throw std::runtime_error(std::string("redistribute (") + who + "): " + std::to_string(bad) +
                             " wrong elements");
}

sampling sampling_for(const config& c, bool quick) {
  const int iters = c.n >= 4096 ? 1 : (quick ? 2 : 5);
  return sampling{1, quick ? 3 : 5, iters};
}

double cairn_figure(cairn::world& w, const config& c, bool quick) {
  arrays x = make_arrays(w, c);
  cairn::redistribute(x.a, x.b);
  check(x.b, "cairn");
  std::fill(x.b.local().begin(), x.b.local().end(), -1.0);
  const double s = median_seconds_per_iter(
      sampling_for(c, quick), [&] { w.barrier(); },
      [&](int iters) {
        for (int i = 0; i < iters; ++i) cairn::redistribute(x.a, x.b);
      });
  check(x.b, "cairn, after timing");
  return static_cast<double>(c.n * c.n * 8) / slowest(w, s) / 1e6;
}

// Seconds per iteration (slowest rank, median) of `first` and `second`, alternating sample by
// sample so that machine noise hits both alike.
template <class A, class B>
std::pair<double, double> paired_seconds(cairn::world& w, const config& c, bool quick, A&& first,
                                         B&& second) {
  const sampling one{1, 1, c.n >= 4096 ? 1 : 3};
  std::vector<double> a, b;
  for (int sample = 0; sample < (quick ? 7 : 11); ++sample) {
    a.push_back(median_seconds_per_iter(
        one, [&] { w.barrier(); }, first));
    b.push_back(median_seconds_per_iter(
        one, [&] { w.barrier(); }, second));
  }
  return {slowest(w, median(a)), slowest(w, median(b))};
}

// Unchunked vs each peer's data in `chunks` slabs, through messages (direct copies on the
// threads engine have nothing to pipeline).
std::pair<double, double> chunked_seconds(cairn::world& w, arrays& x, const config& c, bool quick,
                                          int chunks) {
  const cairn::transfer_options plain{.direct = false}, o{.direct = false, .chunks = chunks};
  std::fill(x.b.local().begin(), x.b.local().end(), -1.0);
  auto r = paired_seconds(
      w, c, quick,
      [&](int n) {
        for (int i = 0; i < n; ++i) cairn::redistribute(x.a, x.b, plain);
      },
      [&](int n) {
        for (int i = 0; i < n; ++i) cairn::redistribute(x.a, x.b, o);
      });
  check(x.b, "cairn, chunked");
  return r;
}

// The receiver's work on what arrived — one pass (sum of squares) over each received piece:
// after the unchunked redistribution completes vs per slab as each lands (on_slab), `chunks`
// slabs per peer, through messages.
std::pair<double, double> work_seconds(cairn::world& w, arrays& x, const config& c, bool quick,
                                       int chunks) {
  double sink = 0;
  const double* b = x.b.data();
  cairn::transfer_options o{.direct = false, .chunks = chunks};
  o.on_slab = [&](const cairn::slab_arrival& s) {
    s.for_each_run([&](std::int64_t off, std::int64_t len) {
      double acc = 0;
      for (std::int64_t i = off; i < off + len; ++i) acc += b[i] * b[i];
      sink += acc;
    });
  };
  const cairn::transfer_options plain{.direct = false};
  std::fill(x.b.local().begin(), x.b.local().end(), -1.0);
  auto r = paired_seconds(
      w, c, quick,
      [&](int n) {
        for (int i = 0; i < n; ++i) {
          cairn::redistribute(x.a, x.b, plain);
          double acc = 0;
          for (const double v : x.b.local()) acc += v * v;
          sink += acc;
        }
      },
      [&](int n) {
        for (int i = 0; i < n; ++i) cairn::redistribute(x.a, x.b, o);
      });
  check(x.b, "cairn, work per slab");
  if (sink < 0) note("redistribute: negative sum of squares");
  return r;
}

double memcpy_figure(const config& c, bool quick) {
  const auto bytes = static_cast<std::size_t>(c.n * c.n * 8);
  // Both ends page-aligned: glibc's memcpy is 15x slower on this AMD machine when the
  // destination starts just after the source modulo a page, which two vectors allocated in turn
  // often do; the baseline is memcpy at its best.
  std::vector<std::byte> storage(2 * bytes + 4096);
  std::byte* from =
      storage.data() + (4096 - reinterpret_cast<std::uintptr_t>(storage.data()) % 4096) % 4096;
  std::byte* to = from + bytes;
  std::fill(from, to, std::byte{1});
  const double s = median_seconds_per_iter(sampling_for(c, quick), [&](int iters) {
    for (int i = 0; i < iters; ++i) std::memcpy(to, from, bytes);
  });
  if (to[bytes / 2] != std::byte{1}) throw std::runtime_error("memcpy baseline: copy failed");
  return static_cast<double>(bytes) / s / 1e6;
}

#if CAIRN_BENCH_HAVE_MPI
// The textbook version in raw MPI on MPI_COMM_WORLD: senders pack every element by its
// destination owner (per-dimension owner tables), MPI_Alltoallv, receivers unpack every element
// from its source owner's buffer. Within a (source, destination) pair both sides visit the
// elements in global row-major order, so no indices travel.
double textbook_figure(cairn::world& w, const config& c, bool quick) {
  arrays x = make_arrays(w, c);
  const int p = w.size(), half = p / 2;
  const auto& sd = x.la.desc();
  const auto& dd = x.lb.desc();
  auto owners = [&](const cairn::detail::layout_desc& l, int d, int base_stride) {
    std::vector<int> o(static_cast<std::size_t>(c.n));
    for (std::int64_t i = 0; i < c.n; ++i)
      o[static_cast<std::size_t>(i)] = l.dims[static_cast<std::size_t>(d)].owner(i) * base_stride;
    return o;
  };
  const auto dst_row = owners(dd, 0, dd.dims[1].g), dst_col = owners(dd, 1, 1);
  const auto src_row = owners(sd, 0, sd.dims[1].g), src_col = owners(sd, 1, 1);
  const int me = w.rank();
  std::vector<int> scount(static_cast<std::size_t>(p), 0), sdispl(static_cast<std::size_t>(p), 0);
  std::vector<int> rcount(static_cast<std::size_t>(p), 0), rdispl(static_cast<std::size_t>(p), 0);
  std::vector<double> sbuf(x.a.local_size()), rbuf(x.b.local_size());
  std::vector<int> pos(static_cast<std::size_t>(p));
  const auto as = x.a.local_shape(), bs = x.b.local_shape();
  if (me < half) {  // counts per destination
    for (std::int64_t i = 0; i < as[0]; ++i)
      for (std::int64_t j = 0; j < as[1]; ++j) {
        const auto g = x.la.to_global({i, j});
        ++scount[static_cast<std::size_t>(half + dst_row[static_cast<std::size_t>(g[0])] +
                                          dst_col[static_cast<std::size_t>(g[1])])];
      }
  } else {
    for (std::int64_t i = 0; i < bs[0]; ++i)
      for (std::int64_t j = 0; j < bs[1]; ++j) {
        const auto g = x.lb.to_global({i, j});
        ++rcount[static_cast<std::size_t>(src_row[static_cast<std::size_t>(g[0])] +
                                          src_col[static_cast<std::size_t>(g[1])])];
      }
  }
  for (int r = 1; r < p; ++r) {
    sdispl[static_cast<std::size_t>(r)] =
        sdispl[static_cast<std::size_t>(r - 1)] + scount[static_cast<std::size_t>(r - 1)];
    rdispl[static_cast<std::size_t>(r)] =
        rdispl[static_cast<std::size_t>(r - 1)] + rcount[static_cast<std::size_t>(r - 1)];
  }
  // Global index tables of the local parts (a textbook code has them from its loop bounds).
  std::vector<std::int64_t> ai(static_cast<std::size_t>(as[0])),
      aj(static_cast<std::size_t>(as[1]));
  std::vector<std::int64_t> bi(static_cast<std::size_t>(bs[0])),
      bj(static_cast<std::size_t>(bs[1]));
  for (std::int64_t i = 0; i < as[0]; ++i)
    ai[static_cast<std::size_t>(i)] = x.la.to_global({i, 0})[0];
  for (std::int64_t j = 0; j < as[1]; ++j)
    aj[static_cast<std::size_t>(j)] = x.la.to_global({0, j})[1];
  for (std::int64_t i = 0; i < bs[0]; ++i)
    bi[static_cast<std::size_t>(i)] = x.lb.to_global({i, 0})[0];
  for (std::int64_t j = 0; j < bs[1]; ++j)
    bj[static_cast<std::size_t>(j)] = x.lb.to_global({0, j})[1];
  auto once = [&] {
    if (me < half) {
      std::copy(sdispl.begin(), sdispl.end(), pos.begin());
      const double* a = x.a.data();
      for (std::int64_t i = 0; i < as[0]; ++i) {
        const int ro = half + dst_row[static_cast<std::size_t>(ai[static_cast<std::size_t>(i)])];
        for (std::int64_t j = 0; j < as[1]; ++j)
          sbuf[static_cast<std::size_t>(pos[static_cast<std::size_t>(
              ro + dst_col[static_cast<std::size_t>(aj[static_cast<std::size_t>(j)])])]++)] = *a++;
      }
    }
    MPI_Alltoallv(sbuf.data(), scount.data(), sdispl.data(), MPI_DOUBLE, rbuf.data(), rcount.data(),
                  rdispl.data(), MPI_DOUBLE, MPI_COMM_WORLD);
    if (me >= half) {
      std::copy(rdispl.begin(), rdispl.end(), pos.begin());
      double* b = x.b.data();
      for (std::int64_t i = 0; i < bs[0]; ++i) {
        const int ro = src_row[static_cast<std::size_t>(bi[static_cast<std::size_t>(i)])];
        for (std::int64_t j = 0; j < bs[1]; ++j)
          *b++ = rbuf[static_cast<std::size_t>(pos[static_cast<std::size_t>(
              ro + src_col[static_cast<std::size_t>(bj[static_cast<std::size_t>(j)])])]++)];
      }
    }
  };
  once();
  check(x.b, "textbook");
  std::fill(x.b.local().begin(), x.b.local().end(), -1.0);
  const double s = median_seconds_per_iter(
      sampling_for(c, quick), [] { MPI_Barrier(MPI_COMM_WORLD); },
      [&](int iters) {
        for (int i = 0; i < iters; ++i) once();
      });
  check(x.b, "textbook, after timing");
  return static_cast<double>(c.n * c.n * 8) / mpi_slowest(s) / 1e6;
}
#endif

int run_redistribute(const invocation& inv) {
  const auto cs = configs(inv.opts);
  const bool under_mpi = cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::mpi;
  if (inv.opts.raw_mpi_only) {
    raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
    body = [&](cairn::world& w, report* rep) {
      for (const config& c : cs) {
        const double v = textbook_figure(w, c, inv.opts.quick);
        if (rep)
          rep->add(raw_mpi_row("redistribute", w.size(), static_cast<std::size_t>(c.n * c.n * 8),
                               c.metric, "higher", v));
      }
    };
#endif
    return run_raw_mpi_only(inv, body);
  }
  // Ranks of a threads run (the baseline child gets as many processes).
  int ranks = 0;
  if (!under_mpi) {
    if (cairn::launch(inv.argc, inv.argv, {.engine = cairn::engine::threads}, [&](cairn::world& w) {
          if (w.rank() == 0) ranks = w.size();
        }) != 0)
      return 1;
  }
  std::vector<baseline_figures> spawned;
  for (const char* m : {"bandwidth_MBps", "bc_bandwidth_MBps"})
    spawned.push_back(under_mpi ? baseline_figures{} : prepare_baseline(inv, m, ranks));
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    if (w.size() < 2) throw std::runtime_error("redistribute needs at least 2 ranks (two tasks)");
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    const std::string engine(to_string(w.engine()));
    for (const config& c : cs) {
      const double mine = cairn_figure(w, c, inv.opts.quick);
      const auto size = static_cast<std::size_t>(c.n * c.n * 8);
      std::optional<double> base;
#if CAIRN_BENCH_HAVE_MPI
      if (under_mpi && inv.opts.baseline) base = textbook_figure(w, c, inv.opts.quick);
#endif
      if (!under_mpi) base = spawned[c.block_cyclic ? 1 : 0].at(size);
      if (rep)
        rep->add(row{"redistribute", engine, w.size(), size, c.metric, "higher", mine,
                     "mpi-alltoallv-textbook", base});
      if (w.engine() == cairn::engine::threads && rep)
        rep->add(row{"redistribute", engine, w.size(), size, c.metric, "higher", mine, "memcpy",
                     memcpy_figure(c, inv.opts.quick)});
    }
    // Chunked pipelining: each peer's data in k slabs vs the same redistribution unchunked
    // (both through messages), measured back to back per k; ratio = chunked / unchunked time.
    for (const config& c : cs) {
      arrays x = make_arrays(w, c);
      const auto size = static_cast<std::size_t>(c.n * c.n * 8);
      for (const int k : {1, 2, 4, 8}) {
        const auto [plain, chunked] = chunked_seconds(w, x, c, inv.opts.quick, k);
        const std::string metric =
            std::string(c.block_cyclic ? "bc_" : "") + "time_us_chunks" + std::to_string(k);
        if (rep)
          rep->add(row{"redistribute", engine, w.size(), size, metric, "lower", chunked * 1e6,
                       "unchunked", plain * 1e6});
      }
      for (const int k : {4, 8}) {
        const auto [after, per_slab] = work_seconds(w, x, c, inv.opts.quick, k);
        const std::string metric =
            std::string(c.block_cyclic ? "bc_" : "") + "work_time_us_chunks" + std::to_string(k);
        if (rep)
          rep->add(row{"redistribute", engine, w.size(), size, metric, "lower", per_slab * 1e6,
                       "unchunked-then-work", after * 1e6});
      }
    }
  });
}

const param_registrar params{
    "redistribute",
    {{"N", "N of the N x N arrays of doubles, comma-separated", "1024,4096; 1024 with --quick"}}};

const registrar reg{{"redistribute",
                     "(BLOCK,*) -> (*,BLOCK) and block_cyclic(3) -> (5) between two tasks vs pack "
                     "+ MPI_Alltoallv + unpack, and memcpy",
                     run_redistribute}};

}  // namespace

}  // namespace cairn::bench
