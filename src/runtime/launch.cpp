#include "cairn/runtime/launch.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/progress_thread.hpp"
#include "runtime/rank_context.hpp"
#include "transport/threads_transport.hpp"
#if CAIRN_HAVE_MPI
#include <mpi.h>

#include "cairn/runtime/mpi.hpp"
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

// ---- Settings: flags, environment variables, options ----

// A bad flag, variable or option: launch prints "cairn: <what>" and returns 2.
struct usage_error {
  std::string what;
};
[[noreturn]] void bad(std::string what) { throw usage_error{std::move(what)}; }

// Every flag and environment variable cairn reads (launch, and the layers' variables that
// are read where they are used), for --cairn-help and the checks; docs/environment.md is the
// same table.
struct setting {
  const char* flag;      // "--cairn-..." or null
  const char* variable;  // "CAIRN_..." or null
  const char* values;    // what a value may be, or null for a flag without one
  const char* meaning;
};
constexpr setting settings_table[] = {
    {"--cairn-help", nullptr, nullptr,
     "print this list, run no rank; launch returns 0 (MPI engine: rank 0 prints)"},
    {"--cairn-engine", "CAIRN_ENGINE", "threads|mpi",
     "the engine (default: mpi under an MPI launcher: Open MPI, MPICH/Hydra, PMIx, srun; else "
     "threads)"},
    {"--cairn-ranks", "CAIRN_RANKS", "N",
     "threads engine: number of ranks, 1 to 4096 (default: the hardware threads)"},
    {"--cairn-nodes", "CAIRN_NODES", "K",
     "emulate K nodes of consecutive ranks (MPI: within each real node), 1 to 4096: only "
     "messages cross them, no node memory (default 1)"},
    {"--cairn-threads-nodes", "CAIRN_THREADS_NODES", "K",
     "threads engine: the older name of --cairn-nodes (which wins where both are given)"},
    {"--cairn-watchdog-s", "CAIRN_WATCHDOG_S", "S",
     "a wait without progress for S seconds prints its rank and pending operations and ends "
     "the run (default 0: off)"},
    {"--cairn-progress", "CAIRN_PROGRESS", "calls|peers|thread",
     "how operations advance while ranks compute: in cairn calls, by peers (threads engine), "
     "by a progress thread (default calls)"},
    {"--cairn-progress-interval-us", "CAIRN_PROGRESS_INTERVAL_US", "U",
     "progress thread: microseconds it sleeps after a sweep that found nothing, 0 to 1e6 "
     "(default 20)"},
    {"--cairn-mpi-thread-level", "CAIRN_MPI_THREAD_LEVEL", "single|funneled|serialized|multiple",
     "MPI engine: the least thread support asked of MPI (default single; multiple with the "
     "progress thread)"},
    {nullptr, "CAIRN_BIND", "cores|none",
     "threads engine: bind each rank's thread to a core of its own when there are enough "
     "cores (default cores)"},
    {nullptr, "CAIRN_CMA", "0|1",
     "MPI engine on one node: copy straight between processes (cross-memory attach) in array "
     "transfers and long board collectives (default 1)"},
    {nullptr, "CAIRN_COLL", "RULES",
     "collective algorithm rules tried before the default table, e.g. "
     "\"allreduce=ring@1m- if ranks>8\" (cairn-info prints the table)"},
    {nullptr, "CAIRN_COLL_CHECK", "0|1",
     "1: every collective first checks that all ranks agree on sizes, root and algorithm "
     "(default 0)"},
    {nullptr, "CAIRN_COLL_CHUNK", "BYTES",
     "staged shared-memory collectives: bytes per pipelined chunk, 64 to 524288, the same on "
     "every rank (default: cairn-info)"},
    {nullptr, "CAIRN_COLL_DEPTH", "N",
     "staged shared-memory collectives: chunks in flight per rank, 2 to 64; chunk x depth at "
     "most 1 MiB (default: cairn-info)"},
    {nullptr, "CAIRN_STATS", "1",
     "print each channel's counters per rank when the channel ends (unset: off)"},
};

void print_help(std::FILE* out) {
  std::string text =
      "cairn's flags (--cairn-NAME=VALUE or --cairn-NAME VALUE, before any \"--\"; removed from "
      "the\nprogram's arguments) and environment variables; launch_options set in code win "
      "over a flag,\na flag over its variable:\n";
  for (const setting& s : settings_table) {
    text += "  ";
    if (s.flag) {
      text += s.flag;
      if (s.values) text += std::string("=") + s.values;
      if (s.variable) text += ", ";
    }
    if (s.variable) text += std::string(s.variable) + "=" + s.values;
    text += std::string("\n      ") + s.meaning + "\n";
  }
  std::fputs(text.c_str(), out);
  std::fflush(out);
}

