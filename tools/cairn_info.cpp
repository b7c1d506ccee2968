// cairn-info: prints the engines of this build, every collective's algorithms and the active
// selection table (the default table in CAIRN_COLL syntax, one rule a line, then the CAIRN_COLL
// rules that come before it); `--json` prints the same facts as one JSON object. Exits 2 with
// the error when an option is unknown or an environment variable it reads (CAIRN_COLL,
// CAIRN_PROGRESS, CAIRN_MPI_THREAD_LEVEL) has a bad value.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/cairn.hpp"

#ifndef CAIRN_VERSION
#define CAIRN_VERSION "unknown"
#endif

namespace {
constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

constexpr const char* usage =
    "usage: cairn-info [--json] [--help] [--version]\n"
    "       cairn-info tram (SHAPE | --ranks=P [--per-node=K]) [--buffer-bytes=B] [--json]\n"
    "Prints what this build of cairn offers and what a run would use here: the engines, the MPI\n"
    "engine's thread level, the progress mode, every collective's algorithms, the default\n"
    "algorithm selection table and the rules of CAIRN_COLL that come before it.\n"
    "  --json     the same facts as one JSON object\n"
    "  --help     this text\n"
    "  --version  cairn's version\n"
    "tram: TRAM's model of a grid route (Table 3.2): for SHAPE (extents like 32x32x32), or the\n"
    "grid route::grid picks for P ranks (K per node), the destinations reached in each number of\n"
    "messages, the mean, the peers (buffers) per rank and their memory at B bytes each (16384).\n"
    "Exit status: 0; 2 for an unknown option or a bad CAIRN_COLL, CAIRN_PROGRESS or\n"
    "CAIRN_MPI_THREAD_LEVEL. A program's own flags and variables: run it with --cairn-help.\n";

std::string range_text(const cairn::coll::selection_rule& r) {
  if (r.min_bytes == 0 && r.max_bytes == no_limit) return "for every size";
  if (r.max_bytes == no_limit) return "for " + std::to_string(r.min_bytes) + " bytes and more";
  if (r.min_bytes == 0) return "up to " + std::to_string(r.max_bytes) + " bytes";
  return "from " + std::to_string(r.min_bytes) + " to " + std::to_string(r.max_bytes) + " bytes";
}

// A rule's conditions as written in the table (" if a and b"; empty without any).
std::string conditions_text(const cairn::coll::selection_rule& r) {
  std::string s;
  for (std::size_t i = 0; i < r.conditions.size(); ++i)
    s += (i ? " and " : " if ") + r.conditions[i];
  return s;
}

// Everything cairn-info reports, gathered once for either output.
struct facts {
  bool mpi_built = false;
  cairn::engine detected = cairn::engine::threads;
  std::optional<std::string> progress_env;
  cairn::thread_level level = cairn::thread_level::single;
  std::optional<std::string> level_env;
  std::optional<std::string> coll_env;
  std::vector<cairn::coll::collective_algorithms> catalog;
  std::vector<cairn::coll::selection_rule> defaults;
  std::vector<cairn::coll::selection_rule> overrides;
  cairn::coll::staging_shape staging;
  std::optional<std::string> chunk_env, depth_env;
};

std::optional<std::string> variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// Throws cairn::error for a bad environment.
facts gather() {
  facts f;
  f.mpi_built = cairn::mpi_available();
  f.detected = cairn::detect_engine(0, nullptr);
  f.progress_env = variable("CAIRN_PROGRESS");
  f.level = cairn::mpi_thread_level_requested({});  // checks CAIRN_PROGRESS too
  f.level_env = variable("CAIRN_MPI_THREAD_LEVEL");
  f.coll_env = variable("CAIRN_COLL");
  f.catalog = cairn::coll::algorithm_catalog();
  f.defaults = cairn::coll::default_selection();
  f.overrides = cairn::coll::environment_selection();
  f.staging = cairn::coll::default_staging();
  f.chunk_env = variable("CAIRN_COLL_CHUNK");
  f.depth_env = variable("CAIRN_COLL_DEPTH");
  return f;
}

std::string quote(std::string_view in) {
  std::string s = "\"";
  for (const char c : in) {
    switch (c) {
      case '"': s += "\\\""; break;
      case '\\': s += "\\\\"; break;
      case '\n': s += "\\n"; break;
      case '\t': s += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          s += buf;
        } else {
          s += c;
        }
    }
  }
  return s + "\"";
}

