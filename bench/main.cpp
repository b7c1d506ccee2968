// cairn-bench: measures cairn against a baseline and prints one row per figure.
//
//   cairn-bench <name> [--json] [--quick] [--baseline-mpi | --no-baseline] [--sizes=a-b]
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

void print_help(std::FILE* to) {
  std::string text =
      "usage: cairn-bench <name> [--json] [--quick] [--baseline-mpi | --no-baseline] "
      "[--sizes=a-b]\n"
      "\n"
      "subcommands:\n";
  std::size_t width = 0;
  const auto benches = cairn::bench::registered_benches();
  for (const auto& b : benches) width = std::max(width, b.name.size());
  for (const auto& b : benches)
    text += "  " + std::string(b.name) + std::string(width - b.name.size() + 2, ' ') +
            std::string(b.summary) + "\n";
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
      "  --cairn-ranks=N ranks of a plain (threads engine) run of a collective benchmark\n"
      "                  (default CAIRN_RANKS, else the hardware threads)\n"
      "\n"
      "Run plainly, cairn uses its threads engine and the mpi-raw baseline is measured by a\n"
      "child `mpirun -np N` of this program (N = 2 for pingpong and bandwidth, else the run's\n"
      "ranks); under mpirun, cairn uses its MPI engine and the baseline is measured in the same\n"
      "processes. Only rank 0 prints.\n";
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
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_help(stdout);
      return 0;
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
    } else if (arg.starts_with("--cairn-")) {
      // cairn's own flags (e.g. --cairn-ranks=N) are read by cairn::launch from argv.
    } else if (arg.starts_with("-")) {
      return usage_error("unknown option " + std::string(arg));
    } else if (inv.name.empty()) {
      inv.name = arg;
    } else {
      return usage_error("unexpected argument " + std::string(arg));
    }
  }
  if (inv.name.empty()) {
    print_help(stdout);
    return 0;
  }
  const cairn::bench::bench_entry* entry = cairn::bench::find_bench(inv.name);
  if (!entry) return usage_error("no subcommand named " + std::string(inv.name));
  try {
    return entry->run(inv);
  } catch (const std::exception& e) {
    cairn::bench::note(std::string(inv.name) + ": " + e.what());
    return 1;
  }
}