// The command line as launch reads it.
struct command_line {
  std::vector<std::pair<std::string, std::string>> flags;  // (flag, value) in order
  bool help = false;
  std::vector<std::string> args;  // argv[0] and the program's own arguments
  std::vector<int> kept;          // their indices in argv
};

const setting* flag_setting(std::string_view name) {
  for (const setting& s : settings_table)
    if (s.flag && name == s.flag) return &s;
  return nullptr;
}

std::string known_flags() {
  std::string k;
  for (const setting& s : settings_table)
    if (s.flag) k += (k.empty() ? "" : ", ") + std::string(s.flag);
  return k;
}

// Reads cairn's flags up to "--". `strict`: an unknown --cairn-* flag or a missing value is an
// error (else skipped, for detect_engine).
command_line parse_command_line(int argc, char** argv, bool strict) {
  command_line cl;
  if (!argv || argc <= 0) return cl;
  cl.args.emplace_back(argv[0] ? argv[0] : "");
  cl.kept.push_back(0);
  bool ours = true;
  for (int i = 1; i < argc && argv[i]; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") ours = false;
    if (!ours || !a.starts_with("--cairn-")) {
      cl.args.emplace_back(a);
      cl.kept.push_back(i);
      continue;
    }
    const std::size_t eq = a.find('=');
    const std::string_view name = a.substr(0, eq);
    const setting* s = flag_setting(name);
    if (!s) {
      if (strict)
        bad("unknown flag " + std::string(a) + "; cairn's flags are " + known_flags() +
            " (--cairn-help explains them)");
      continue;
    }
    if (!s->values) {  // --cairn-help
      if (eq != std::string_view::npos) {
        if (strict) bad(std::string(name) + " takes no value (got " + std::string(a) + ")");
        continue;
      }
      cl.help = true;
      continue;
    }
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(a.substr(eq + 1));
    } else if (i + 1 < argc && argv[i + 1]) {
      value = argv[++i];
    } else {
      if (strict)
        bad(std::string(name) + " needs a value (" + s->values + "): " + std::string(name) +
            "=VALUE or " + std::string(name) + " VALUE");
      continue;
    }
    cl.flags.emplace_back(std::string(name), std::move(value));
  }
  return cl;
}

// A setting's value as given, and where: "--cairn-ranks" or "CAIRN_RANKS".
struct given {
  std::string source;
  std::string value;
  std::string text() const { return source + "=" + value; }
};

// The setting named by `variable`: its flag (the last one given) wins over the environment.
std::optional<given> lookup(const command_line& cl, const char* variable) {
  for (const setting& s : settings_table) {
    if (!s.variable || std::strcmp(s.variable, variable) != 0) continue;
    if (s.flag)
      for (auto it = cl.flags.rbegin(); it != cl.flags.rend(); ++it)
        if (it->first == s.flag) return given{it->first, it->second};
    if (const char* v = std::getenv(variable))
      if (*v) return given{variable, v};
    return std::nullopt;
  }
  return std::nullopt;
}

long parse_int(const given& g, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(g.value.c_str(), &end, 10);
  if (errno || !end || *end || end == g.value.c_str() || v < lo || v > hi)
    bad(g.text() + " is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
        "]");
  return v;
}

double parse_number(const given& g, double hi, const char* unit) {
  char* end = nullptr;
  const double v = std::strtod(g.value.c_str(), &end);
  if (!end || *end || end == g.value.c_str() || !(v >= 0 && v <= hi))
    bad(g.text() + " is not a number of " + unit + " in [0, " + (hi > 1e300 ? "inf" : "1e6") + "]");
  return v;
}

// The index of g's value in `names` (an error naming them otherwise).
template <std::size_t N>
std::size_t parse_choice(const given& g, const char* const (&names)[N]) {
  std::string list;
  for (std::size_t i = 0; i < N; ++i) {
    if (g.value == names[i]) return i;
    list += (i == 0 ? "" : ", ") + std::string(names[i]);
  }
  if (N == 1) bad(g.text() + " is not accepted: set it to " + list + ", or unset it");
  bad(g.text() + " is none of " + list);
}

struct progress_setting {
  progress_mode mode = progress_mode::calls;
  double interval_s = 20e-6;
};