std::string optional_string(const std::optional<std::string>& v) { return v ? quote(*v) : "null"; }

// JSON is built by appending only (GCC 12 warns falsely about `"," + std::string`).
void append_list(std::string& s, const std::vector<std::string>& items) {
  s += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) s += ',';
    s += quote(items[i]);
  }
  s += ']';
}

void append_rule(std::string& s, const cairn::coll::selection_rule& r) {
  s += "{\"collective\":";
  s += quote(r.collective);
  s += ",\"algorithm\":";
  s += quote(r.algorithm);
  s += ",\"min_bytes\":";
  s += std::to_string(r.min_bytes);
  s += ",\"max_bytes\":";
  s += r.max_bytes == no_limit ? std::string("null") : std::to_string(r.max_bytes);
  s += ",\"conditions\":";
  append_list(s, r.conditions);
  s += ",\"rule\":";
  s += quote(cairn::coll::to_string(r));
  s += '}';
}

void append_rules(std::string& s, const std::vector<cairn::coll::selection_rule>& rules) {
  s += '[';
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (i) s += ',';
    append_rule(s, rules[i]);
  }
  s += ']';
}

// The layers of the library, bottom up (ARCHITECTURE.md, "Layers").
struct layer {
  const char* name;
  const char* headers;
  const char* offers;
};
#ifndef CAIRN_INFO_HAVE_FFT
#define CAIRN_INFO_HAVE_FFT 0
#endif
constexpr layer layers[] = {
    {"runtime", "cairn/runtime/", "launch, world, groups, point-to-point, requests, values"},
    {"collectives", "cairn/coll/",
     "blocking, non-blocking and persistent collectives, schedules, generalized reduce"},
    {"channels", "cairn/msg/",
     "aggregated messages: channels of any item type, routes, combining, termination, async"},
    {"containers", "cairn/containers/",
     "counting_set, map, set, bag, array, disjoint_set on channels"},
    {"arrays", "cairn/array/", "darray, layouts, redistribution plans, tasks, halo exchange"},
    {"fft", "cairn/fft/",
     CAIRN_INFO_HAVE_FFT ? "distributed FFTs over darray (library cairn::fft)"
                         : "distributed FFTs (not built: FFTW was not found)"},
    {"flow", "cairn/flow/",
     "Aspen flow graphs: modules, queues, reduce and bcast modules, lowering, to_dot"},
};

