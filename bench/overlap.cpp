// `cairn-bench overlap`: how much of a non-blocking collective hides behind computation
// (LibNBC's motivation; the OSU and IMB-NBC overlap benchmarks). For iallreduce (doubles, sum),
// ialltoall (the size is each rank's whole send buffer) and ibcast (root 0), at 1 KiB, 64 KiB and
// 1 MiB:
//   t_pure   start + wait, nothing in between
//   t_cpu    the compute loop alone, sized to last t_pure
//   t_ovrl   start, compute, wait — `nopoll`: the compute makes no library call; `poll`: it
//            calls test() every ~1 µs of compute (t_test: time spent inside those calls);
//            `-progress-peers` / `-progress-thread`: no library call, with a progress mode
//            (launch_options::progress) advancing the collective meanwhile
// and reports both overlap formulas:
//   IMB-NBC  100 · max(0, min(1, (t_pure + t_cpu − t_ovrl) / min(t_pure, t_cpu)))
//   OSU      max(0, 100 − 100 · (t_ovrl − (t_cpu − t_test)) / t_pure), t_cpu being the compute
//            loop of the overlapped run with its test calls (so t_cpu − t_test = compute alone)
// for cairn and, as the baseline in the same run, MPI's MPI_I<coll> + MPI_Test. Times are
// medians over iterations, maximum over ranks. Results are verified after every timed loop.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// A dependent floating-point chain: work the compiler cannot drop or vectorize away (the
// empty asm hides x's value, so the loop cannot be folded at its fixed point).
double spin_work(std::uint64_t n, double x) {
  for (std::uint64_t i = 0; i < n; ++i) {
    x = x * 0.9999999 + 1e-7;
    asm volatile("" : "+x"(x));
  }
  return x;
}

// Iterations of spin_work per microsecond on this core (measured once).
double spins_per_us() {
  static const double v = [] {
    double x = 1;
    std::uint64_t n = 1 << 16;
    for (;;) {
      const auto t0 = clock_type::now();
      x = spin_work(n, x);
      const double dt = seconds_since(t0);
      if (dt > 0.01) return static_cast<double>(n) / (dt * 1e6) + (x == 0 ? 1 : 0);
      n *= 2;
    }
  }();
  return v;
}

// One collective as seen by the measurement: start it, test it, wait for it, check it.
struct kernel {
  std::function<void()> start;
  std::function<bool()> test;
  std::function<void()> wait;
  std::function<void()> check;
  std::function<double(double)> slowest;            // max over ranks
  std::function<cairn::persistent_request()> plan;  // cairn: the same call, planned only
};

struct figures {
  double imb = 0, osu = 0, pure_us = 0, ovrl_us = 0;
  // Where the overlapped run's time went on the slowest rank (medians): inside the start call,
  // the compute loop (with its test calls), inside the wait call.
  double start_us = 0, compute_us = 0, wait_us = 0;
  double cpu_us = 0;  // the compute loop alone (t_cpu)
};

