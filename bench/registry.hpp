#pragma once
/// \file
/// The table of cairn-bench subcommands. A benchmark registers itself with one line in its own
/// source file:
///
///     const cairn::bench::registrar reg{"name", "one-line summary", run_function};

#include <string_view>
#include <vector>

#include "contract.hpp"

namespace cairn::bench {

/// What a subcommand receives: the parsed options and the raw command line (for cairn::launch,
/// which reads `--cairn-*` flags, and for re-running the program under mpirun).
struct invocation {
  std::string_view name;  ///< the subcommand being run
  options opts;           ///< parsed common options
  int argc = 0;           ///< the program's argc
  char** argv = nullptr;  ///< the program's argv
};

/// A subcommand's entry point; returns the process exit code.
using bench_fn = int (*)(const invocation&);

/// One registered subcommand.
struct bench_entry {
  std::string_view name;     ///< what the user types after `cairn-bench`
  std::string_view summary;  ///< one line for `--help`
  bench_fn run = nullptr;    ///< entry point
};

/// Registers a subcommand at static-initialization time (declare one at namespace scope).
class registrar {
 public:
  /// Adds `entry` to the table.
  explicit registrar(bench_entry entry);
};

/// All registered subcommands, sorted by name.
std::vector<bench_entry> registered_benches();

/// The subcommand called `name`, or nullptr.
const bench_entry* find_bench(std::string_view name);

}  // namespace cairn::bench