void print_json(const facts& f) {
  std::string s = "{\"version\":";
  s += quote(CAIRN_VERSION);
  s += ",\"engines\":";
  append_list(s, f.mpi_built ? std::vector<std::string>{"threads", "mpi"}
                             : std::vector<std::string>{"threads"});
  s += ",\"detected_engine\":";
  s += quote(cairn::to_string(f.detected));
  s += ",\"progress_modes\":[\"calls\",\"peers\",\"thread\"],\"default_progress_mode\":\"calls\"";
  s += ",\"CAIRN_PROGRESS\":";
  s += optional_string(f.progress_env);
  s += ",\"mpi_thread_level\":";
  s += quote(cairn::to_string(f.level));
  s += ",\"CAIRN_MPI_THREAD_LEVEL\":";
  s += optional_string(f.level_env);
  s += ",\"layers\":[";
  for (std::size_t i = 0; i < std::size(layers); ++i) {
    if (i) s += ',';
    s += "{\"name\":";
    s += quote(layers[i].name);
    s += ",\"headers\":";
    s += quote(layers[i].headers);
    s += ",\"offers\":";
    s += quote(layers[i].offers);
    s += '}';
  }
  s += "]";
  s += ",\"collectives\":[";
  for (std::size_t i = 0; i < f.catalog.size(); ++i) {
    const auto& c = f.catalog[i];
    if (i) s += ',';
    s += "{\"collective\":";
    s += quote(c.collective);
    s += ",\"algorithms\":";
    append_list(s, c.algorithms);
    s += ",\"size_measures\":";
    s += quote(c.size_meaning);
    s += '}';
  }
  s += "],\"default_selection\":";
  append_rules(s, f.defaults);
  s += ",\"CAIRN_COLL\":";
  s += optional_string(f.coll_env);
  s += ",\"overrides\":";
  append_rules(s, f.overrides);
  s += ",\"staging\":{\"chunk_bytes\":";
  s += std::to_string(f.staging.chunk);
  s += ",\"depth\":";
  s += std::to_string(f.staging.depth);
  s += ",\"CAIRN_COLL_CHUNK\":";
  s += optional_string(f.chunk_env);
  s += ",\"CAIRN_COLL_DEPTH\":";
  s += optional_string(f.depth_env);
  s += "}}\n";
  std::cout << s;
}

void print_text(const facts& f) {
  std::cout << "cairn " << CAIRN_VERSION << "\n";
  std::cout << "engines: threads" << (f.mpi_built ? ", mpi" : "") << " (this run would use "
            << cairn::to_string(f.detected) << ")\n";
  std::cout << "progress modes: calls (default), peers (threads engine), thread; CAIRN_PROGRESS"
            << (f.progress_env ? " = \"" + *f.progress_env + "\"" : std::string(" is not set"))
            << "\n";
  std::cout << "MPI engine's thread level: " << cairn::to_string(f.level)
            << (f.level == cairn::thread_level::multiple && !f.level_env ? " (the progress thread)"
                                                                         : "")
            << "; CAIRN_MPI_THREAD_LEVEL"
            << (f.level_env ? " = \"" + *f.level_env + "\"" : std::string(" is not set")) << "\n\n";
  std::cout << "layers (bottom up; headers under include/):\n";
  for (const layer& l : layers)
    std::cout << "  " << l.name << std::string(12 - std::string_view(l.name).size(), ' ')
              << l.headers << std::string(19 - std::string_view(l.headers).size(), ' ') << l.offers
              << "\n";
  std::cout << "\n";
  std::cout << "collectives and algorithms (size measured for the selection table):\n";
  for (const auto& c : f.catalog) {
    std::cout << "  " << c.collective << ":";
    for (const auto& a : c.algorithms) std::cout << " " << a;
    std::cout << "  [" << c.size_meaning << "]\n";
  }
  std::cout
      << "every collective: i<name> (request), <name> (blocking), <name>_init (persistent)\n"
         "in place (cairn::in_place): allreduce, reduce, gather, scatter, allgather, alltoall,\n"
         "  reduce_scatter_block, scan, exscan\n"
         "generalized reduce (any receiver set): ireduce(participants, receivers, ...), "
         "ireduce_init;\n"
         "  generalized_reduce_options: algorithm, load_balance, balancer, direct_delivery\n";
  std::cout << "\ndefault selection (CAIRN_COLL syntax; for each collective the first rule "
               "that applies\nand whose algorithm can run the call; shared_memory needs one "
               "node, ring a commutative\noperation):\n";
  for (const auto& r : f.defaults) std::cout << "  " << cairn::coll::to_string(r) << "\n";
  std::cout << "\nCAIRN_COLL"
            << (f.coll_env ? " = \"" + *f.coll_env + "\"" : std::string(" is not set")) << "\n";
  if (!f.overrides.empty())
    std::cout << "overrides (first matching rule wins; per-call algorithms win over them):\n";
  for (const auto& r : f.overrides)
    std::cout << "  " << r.collective << "=" << r.algorithm << " " << range_text(r)
              << conditions_text(r) << "\n";
  std::cout << "\nshared_memory_staged: chunks of " << f.staging.chunk << " bytes, "
            << f.staging.depth << " in flight per rank (defaults; CAIRN_COLL_CHUNK"
            << (f.chunk_env ? " = " + *f.chunk_env : std::string(" not set"))
            << ", CAIRN_COLL_DEPTH"
            << (f.depth_env ? " = " + *f.depth_env : std::string(" not set")) << ")\n";
}
}  // namespace