// Runs the measurement protocol on `k`; `poll` chooses the compute loop with test() calls.
figures measure(const kernel& k, bool poll, int iters) {
  std::vector<double> pure, cpu, ovrl, tst, in_start, in_compute, in_wait;
  double sink = 1;
  double rate = spins_per_us() * 1e6;    // compute iterations per second, refined as we go
  for (int i = 0; i < iters + 2; ++i) {  // the first two rounds warm up and calibrate
    const auto t0 = clock_type::now();
    k.start();
    k.wait();
    const double p = k.slowest(seconds_since(t0));
    const auto work = static_cast<std::uint64_t>(std::max(1.0, p * rate));
    const auto t1 = clock_type::now();
    sink = spin_work(work, sink);
    const double c = seconds_since(t1);
    rate = k.slowest(c > 0 ? static_cast<double>(work) / c : rate);  // collective: every rank calls
    double test_s = 0;
    const auto t2 = clock_type::now();
    k.start();
    const auto t_started = clock_type::now();
    if (!poll) {
      sink = spin_work(work, sink);
    } else {
      const auto chunk = static_cast<std::uint64_t>(std::max(1.0, spins_per_us()));
      bool done = false;
      for (std::uint64_t w = 0; w < work; w += chunk) {
        sink = spin_work(std::min(chunk, work - w), sink);
        if (!done) {
          const auto t3 = clock_type::now();
          done = k.test();
          test_s += seconds_since(t3);
        }
      }
    }
    const auto t_computed = clock_type::now();
    k.wait();
    const auto t_waited = clock_type::now();
    const double o = k.slowest(std::chrono::duration<double>(t_waited - t2).count());
    if (i < 2) continue;
    pure.push_back(p);
    cpu.push_back(k.slowest(c));
    ovrl.push_back(o);
    tst.push_back(k.slowest(test_s));
    in_start.push_back(k.slowest(std::chrono::duration<double>(t_started - t2).count()));
    in_compute.push_back(k.slowest(std::chrono::duration<double>(t_computed - t_started).count()));
    in_wait.push_back(k.slowest(std::chrono::duration<double>(t_waited - t_computed).count()));
  }
  k.check();
  if (sink == 0) note("overlap: (unreachable) compute sink is zero");
  const double tp = median(pure), tc = median(cpu), to = median(ovrl), tt = median(tst);
  figures f;
  f.imb = 100 * std::max(0.0, std::min(1.0, (tp + tc - to) / std::min(tp, tc)));
  // OSU's t_cpu is the compute loop of the overlapped run, test calls included (tc + tt here,
  // where tc is the compute alone); minus t_test that leaves the compute alone.
  // Clamped at 100 like IMB's: an overlapped run a little faster than the compute alone is noise.
  f.osu = std::clamp(100 - 100 * (to - ((tc + tt) - tt)) / tp, 0.0, 100.0);
  f.pure_us = tp * 1e6;
  f.ovrl_us = to * 1e6;
  f.start_us = median(in_start) * 1e6;
  f.compute_us = median(in_compute) * 1e6;
  f.wait_us = median(in_wait) * 1e6;
  f.cpu_us = tc * 1e6;
  return f;
}

// Microseconds with two decimals, for the notes.
std::string fixed(double us) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  os << us;
  return os.str();
}

// The times behind a row's overlap figures, for the notes.
void note_times(const std::string& name, std::size_t size, const std::string& who,
                const figures& f) {
  std::string text = name + " " + human_size(size) + ": " + who + " t_pure " + fixed(f.pure_us) +
                     " us, t_ovrl " + fixed(f.ovrl_us) + " us: in start " + fixed(f.start_us) +
                     " us, compute " + fixed(f.compute_us) + " us, in wait " + fixed(f.wait_us) +
                     " us (medians of the slowest rank)";
  // The compute loop is sized to last t_pure. A progress thread sharing the cores can slow it
  // when measured alone (its sweeps preempt a rank): IMB's t_cpu then overstates the overlap.
  if (f.cpu_us > 1.5 * std::min(f.compute_us, f.pure_us))
    text += "; t_cpu alone " + fixed(f.cpu_us) +
            " us, longer than the overlapped run's compute or t_pure: the IMB "
            "figure overstates";
  note(text);
}

constexpr std::array<const char*, 3> collectives = {"iallreduce", "ialltoall", "ibcast"};

std::vector<std::size_t> overlap_sizes(const options& o) {
  std::vector<std::uint64_t> def{1024, 64 * 1024};
  if (!o.quick) def.push_back(1024 * 1024);
  std::vector<std::size_t> sizes;
  for (const auto s : count_list_param(o, "bytes", def, 8, std::uint64_t{1} << 30))
    sizes.push_back(static_cast<std::size_t>(s));
  return sizes;
}

int iterations_param = 0;  // --iters, 0: by size (set once by run_overlap)

int iterations(std::size_t size, bool quick) {
  if (iterations_param > 0) return iterations_param;
  const int base = size >= (1 << 20) ? 7 : 21;
  return quick ? std::max(3, base / 3) : base;
}

// cairn's kernel for collective `c` at `size` bytes per rank.
struct cairn_buffers {
  std::vector<double> in, out;
  std::vector<std::uint8_t> a, b;
  cairn::request req;
};

