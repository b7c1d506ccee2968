#include "cairn/runtime/launch.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/progress_thread.hpp"
#include "runtime/rank_context.hpp"
#include "transport/threads_transport.hpp"
#if CAIRN_HAVE_MPI
#include <mpi.h>

#include "transport/mpi_transport.hpp"
#endif

namespace cairn {

namespace {
using detail::rank_context;
using detail::run_state;
using detail::topology;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

long parse_int(const char* what, const char* text, long lo, long hi) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (!end || *end || end == text || v < lo || v > hi)
    throw error(std::string("cairn::launch: ") + what + "=" + text + " is not an integer in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

double parse_seconds(const char* what, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (!end || *end || end == text || !(v >= 0))
    throw error(std::string("cairn::launch: ") + what + "=" + text +
                " is not a non-negative number of seconds");
  return v;
}

std::optional<int> ranks_from_args(int argc, char** argv) {
  static constexpr const char* flag = "--cairn-ranks=";
  for (int i = 1; i < argc && argv; ++i)
    if (argv[i] && std::strncmp(argv[i], flag, std::strlen(flag)) == 0)
      return static_cast<int>(parse_int("--cairn-ranks", argv[i] + std::strlen(flag), 1, 4096));
  return std::nullopt;
}

bool under_mpi_launcher() {
  // Open MPI, MPICH/Hydra and Intel MPI (PMI), PMIx-based launchers, Slurm's srun.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
                        "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (env(v)) return true;
  return false;
}

void print_failure(int rank, const std::string& what) {
  std::string text = "cairn: rank " + std::to_string(rank) + " failed: " + what + "\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

struct progress_setting {
  progress_mode mode = progress_mode::calls;
  double interval_s = 20e-6;
};

progress_setting progress_of(const launch_options& o) {
  progress_setting p;
  if (o.progress) {
    p.mode = *o.progress;
  } else if (const char* v = env("CAIRN_PROGRESS")) {
    if (std::strcmp(v, "calls") == 0)
      p.mode = progress_mode::calls;
    else if (std::strcmp(v, "peers") == 0)
      p.mode = progress_mode::peers;
    else if (std::strcmp(v, "thread") == 0)
      p.mode = progress_mode::thread;
    else
      throw error(std::string("cairn::launch: CAIRN_PROGRESS=") + v +
                  " is none of calls, peers, thread");
  }
  double us = 20;
  if (o.progress_interval_us)
    us = *o.progress_interval_us;
  else if (const char* v = env("CAIRN_PROGRESS_INTERVAL_US"))
    us = parse_seconds("CAIRN_PROGRESS_INTERVAL_US", v);
  if (!(us >= 0 && us <= 1e6))
    throw error("cairn::launch: progress_interval_us " + std::to_string(us) +
                " is outside [0, 1e6]");
  p.interval_s = us * 1e-6;
  return p;
}

thread_level thread_level_setting(const launch_options& o) {
  if (o.mpi_thread_level) return *o.mpi_thread_level;
  if (const char* v = env("CAIRN_MPI_THREAD_LEVEL")) {
    for (thread_level l : {thread_level::single, thread_level::funneled, thread_level::serialized,
                           thread_level::multiple})
      if (std::strcmp(v, to_string(l)) == 0) return l;
    throw error(std::string("cairn::launch: CAIRN_MPI_THREAD_LEVEL=") + v +
                " is none of single, funneled, serialized, multiple");
  }
  return thread_level::single;
}

double watchdog_setting(const launch_options& o) {
  if (o.watchdog_s) return *o.watchdog_s;
  if (const char* v = env("CAIRN_WATCHDOG_S")) return parse_seconds("CAIRN_WATCHDOG_S", v);
  return 0;
}

// Binds rank threads to the cores this process may use, one each; restores the calling
// thread's mask afterwards.
class cpu_binding {
 public:
  cpu_binding() {
#if defined(__linux__)
    CPU_ZERO(&saved_);
    have_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0;
    for (int c = 0; have_ && c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &saved_)) cpus_.push_back(c);
#endif
  }
  void bind(int rank) {
#if defined(__linux__)
    if (cpus_.empty()) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus_[static_cast<std::size_t>(rank) % cpus_.size()], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    if (rank == 0) bound_caller_ = true;
#else
    (void)rank;
#endif
  }
  void restore() {
#if defined(__linux__)
    if (bound_caller_ && have_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
#endif
  }

 private:
#if defined(__linux__)
  cpu_set_t saved_;
#endif
  bool have_ = false;
  bool bound_caller_ = false;
  std::vector<int> cpus_;
};

int run_threads(int argc, char** argv, const launch_options& o,
                const std::function<void(world&)>& fn) {
  int n = 0;
  if (o.ranks)
    n = *o.ranks;
  else if (auto a = ranks_from_args(argc, argv))
    n = *a;
  else if (const char* v = env("CAIRN_RANKS"))
    n = static_cast<int>(parse_int("CAIRN_RANKS", v, 1, 4096));
  else
    n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n < 1 || n > 4096)
    throw error("cairn::launch: " + std::to_string(n) +
                " ranks requested; the threads engine runs 1 to 4096");

  int nodes = 1;
  if (o.threads_nodes)
    nodes = *o.threads_nodes;
  else if (const char* v = env("CAIRN_THREADS_NODES"))
    nodes = static_cast<int>(parse_int("CAIRN_THREADS_NODES", v, 1, 4096));
  if (nodes < 1) throw error("cairn::launch: threads_nodes must be at least 1");
  nodes = std::min(nodes, n);
  const double watchdog = watchdog_setting(o);
  const progress_setting progress = progress_of(o);

  auto topo = std::make_shared<topology>();
  topo->node_count = nodes;
  topo->node_of.resize(static_cast<std::size_t>(n));
  // Blocks of consecutive ranks, like a block placement by a launcher.
  for (int r = 0; r < n; ++r)
    topo->node_of[static_cast<std::size_t>(r)] = static_cast<int>(static_cast<long>(r) * nodes / n);
  topo->derive();

  auto fabric = std::make_shared<detail::threads_fabric>(n);
  auto run = std::make_shared<run_state>();
  run->wake_all = [f = fabric.get()] { f->wake_all(); };
  const bool oversubscribed =
      static_cast<unsigned>(n) > std::max(1u, std::thread::hardware_concurrency());

  std::vector<std::shared_ptr<rank_context>> contexts(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto c = std::make_shared<rank_context>(r, n, engine::threads, run, topo, watchdog);
    c->set_transport(std::make_unique<detail::threads_transport>(fabric, *c, oversubscribed));
    contexts[static_cast<std::size_t>(r)] = std::move(c);
  }
  std::vector<rank_context*> helped;
  if (progress.mode != progress_mode::calls)
    for (auto& c : contexts) {
      c->enable_helpers();
      helped.push_back(c.get());
    }
  if (progress.mode == progress_mode::peers)
    fabric->set_peer_progress({helped.begin(), helped.end()});
  std::optional<detail::progress_thread> progress_thread;
  if (progress.mode == progress_mode::thread) progress_thread.emplace(helped, progress.interval_s);

  // With a core per rank, each rank thread is bound to its own core (as MPI launchers bind
  // processes): otherwise the scheduler may leave two ranks on one core for a while, and
  // every exchange between them then waits out a spin. CAIRN_BIND=none turns it off.
  const char* bind_env = env("CAIRN_BIND");
  const bool bind = !oversubscribed && !(bind_env && std::strcmp(bind_env, "none") == 0);
  cpu_binding binding;
  auto body = [&](int r) {
    if (bind) binding.bind(r);
    try {
      world w(contexts[static_cast<std::size_t>(r)]);
      fn(w);
      contexts[static_cast<std::size_t>(r)]->finish_layers();
    } catch (const detail::run_aborted&) {
    } catch (const std::exception& e) {
      run->fail(r, e.what());
    } catch (...) {
      run->fail(r, "unknown exception");
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n - 1));
  for (int r = 1; r < n; ++r) threads.emplace_back(body, r);
  body(0);
  for (auto& t : threads) t.join();
  progress_thread.reset();
  binding.restore();  // the caller's thread was rank 0
  // Only now can nothing arrive any more: report what was sent but never received.
  if (!run->aborting.load())
    for (auto& c : contexts) c->tp().finish(*c);
  // Handles the user kept now refuse every call.
  for (auto& c : contexts) c->end();
  if (run->failed_rank >= 0) {
    print_failure(run->failed_rank, run->message);
    return 1;
  }
  return 0;
}

#if CAIRN_HAVE_MPI
int run_mpi(const launch_options& o, const std::function<void(world&)>& fn) {
  const progress_setting progress = progress_of(o);
  if (progress.mode == progress_mode::peers)
    throw error(
        "cairn::launch: progress mode 'peers' needs the threads engine (ranks of one "
        "process); use 'thread' with MPI");
  // Without the progress thread the rank's own thread is the only one that calls MPI.
  detail::mpi_ensure_initialized(static_cast<int>(mpi_thread_level_requested(o)),
                                 progress.mode == progress_mode::thread);
  auto topo = std::make_shared<topology>();
  int rank = 0, size = 0, local_size = 1;
  detail::mpi_world_layout(rank, size, topo->node_of, topo->node_count, local_size);
  topo->derive();
  auto run = std::make_shared<run_state>();
  run->hard_abort = [rank](const std::string& what) {
    print_failure(rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  };
  const bool oversubscribed =
      static_cast<unsigned>(local_size) > std::max(1u, std::thread::hardware_concurrency());
  auto c = std::make_shared<rank_context>(rank, size, engine::mpi, run, topo, watchdog_setting(o));
  c->set_transport(std::make_unique<detail::mpi_transport>(*c, oversubscribed));
  std::optional<detail::progress_thread> progress_thread;
  if (progress.mode == progress_mode::thread) {
    c->enable_helpers();
    progress_thread.emplace(std::vector<rank_context*>{c.get()}, progress.interval_s);
  }
  try {
    world w(c);
    fn(w);
    c->finish_layers();
    progress_thread.reset();
    c->tp().finish(*c);
  } catch (const detail::run_aborted&) {
    // Only reachable if a hard abort returned; end the job all the same.
    run->hard_abort(run->message);
  } catch (const std::exception& e) {
    run->fail(rank, e.what());
  } catch (...) {
    run->fail(rank, "unknown exception");
  }
  progress_thread.reset();
  c->end();
  c->set_transport(nullptr);  // frees the run's communicators while MPI is still up
  return 0;
}
#endif
}  // namespace

bool mpi_available() noexcept { return CAIRN_HAVE_MPI != 0; }

const char* to_string(thread_level level) noexcept {
  switch (level) {
    case thread_level::single: return "single";
    case thread_level::funneled: return "funneled";
    case thread_level::serialized: return "serialized";
    case thread_level::multiple: return "multiple";
  }
  return "?";
}

thread_level mpi_thread_level_requested(const launch_options& options) {
  const thread_level asked = thread_level_setting(options);
  return progress_of(options).mode == progress_mode::thread ? thread_level::multiple : asked;
}

std::optional<thread_level> mpi_thread_level_provided() noexcept {
#if CAIRN_HAVE_MPI
  const int level = detail::mpi_thread_level_provided();
  if (level >= 0) return static_cast<thread_level>(level);
#endif
  return std::nullopt;
}

engine detect_engine(int, char**) {
  if (const char* e = env("CAIRN_ENGINE")) {
    if (std::strcmp(e, "threads") == 0) return engine::threads;
    if (std::strcmp(e, "mpi") == 0) return engine::mpi;
    throw error(std::string("cairn::launch: CAIRN_ENGINE=") + e +
                " is neither 'threads' nor 'mpi'");
  }
  return under_mpi_launcher() ? engine::mpi : engine::threads;
}

int launch(int argc, char** argv, const std::function<void(world&)>& fn) {
  return launch(argc, argv, launch_options{}, fn);
}

int launch(int argc, char** argv, const launch_options& options,
           const std::function<void(world&)>& fn) {
  const engine e = options.engine ? *options.engine : detect_engine(argc, argv);
  if (e == engine::threads) return run_threads(argc, argv, options, fn);
#if CAIRN_HAVE_MPI
  return run_mpi(options, fn);
#else
  throw error(
      "cairn::launch: the MPI engine was requested (CAIRN_ENGINE=mpi, or an MPI launcher was "
      "detected) but this build of cairn has no MPI; install MPI and rebuild, or set "
      "CAIRN_ENGINE=threads");
#endif
}

}  // namespace cairn