progress_setting progress_of(const command_line& cl, const launch_options& o) {
  progress_setting p;
  static constexpr const char* modes[] = {"calls", "peers", "thread"};
  if (auto g = lookup(cl, "CAIRN_PROGRESS"))
    p.mode = static_cast<progress_mode>(parse_choice(*g, modes));
  if (o.progress) p.mode = *o.progress;
  double us = 20;
  if (auto g = lookup(cl, "CAIRN_PROGRESS_INTERVAL_US")) us = parse_number(*g, 1e6, "microseconds");
  if (o.progress_interval_us) {
    us = *o.progress_interval_us;
    if (!(us >= 0 && us <= 1e6))
      bad("launch_options::progress_interval_us = " + std::to_string(us) +
          " is outside [0, 1e6] microseconds");
  }
  p.interval_s = us * 1e-6;
  return p;
}

thread_level thread_level_of(const command_line& cl, const launch_options& o) {
  static constexpr const char* levels[] = {"single", "funneled", "serialized", "multiple"};
  thread_level l = thread_level::single;
  if (auto g = lookup(cl, "CAIRN_MPI_THREAD_LEVEL"))
    l = static_cast<thread_level>(parse_choice(*g, levels));
  if (o.mpi_thread_level) l = *o.mpi_thread_level;
  return l;
}

std::optional<engine> engine_of(const command_line& cl) {
  static constexpr const char* engines[] = {"threads", "mpi"};
  if (auto g = lookup(cl, "CAIRN_ENGINE")) return static_cast<engine>(parse_choice(*g, engines));
  return std::nullopt;
}

bool under_mpi_launcher() {
  // Open MPI, MPICH/Hydra and Intel MPI (PMI), PMIx-based launchers, Slurm's srun.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
                        "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (env(v)) return true;
  return false;
}

// Everything a run needs, from launch_options, else the flags, else the environment. Every
// value given anywhere is checked, also where this run would not use it.
struct run_settings {
  engine eng = engine::threads;
  int ranks = 1;
  int nodes = 1;
  double watchdog_s = 0;
  progress_setting progress;
  thread_level level = thread_level::single;
  bool bind = true;
};

run_settings resolve(const command_line& cl, const launch_options& o, bool on_communicator) {
  run_settings s;
  const std::optional<engine> asked = engine_of(cl);
  if (o.engine && on_communicator && *o.engine != engine::mpi)
    bad("launch_options::engine = threads, but the run was given an MPI communicator");
  s.eng = o.engine               ? *o.engine
          : on_communicator      ? engine::mpi
          : asked                ? *asked
          : under_mpi_launcher() ? engine::mpi
                                 : engine::threads;

  s.ranks = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (auto g = lookup(cl, "CAIRN_RANKS")) s.ranks = static_cast<int>(parse_int(*g, 1, 4096));
  if (o.ranks) {
    if (*o.ranks < 1 || *o.ranks > 4096)
      bad("launch_options::ranks = " + std::to_string(*o.ranks) +
          " is outside [1, 4096] (the threads engine's ranks)");
    s.ranks = *o.ranks;
  }
  // Later sources win: the older threads-only name, then CAIRN_NODES, then the options.
  if (auto g = lookup(cl, "CAIRN_THREADS_NODES"))
    s.nodes = static_cast<int>(parse_int(*g, 1, 4096));
  if (auto g = lookup(cl, "CAIRN_NODES")) s.nodes = static_cast<int>(parse_int(*g, 1, 4096));
  for (const auto& [given, name] :
       {std::pair{o.threads_nodes, "threads_nodes"}, std::pair{o.nodes, "nodes"}})
    if (given) {
      if (*given < 1 || *given > 4096)
        bad(std::string("launch_options::") + name + " = " + std::to_string(*given) +
            " is outside [1, 4096]");
      s.nodes = *given;
    }
  if (s.eng == engine::threads) s.nodes = std::min(s.nodes, s.ranks);
  if (auto g = lookup(cl, "CAIRN_WATCHDOG_S"))
    s.watchdog_s = parse_number(*g, std::numeric_limits<double>::infinity(), "seconds");
  if (o.watchdog_s) {
    if (!(*o.watchdog_s >= 0))
      bad("launch_options::watchdog_s = " + std::to_string(*o.watchdog_s) +
          " is not a non-negative number of seconds");
    s.watchdog_s = *o.watchdog_s;
  }
  s.progress = progress_of(cl, o);
  s.level = thread_level_of(cl, o);

  // Read where they are used; checked here so that a typo fails before any rank starts.
  static constexpr const char* bind_values[] = {"cores", "none"};
  static constexpr const char* switches[] = {"0", "1"};
  static constexpr const char* on[] = {"1"};
  if (auto g = lookup(cl, "CAIRN_BIND")) s.bind = parse_choice(*g, bind_values) == 0;
  if (auto g = lookup(cl, "CAIRN_CMA")) (void)parse_choice(*g, switches);
  if (auto g = lookup(cl, "CAIRN_COLL_CHECK")) (void)parse_choice(*g, switches);
  if (auto g = lookup(cl, "CAIRN_COLL_CHUNK")) (void)parse_int(*g, 64, 524288);
  if (auto g = lookup(cl, "CAIRN_COLL_DEPTH")) (void)parse_int(*g, 2, 64);
  if (auto g = lookup(cl, "CAIRN_STATS")) (void)parse_choice(*g, on);

  if (s.eng == engine::mpi && s.progress.mode == progress_mode::peers)
    bad("progress mode 'peers' needs the threads engine (ranks of one process); use 'thread' "
        "with MPI");
  if (s.eng == engine::mpi && !CAIRN_HAVE_MPI)
    bad("the MPI engine was asked for (CAIRN_ENGINE, --cairn-engine, launch_options::engine, "
        "or an MPI launcher was detected) but this build of cairn has no MPI; install MPI and "
        "rebuild, or use --cairn-engine=threads");
  return s;
}