kernel cairn_kernel(cairn::world& w, const std::string& c, std::size_t size, cairn_buffers& buf) {
  kernel k;
  k.slowest = [&w](double x) { return slowest(w, x); };
  k.test = [&buf] { return buf.req.test(); };
  k.wait = [&buf] { buf.req.wait(); };
  const int p = w.size(), me = w.rank();
  if (c == "iallreduce") {
    const std::size_t n = size / sizeof(double);
    buf.in.assign(n, me + 1.0);
    buf.out.assign(n, 0.0);
    k.start = [&w, &buf] { buf.req = w.iallreduce(buf.in, buf.out, cairn::plus{}); };
    k.plan = [&w, &buf] { return w.allreduce_init(buf.in, buf.out, cairn::plus{}); };
    k.check = [&buf, p] {
      for (double v : buf.out)
        if (v != p * (p + 1) / 2.0) throw std::runtime_error("overlap: iallreduce result wrong");
    };
  } else if (c == "ialltoall") {
    const std::size_t block = std::max<std::size_t>(1, size / static_cast<std::size_t>(p));
    buf.a.resize(block * static_cast<std::size_t>(p));
    for (std::size_t i = 0; i < buf.a.size(); ++i)
      buf.a[i] = static_cast<std::uint8_t>(me * 31 + i / block);
    buf.b.assign(buf.a.size(), 0);
    k.start = [&w, &buf] { buf.req = w.ialltoall(buf.a, buf.b); };
    k.plan = [&w, &buf] { return w.alltoall_init(buf.a, buf.b); };
    k.check = [&buf, block, me] {
      for (std::size_t i = 0; i < buf.b.size(); ++i)
        if (buf.b[i] != static_cast<std::uint8_t>(static_cast<int>(i / block) * 31 + me))
          throw std::runtime_error("overlap: ialltoall result wrong");
    };
  } else {
    buf.a.assign(size, me == 0 ? 7 : 0);
    k.start = [&w, &buf] { buf.req = w.ibcast(buf.a, 0); };
    k.plan = [&w, &buf] { return w.bcast_init(buf.a, 0); };
    k.check = [&buf] {
      for (auto v : buf.a)
        if (v != 7) throw std::runtime_error("overlap: ibcast result wrong");
    };
  }
  return k;
}

#if CAIRN_BENCH_HAVE_MPI
struct mpi_buffers {
  std::vector<double> in, out;
  std::vector<std::uint8_t> a, b;
  MPI_Request req = MPI_REQUEST_NULL;
};