// A positive integer option value, or -1.
long long positive(std::string_view text) {
  long long v = 0;
  if (text.empty() || text.size() > 18) return -1;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v > 0 ? v : -1;
}

// cairn-info tram ...: the grid model.
int tram(int argc, char** argv) {
  std::vector<int> dims;
  long long ranks = -1, per_node = 0, buffer_bytes = 16384;
  bool json = false;
  auto bad = [](const std::string& why) {
    std::cerr << "cairn-info tram: " << why << "\n";
    return 2;
  };
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view flag) {
      return a.substr(0, flag.size()) == flag ? positive(a.substr(flag.size())) : -2;
    };
    if (a == "--json") {
      json = true;
    } else if (const long long v = value("--ranks="); v != -2) {
      if (v < 1 || v > 1 << 24) return bad("--ranks needs an integer in [1, 16777216]");
      ranks = v;
    } else if (const long long k = value("--per-node="); k != -2) {
      if (k < 1) return bad("--per-node needs a positive integer");
      per_node = k;
    } else if (const long long b = value("--buffer-bytes="); b != -2) {
      if (b < 1) return bad("--buffer-bytes needs a positive integer");
      buffer_bytes = b;
    } else if (!a.empty() && a[0] != '-' && dims.empty()) {
      for (std::size_t at = 0; at <= a.size();) {
        const std::size_t x = std::min(a.find('x', at), a.size());
        const long long e = positive(a.substr(at, x - at));
        if (e < 1 || e > 1 << 24) return bad("shape '" + std::string(a) + "' is not like 32x32x32");
        dims.push_back(static_cast<int>(e));
        at = x + 1;
      }
    } else {
      return bad("unknown argument '" + std::string(a) + "'");
    }
  }
  if (dims.empty() == (ranks < 0)) return bad("give a shape (like 32x32x32) or --ranks=P");
  if (dims.empty())
    dims =
        cairn::msg::route::grid::balanced_dims(static_cast<int>(ranks), static_cast<int>(per_node));
  try {
    const auto m = cairn::msg::model_grid(dims, static_cast<std::size_t>(buffer_bytes));
    if (!json) {
      std::cout << m.describe();
      return 0;
    }
    std::cout << "{\"dims\": [";
    for (std::size_t d = 0; d < m.dims.size(); ++d) std::cout << (d ? ", " : "") << m.dims[d];
    std::cout << "], \"ranks\": " << m.ranks() << ", \"destinations_by_messages\": [";
    for (std::size_t a = 0; a < m.ranks_at.size(); ++a)
      std::cout << (a ? ", " : "") << m.ranks_at[a];
    std::cout << "], \"mean_messages\": " << m.mean_messages() << ", \"peers\": " << m.peers
              << ", \"buffer_bytes\": " << m.buffer_bytes
              << ", \"buffer_memory\": " << m.buffer_memory() << "}\n";
  } catch (const cairn::error& e) {
    return bad(e.what());
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "tram") return tram(argc, argv);
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return 0;
    }
    if (a == "--version") {
      std::cout << "cairn " << CAIRN_VERSION << "\n";
      return 0;
    }
    if (a == "--json") {
      json = true;
      continue;
    }
    std::cerr << "cairn-info: unknown option '" << a
              << "'; options are --json, --help, --version\n";
    return 2;
  }
  try {
    const facts f = gather();
    if (json)
      print_json(f);
    else
      print_text(f);
  } catch (const cairn::error& e) {
    std::cerr << "cairn-info: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
