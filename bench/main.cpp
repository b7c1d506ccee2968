// cairn-bench: measures cairn against a baseline and prints one row per figure.
//
//   cairn-bench <name> [--json] [--quick] [--baseline-mpi | --no-baseline] [--sizes=a-b]
//               [--<parameter>=<value> ...]
//
// Subcommands register themselves (see registry.hpp); this file only parses the common
// options and dispatches.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "contract.hpp"
#include "registry.hpp"

namespace {

using cairn::bench::invocation;

// The parameters of one subcommand, indented under it.
std::string params_text(std::string_view bench) {
  std::string text;
  const auto params = cairn::bench::params_of(bench);
  std::size_t width = 0;
  for (const auto& p : params) width = std::max(width, p.name.size());
  for (const auto& p : params) {
    text += "      --";
    text += p.name;
    text += "=N";
    text += std::string(width - p.name.size() + 2, ' ');
    text += p.help;
    text += " (default ";
    text += p.default_text;
    text += ")\n";
  }
  return text;
}

// `only`: the help of one subcommand (`cairn-bench <name> --help`), else all of them.
void print_help(std::FILE* to, std::string_view only = {}) {
  std::string text =
      "usage: cairn-bench <name> [--json] [--quick] [--baseline-mpi | --no-baseline] "
      "[--sizes=a-b] [--<parameter>=N ...]\n"
      "\n"
      "subcommands and their parameters (counts take K, M, G binary suffixes or 2^k):\n";
  std::size_t width = 0;
  const auto benches = cairn::bench::registered_benches();
  for (const auto& b : benches) width = std::max(width, b.name.size());
  for (const auto& b : benches) {
    if (!only.empty() && b.name != only) continue;
    text += "  " + std::string(b.name) + std::string(width - b.name.size() + 2, ' ') +
            std::string(b.summary) + "\n" + params_text(b.name);
  }
  text +=
      "\n"
      "options:\n"
      "  --json          one JSON object per line and row instead of a table\n"
      "  --quick         fewer sizes and iterations (a few seconds)\n"
      "  --sizes=a-b     message sizes from a doubling up to b bytes (K, M, G binary; default "
      "8-4M)\n"
      "  --baseline-mpi  measure the mpi-raw baseline (the default)\n"
      "  --no-baseline   skip the baseline (its columns show n/a)\n"
      "  --help          this text\n"
      "  --raw-mpi-only  (internal; under mpirun) only the raw MPI figures, as JSON\n"
      "  --size-list=a,b (internal) exactly these message sizes, for a baseline child\n"
      "  --cairn-ranks=N ranks of a plain (threads engine) run of a collective benchmark\n"
      "                  (default CAIRN_RANKS, else the hardware threads)\n"
      "\n"
      "Run plainly, cairn uses its threads engine and the mpi-raw baseline is measured by a\n"
      "child `mpirun -np N` of this program (N = 2 for pingpong and bandwidth, else the run's\n"
      "ranks); under mpirun, cairn uses its MPI engine. pingpong, bandwidth, allreduce, bcast\n"
      "and reduce measure their baseline as a plain MPI program would: with MPI_Init and no\n"
      "cairn state in the process -- in a plain child per round (threads engine; row field\n"
      "baseline_mode \"plain-child\"), or in rounds run while no cairn world exists (MPI\n"
      "engine: before cairn's first launch, then between launches; \"before-cairn\"). Rounds of\n"
      "cairn and baseline alternate; rows carry the median, min and max of the rounds, say\n"
      "\"unstable\" (max/min above 1.5x, measured again once) and the placement probe before\n"
      "and after (handoff_ns_before/after: cache-line handoff between cores 0 and 1). Other\n"
      "benchmarks measure their MPI baseline in the same processes as cairn (\"inline\"), or in\n"
      "a child started through cairn (\"cairn-child\"). `cairn-bench calibrate` shows the two\n"
      "ways side by side. Only rank 0 prints.\n";
  std::fputs(text.c_str(), to);
}

// Returns the exit code for a usage error.
int usage_error(const std::string& what) {
  cairn::bench::note(what + " (see cairn-bench --help)");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  invocation inv;
  inv.argc = argc;
  inv.argv = argv;
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      continue;
    }
    if (arg == "--json")
      inv.opts.json = true;
    else if (arg == "--quick")
      inv.opts.quick = true;
    else if (arg == "--baseline-mpi")
      inv.opts.baseline = true;
    else if (arg == "--no-baseline")
      inv.opts.baseline = false;
    else if (arg == "--raw-mpi-only")
      inv.opts.raw_mpi_only = true;
    else if (arg.starts_with("--sizes=")) {
      const std::string err = cairn::bench::parse_size_range(arg.substr(8), inv.opts);
      if (!err.empty()) return usage_error(err);
    } else if (arg.starts_with("--size-list=")) {
      std::string_view rest = arg.substr(12);
      while (true) {
        const auto comma = rest.find(',');
        const auto v = cairn::bench::parse_size(rest.substr(0, comma));
        if (!v || *v < 1 || *v > cairn::bench::max_message_size)
          return usage_error("bad " + std::string(arg));
        inv.opts.size_list.push_back(*v);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    } else if (arg.starts_with("--cairn-")) {
      // cairn's own flags (--cairn-ranks=N or --cairn-ranks N) are read by cairn::launch from
      // argv; in the second form the value is the next argument. Only --cairn-help has none.
      if (arg.find('=') == std::string_view::npos && arg != "--cairn-help" && i + 1 < argc) ++i;
    } else if (arg.starts_with("--") && arg.find('=') != std::string_view::npos) {
      // A subcommand's parameter; checked against its declared ones below.
      const auto eq = arg.find('=');
      inv.opts.params[std::string(arg.substr(2, eq - 2))] = std::string(arg.substr(eq + 1));
    } else if (arg.starts_with("-")) {
      return usage_error("unknown option " + std::string(arg));
    } else if (inv.name.empty()) {
      inv.name = arg;
    } else {
      return usage_error("unexpected argument " + std::string(arg));
    }
  }
  if (inv.name.empty() || help) {
    if (!inv.name.empty() && !cairn::bench::find_bench(inv.name))
      return usage_error("no subcommand named " + std::string(inv.name));
    print_help(stdout, inv.name);
    return 0;
  }
  const cairn::bench::bench_entry* entry = cairn::bench::find_bench(inv.name);
  if (!entry) return usage_error("no subcommand named " + std::string(inv.name));
  const auto declared = cairn::bench::params_of(inv.name);
  for (const auto& [key, value] : inv.opts.params)
    if (std::none_of(declared.begin(), declared.end(),
                     [&](const cairn::bench::param_spec& p) { return p.name == key; }))
      return usage_error(std::string(inv.name) + " has no parameter --" + key);
  try {
    return entry->run(inv);
  } catch (const std::exception& e) {
    cairn::bench::note(std::string(inv.name) + ": " + e.what());
    return 1;
  }
}