// True on the process that prints --cairn-help: rank 0 of an MPI job, any other process.
bool first_process([[maybe_unused]] const void* comm) {
#if CAIRN_HAVE_MPI
  if (detail::mpi_active()) {
    int r = 0;
    MPI_Comm_rank(comm ? *static_cast<const MPI_Comm*>(comm) : MPI_COMM_WORLD, &r);
    return r == 0;
  }
#endif
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* r = env(v)) return std::strcmp(r, "0") == 0;
  return true;
}

void print_failure(int rank, const std::string& what) {
  std::string text = "cairn: rank " + std::to_string(rank) + " failed: " + what + "\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
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

int run_threads(const run_settings& s, std::vector<std::string> args,
                const std::function<void(world&)>& fn) {
  const int n = s.ranks;
  const int nodes = s.nodes;
  const double watchdog = s.watchdog_s;
  const progress_setting progress = s.progress;

  auto topo = std::make_shared<topology>();
  topo->node_count = nodes;
  topo->node_of.resize(static_cast<std::size_t>(n));
  // Blocks of consecutive ranks, like a block placement by a launcher.
  for (int r = 0; r < n; ++r)
    topo->node_of[static_cast<std::size_t>(r)] = static_cast<int>(static_cast<long>(r) * nodes / n);
  topo->derive();

  auto fabric = std::make_shared<detail::threads_fabric>(n, nodes == 1);
  auto run = std::make_shared<run_state>();
  run->args = std::move(args);
  run->wake_all = [f = fabric.get()] { f->wake_all(); };
  run->waits = std::make_unique<detail::rank_wait[]>(static_cast<std::size_t>(n));
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
  const bool bind = !oversubscribed && s.bind;
  cpu_binding binding;
  auto body = [&](int r) {
    if (bind) binding.bind(r);
    try {
      world w(contexts[static_cast<std::size_t>(r)]);
      fn(w);
      contexts[static_cast<std::size_t>(r)]->finish_layers();
      contexts[static_cast<std::size_t>(r)]->tp().announce_end();
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
    for (auto& c : contexts)
      if (std::string error = c->tp().finish(*c); !error.empty()) run->fail(c->rank(), error);
  // Handles the user kept now refuse every call.
  for (auto& c : contexts) c->end();
  if (run->failed_rank >= 0) {
    print_failure(run->failed_rank, run->message);
    return 1;
  }
  return 0;
}

#if CAIRN_HAVE_MPI
// Splits the ranks into `k` blocks of consecutive ranks and makes each (real node, block)
// pair a node of its own, numbered in rank order.
void emulate_nodes(topology& topo, int k) {
  const auto n = static_cast<long>(topo.node_of.size());
  std::vector<std::pair<int, long>> seen;  // (real node, block) of each emulated node
  for (long r = 0; r < n; ++r) {
    const std::pair<int, long> key{topo.node_of[static_cast<std::size_t>(r)], r * k / n};
    auto it = std::find(seen.begin(), seen.end(), key);
    if (it == seen.end()) it = seen.insert(seen.end(), key);
    topo.node_of[static_cast<std::size_t>(r)] = static_cast<int>(it - seen.begin());
  }
  topo.node_count = static_cast<int>(seen.size());
}

// One process's rank of a run on the MPI engine, from its start to its end: what run_mpi runs
// the rank's function in, and what an mpi_session keeps open. `call` names the caller in
// messages about the communicator.
class mpi_rank_run {
 public:
  mpi_rank_run(const run_settings& s, const char* call, const void* comm_given,
               std::vector<std::string> args) {
    MPI_Comm comm = MPI_COMM_WORLD;
    if (comm_given) {
      if (!detail::mpi_active())
        bad(std::string(call) + " was called while MPI is not initialized");
      comm = *static_cast<const MPI_Comm*>(comm_given);
      if (comm == MPI_COMM_NULL) bad(std::string(call) + " was given MPI_COMM_NULL");
    }
    const progress_setting progress = s.progress;
    const thread_level asked =
        progress.mode == progress_mode::thread ? thread_level::multiple : s.level;
    // Without the progress thread the rank's own thread is the only one that calls MPI.
    const std::string wrong = detail::mpi_ensure_initialized(
        static_cast<int>(asked), progress.mode == progress_mode::thread);
    if (!wrong.empty()) bad(wrong);
    auto topo = std::make_shared<topology>();
    int size = 0, local_size = 1;
    detail::mpi_world_layout(comm, rank_, size, topo->node_of, topo->node_count, local_size);
    if (s.nodes > 1) emulate_nodes(*topo, std::min(s.nodes, size));
    topo->derive();
    run_ = std::make_shared<run_state>();
    run_->args = std::move(args);
    run_->hard_abort = [rank = rank_](const std::string& what) {
      print_failure(rank, what);
      MPI_Abort(MPI_COMM_WORLD, 1);  // the whole job, also beyond a communicator given to launch
    };
    const bool oversubscribed =
        static_cast<unsigned>(local_size) > std::max(1u, std::thread::hardware_concurrency());
    ctx_ = std::make_shared<rank_context>(rank_, size, engine::mpi, run_, topo, s.watchdog_s);
    ctx_->set_transport(std::make_unique<detail::mpi_transport>(*ctx_, oversubscribed, comm,
                                                                topo->node_count == 1));
    if (progress.mode == progress_mode::thread) {
      ctx_->enable_helpers();
      progress_thread_.emplace(std::vector<rank_context*>{ctx_.get()}, progress.interval_s);
    }
    detail::mpi_note_run(rank_);
  }
  mpi_rank_run(const mpi_rank_run&) = delete;
  mpi_rank_run& operator=(const mpi_rank_run&) = delete;
  ~mpi_rank_run() {
    stop_running();
    progress_thread_.reset();
    ctx_->end();
    ctx_->set_transport(nullptr);  // frees the run's communicators while MPI is still up
  }

  const std::shared_ptr<rank_context>& context() const noexcept { return ctx_; }

  /// The rank's work returned normally: ends the run as every rank does (collective; waits
  /// for the others, reports messages nobody received).
  void finish() {
    ctx_->finish_layers();
    progress_thread_.reset();
    stop_running();
    ctx_->tp().announce_end();
    if (std::string error = ctx_->tp().finish(*ctx_); !error.empty())
      throw std::runtime_error(error);
  }

  /// Something escaped the rank's work: records it and ends the job (MPI_Abort).
  [[noreturn]] void fail(const std::string& what) noexcept {
    try {
      run_->fail(rank_, what);
    } catch (...) {
    }
    hard_abort();  // fail() aborts unless another failure was recorded first
  }

  /// Ends the job after a failure recorded elsewhere (run_aborted reached the top).
  [[noreturn]] void hard_abort() noexcept {
    try {
      run_->hard_abort(run_->message);
    } catch (...) {
    }
    std::abort();  // MPI_Abort returned
  }

 private:
  // exit() no longer ends the job for this run (once: mpi_note_run's calls pair up).
  void stop_running() noexcept {
    if (std::exchange(running_, false)) detail::mpi_note_run(-1);
  }

  int rank_ = 0;
  bool running_ = true;
  std::shared_ptr<run_state> run_;
  std::shared_ptr<rank_context> ctx_;
  std::optional<detail::progress_thread> progress_thread_;
};

int run_mpi(const run_settings& s, const void* comm_given, std::vector<std::string> args,
            const std::function<void(world&)>& fn) {
  mpi_rank_run run(s, "launch(MPI_Comm, ...)", comm_given, std::move(args));
  try {
    world w(run.context());
    fn(w);
    run.finish();
  } catch (const detail::run_aborted&) {
    // Only reachable if a hard abort returned; end the job all the same.
    run.hard_abort();
  } catch (const std::exception& e) {
    run.fail(e.what());
  } catch (...) {
    run.fail("unknown exception");
  }
  return 0;
}
#endif
}  // namespace

#if CAIRN_HAVE_MPI
struct mpi_session::state {
  mpi_rank_run run;
  cairn::world w;
  int exceptions;  // std::uncaught_exceptions() when the session opened

  state(const run_settings& s, const MPI_Comm& comm, std::vector<std::string> args)
      : run(s, "the session", &comm, std::move(args)),
        w(run.context()),
        exceptions(std::uncaught_exceptions()) {}
};

mpi_session::mpi_session(MPI_Comm comm, const launch_options& options)
    : mpi_session(comm, 0, nullptr, options) {}

mpi_session::mpi_session(MPI_Comm comm, int argc, char** argv, const launch_options& options) {
  try {
    command_line cl = parse_command_line(argc, argv, true);
    const run_settings s = resolve(cl, options, true);
    state_ = std::make_unique<state>(s, comm, std::move(cl.args));
    if (cl.help && first_process(&comm)) print_help(stdout);
  } catch (const usage_error& e) {
    throw error("cairn::mpi_session: " + e.what);
  }
}

mpi_session::~mpi_session() {
  if (state_ && std::uncaught_exceptions() > state_->exceptions)
    state_->run.fail("an exception left the scope of an open cairn::mpi_session");
  close();
}

cairn::world& mpi_session::world() {
  if (!state_) throw error("cairn::mpi_session::world: the session was closed");
  return state_->w;
}

void mpi_session::abort(const std::string& what) noexcept {
  if (state_) state_->run.fail(what);  // does not return
  int rank = 0;                        // closed: the rank in MPI_COMM_WORLD
  if (detail::mpi_active()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  print_failure(rank, what);
  if (detail::mpi_active()) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void mpi_session::close() {
  const std::unique_ptr<state> s = std::move(state_);
  if (!s) return;
  try {
    s->run.finish();
  } catch (const detail::run_aborted&) {
    s->run.hard_abort();
  } catch (const std::exception& e) {
    s->run.fail(e.what());
  } catch (...) {
    s->run.fail("unknown exception");
  }
}
#endif

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
  try {
    const command_line none;
    return progress_of(none, options).mode == progress_mode::thread
               ? thread_level::multiple
               : thread_level_of(none, options);
  } catch (const usage_error& e) {
    throw error("cairn::mpi_thread_level_requested: " + e.what);
  }
}

std::optional<thread_level> mpi_thread_level_provided() noexcept {
#if CAIRN_HAVE_MPI
  const int level = detail::mpi_thread_level_provided();
  if (level >= 0) return static_cast<thread_level>(level);
#endif
  return std::nullopt;
}

engine detect_engine(int argc, char** argv) {
  try {
    if (auto e = engine_of(parse_command_line(argc, argv, false))) return *e;
  } catch (const usage_error& e) {
    throw error("cairn::detect_engine: " + e.what);
  }
  return under_mpi_launcher() ? engine::mpi : engine::threads;
}

namespace detail {

int launch_main(int* update, int argc, char** argv, const launch_options& options,
                const void* mpi_comm, const std::function<void(world&)>& fn) {
  try {
    command_line cl = parse_command_line(argc, argv, true);
    if (update && argv && argc > 0) {  // remove cairn's flags in place, as MPI_Init does
      int j = 0;
      for (int i : cl.kept) argv[j++] = argv[i];
      argv[j] = nullptr;
      *update = j;
    }
    if (cl.help) {
      if (first_process(mpi_comm)) print_help(stdout);
      return 0;
    }
    const run_settings s = resolve(cl, options, mpi_comm != nullptr);
    if (s.eng == engine::threads) return run_threads(s, std::move(cl.args), fn);
#if CAIRN_HAVE_MPI
    return run_mpi(s, mpi_comm, std::move(cl.args), fn);
#else
    return 2;  // resolve() refused the MPI engine already
#endif
  } catch (const usage_error& e) {
    const std::string text = "cairn: " + e.what + "\n";
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    return 2;
  }
}

}  // namespace detail

}  // namespace cairn