kernel mpi_kernel(const std::string& c, std::size_t size, mpi_buffers& buf) {
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  kernel k;
  k.slowest = mpi_slowest;
  k.test = [&buf] {
    int flag = 0;
    MPI_Test(&buf.req, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  };
  k.wait = [&buf] { MPI_Wait(&buf.req, MPI_STATUS_IGNORE); };
  if (c == "iallreduce") {
    const std::size_t n = size / sizeof(double);
    buf.in.assign(n, me + 1.0);
    buf.out.assign(n, 0.0);
    k.start = [&buf] {
      MPI_Iallreduce(buf.in.data(), buf.out.data(), static_cast<int>(buf.in.size()), MPI_DOUBLE,
                     MPI_SUM, MPI_COMM_WORLD, &buf.req);
    };
    k.check = [&buf, p] {
      for (double v : buf.out)
        if (v != p * (p + 1) / 2.0)
          throw std::runtime_error("overlap: MPI_Iallreduce result wrong");
    };
  } else if (c == "ialltoall") {
    const std::size_t block = std::max<std::size_t>(1, size / static_cast<std::size_t>(p));
    buf.a.resize(block * static_cast<std::size_t>(p));
    for (std::size_t i = 0; i < buf.a.size(); ++i)
      buf.a[i] = static_cast<std::uint8_t>(me * 31 + i / block);
    buf.b.assign(buf.a.size(), 0);
    k.start = [&buf, block] {
      MPI_Ialltoall(buf.a.data(), static_cast<int>(block), MPI_BYTE, buf.b.data(),
                    static_cast<int>(block), MPI_BYTE, MPI_COMM_WORLD, &buf.req);
    };
    k.check = [&buf, block, me] {
      for (std::size_t i = 0; i < buf.b.size(); ++i)
        if (buf.b[i] != static_cast<std::uint8_t>(static_cast<int>(i / block) * 31 + me))
          throw std::runtime_error("overlap: MPI_Ialltoall result wrong");
    };
  } else {
    buf.a.assign(size, me == 0 ? 7 : 0);
    k.start = [&buf] {
      MPI_Ibcast(buf.a.data(), static_cast<int>(buf.a.size()), MPI_BYTE, 0, MPI_COMM_WORLD,
                 &buf.req);
    };
    k.check = [&buf] {
      for (auto v : buf.a)
        if (v != 7) throw std::runtime_error("overlap: MPI_Ibcast result wrong");
    };
  }
  return k;
}

figures mpi_figures(const std::string& c, std::size_t size, bool poll, bool quick) {
  mpi_buffers buf;
  return measure(mpi_kernel(c, size, buf), poll, iterations(size, quick));
}
#endif

// Where t_pure goes, from the rank's plan (a schedule is a value): its local copies and
// reductions, and the bytes its messages move, each timed alone here on the same sizes (the
// threads engine copies a message once when it is longer than 4 KiB, twice when shorter;
// MPI's copies are its own). The rest is waiting for the peer and the engine's overhead.
// The plan is rank 0's (for ibcast the root's, which receives nothing).
std::string breakdown(const cairn::coll::schedule& plan, double t_pure_us, bool threads_engine) {
  std::size_t largest = 0;
  for (const auto& st : plan.steps) largest = std::max(largest, st.bytes);
  // b's data starts 1 KiB + 64 B past a 4 KiB boundary relative to a's: source and destination
  // at equal offsets modulo 4 KiB slow copies down several times here (4K aliasing).
  std::vector<double> a(largest / sizeof(double) + 1, 1.0), b_storage(a.size() + 1024, 2.0);
  double* const b_at = b_storage.data() + 136;
  std::span<double> b(b_at, a.size());
  auto time_us = [](auto&& f) {
    double best = 1e30;
    for (int rep = 0; rep < 11; ++rep) {
      const auto t0 = clock_type::now();
      f();
      best = std::min(best, seconds_since(t0) * 1e6);
    }
    return best;
  };
  double copy_us = 0, reduce_us = 0, message_copy_us = 0;
  std::size_t copy_bytes = 0, reduce_bytes = 0, message_bytes = 0, sent_bytes = 0;
  for (const auto& st : plan.steps) {
    const std::size_t n = st.bytes / sizeof(double);
    if (st.kind == cairn::coll::step_kind::copy) {
      copy_bytes += st.bytes;
      copy_us += time_us([&] {
        std::memcpy(b.data(), a.data(), st.bytes);
        asm volatile("" ::: "memory");
      });
    } else if (st.kind == cairn::coll::step_kind::reduce) {
      reduce_bytes += st.bytes;
      reduce_us += time_us([&] {
        for (std::size_t i = 0; i < n; ++i) b[i] += a[i];
        asm volatile("" ::: "memory");
      });
    } else if (st.kind == cairn::coll::step_kind::send) {
      sent_bytes += st.bytes;
    } else if (st.kind == cairn::coll::step_kind::recv) {
      message_bytes += st.bytes;
      const int copies = threads_engine ? (st.bytes > 4096 ? 1 : 2) : 0;
      for (int c = 0; c < copies; ++c)
        message_copy_us += time_us([&] {
          std::memcpy(b.data(), a.data(), st.bytes);
          asm volatile("" ::: "memory");
        });
    }
  }
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << plan.name << " (" << plan.message_rounds() << " message rounds): t_pure " << t_pure_us
     << " us = local copies " << copy_us << " us (" << human_size(copy_bytes) << ") + reductions "
     << reduce_us << " us (" << human_size(reduce_bytes) << ") + sent " << human_size(sent_bytes)
     << ", received " << human_size(message_bytes);
  if (threads_engine) os << ", copied in " << message_copy_us << " us";
  os << " + the rest " << t_pure_us - copy_us - reduce_us - message_copy_us
     << " us (waiting for the peer, engine overhead" << (threads_engine ? "" : ", MPI's copies")
     << ")";
  return os.str();
}

// Row-name suffix of a progress mode (none for the default, progress inside calls only). An
// MPI process takes its mode from CAIRN_PROGRESS.
std::string progress_suffix(std::optional<cairn::progress_mode> m) {
  if (!m) {
    const char* v = std::getenv("CAIRN_PROGRESS");
    if (!v || std::string(v) == "calls") return "";
    return std::string("-progress-") + v;
  }
  if (*m == cairn::progress_mode::peers) return "-progress-peers";
  if (*m == cairn::progress_mode::thread) return "-progress-thread";
  return "";
}

std::string bench_name(const std::string& c, bool poll) {
  return "overlap-" + c.substr(1) + (poll ? "-poll" : "-nopoll");
}

int run_overlap(const invocation& inv) {
  const bool quick = inv.opts.quick;
  if (inv.opts.params.contains("iters"))
    iterations_param = static_cast<int>(count_param(inv.opts, "iters", 21, 1, 1'000'000));
  else
    record_param("iters", json_text("by size"));
  if (inv.opts.raw_mpi_only) {
    raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
    body = [&](cairn::world& w, report* rep) {
      for (const std::string c : collectives)
        for (std::size_t size : overlap_sizes(inv.opts))
          for (bool poll : {false, true}) {
            const figures f = mpi_figures(c, size, poll, quick);
            if (!rep) continue;
            note_times(bench_name(c, poll), size, "MPI_I" + c.substr(1), f);
            rep->add(raw_mpi_row(bench_name(c, poll), w.size(), size, "overlap_imb_pct", "higher",
                                 f.imb));
            rep->add(raw_mpi_row(bench_name(c, poll), w.size(), size, "overlap_osu_pct", "higher",
                                 f.osu));
          }
    };
#endif
    return run_raw_mpi_only(inv, body);
  }
  // A threads run spawns its MPI baseline first (same number of processes as ranks).
  std::map<std::tuple<std::string, std::string, std::size_t>, double> spawned;
  std::string why_missing;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads && inv.opts.baseline) {
    std::vector<std::string> rows;
    why_missing = spawn_raw_mpi_rows(inv, threads_run_ranks(inv), rows);
    for (const auto& line : rows) {
      const auto b = json_field(line, "bench"), m = json_field(line, "metric"),
                 s = json_field(line, "size"), v = json_field(line, "baseline_value");
      if (b && m && s && v) spawned[{*b, *m, std::stoull(*s)}] = std::stod(*v);
    }
  }
  // The progress modes: the threads engine runs each in its own launch; an MPI process has one
  // mode for its life (the progress thread needs MPI_THREAD_MULTIPLE from MPI_Init), taken from
  // CAIRN_PROGRESS — scripts/bench runs the MPI engine once per mode.
  std::vector<std::optional<cairn::progress_mode>> modes{std::nullopt};
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    modes = {cairn::progress_mode::calls, cairn::progress_mode::peers,
             cairn::progress_mode::thread};
  int rc = 0;
  for (const auto& mode : modes) {
    cairn::launch_options lo;
    lo.progress = mode;
    rc = std::max(rc, cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
                    std::optional<report> rep;
                    if (w.rank() == 0) rep.emplace(inv.opts.json);
                    const std::string engine(to_string(w.engine()));
                    const std::string suffix = progress_suffix(mode);
                    if (w.rank() == 0 && !why_missing.empty() && suffix.empty())
                      note("overlap: no mpi-raw baseline: " + why_missing);
                    for (const std::string c : collectives)
                      for (std::size_t size : overlap_sizes(inv.opts))
                        // With a progress mode, what matters is the run without polling.
                        for (bool poll : suffix.empty() ? std::vector<bool>{false, true}
                                                        : std::vector<bool>{false}) {
                          cairn_buffers buf;
                          const figures f =
                              measure(cairn_kernel(w, c, size, buf), poll, iterations(size, quick));
                          std::optional<figures> base;
#if CAIRN_BENCH_HAVE_MPI
                          if (w.engine() == cairn::engine::mpi && inv.opts.baseline)
                            base = mpi_figures(c, size, poll, quick);
#endif
                          if (!rep) continue;
                          // The baseline of a progress-mode row is MPI's run without polling.
                          const std::string base_name = bench_name(c, poll);
                          const std::string name = base_name + suffix;
                          auto baseline_of = [&](const char* metric,
                                                 double figures::*field) -> std::optional<double> {
                            if (base) return (*base).*field;
                            const auto it = spawned.find({base_name, metric, size});
                            if (it == spawned.end()) return std::nullopt;
                            return it->second;
                          };
                          rep->add(row{name, engine, w.size(), size, "overlap_imb_pct", "higher",
                                       f.imb, std::string(mpi_raw_name),
                                       baseline_of("overlap_imb_pct", &figures::imb)});
                          rep->add(row{name, engine, w.size(), size, "overlap_osu_pct", "higher",
                                       f.osu, std::string(mpi_raw_name),
                                       baseline_of("overlap_osu_pct", &figures::osu)});
                          note_times(name, size, "cairn", f);
                          if (base) note_times(name, size, "MPI_I" + c.substr(1), *base);
                          if (suffix.empty() && !poll) {
                            cairn_buffers pb;
                            const auto planned = cairn_kernel(w, c, size, pb).plan();
                            note("  breakdown " + breakdown(planned.plan(), f.pure_us,
                                                            w.engine() == cairn::engine::threads));
                          }
                        }
                  }));
  }
  return rc;
}

const param_registrar params{
    "overlap",
    {{"bytes", "message sizes per rank, comma-separated", "1K,64K,1M; 1K,64K with --quick"},
     {"iters", "timed iterations per figure", "21, 7 from 1 MiB; a third with --quick"}}};

const registrar reg{{"overlap",
                     "overlap % (IMB-NBC and OSU formulas) of iallreduce, ialltoall, ibcast with "
                     "and without polling",
                     run_overlap}};

}  // namespace

}  // namespace cairn::bench
