#pragma once
/// \file
/// The table of cairn-bench subcommands. A benchmark registers itself with one line in its own
/// source file:
///
///     const cairn::bench::registrar reg{"name", "one-line summary", run_function};

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

/// One parameter of a subcommand (its problem size or repetitions): `--<name>=<value>` on the
/// command line, listed by `--help`, recorded in every row (`params`).
struct param_spec {
  std::string_view name;          ///< e.g. "scale"
  std::string_view help;          ///< one line for `--help`
  std::string_view default_text;  ///< the default as `--help` shows it
};

/// Declares the parameters of one subcommand (declare one at namespace scope).
class param_registrar {
 public:
  /// Adds `params` to the subcommand `bench`.
  param_registrar(std::string_view bench, std::vector<param_spec> params);
};

/// The parameters declared for `bench`, in declaration order.
std::vector<param_spec> params_of(std::string_view bench);

/// Parses a count: decimal with an optional binary K/M/G suffix (`64K`), or `2^k`.
std::optional<std::uint64_t> parse_count(std::string_view text);

/// The value of `--<name>=` (parse_count), else `def`; checked against [lo, hi] (throws
/// std::invalid_argument). Records the value used for the rows' `params`.
std::uint64_t count_param(const options& o, std::string_view name, std::uint64_t def,
                          std::uint64_t lo, std::uint64_t hi);

/// The same for a comma-separated list of counts (`--counters=1000,2^20`).
std::vector<std::uint64_t> count_list_param(const options& o, std::string_view name,
                                            std::vector<std::uint64_t> def, std::uint64_t lo,
                                            std::uint64_t hi);

/// Records a parameter's value (JSON text) for the rows' `params` field (replaces an earlier
/// value of the same name).
void record_param(std::string_view name, std::string json_value);

/// The parameters recorded so far, in order (a copy: ranks' threads may record meanwhile).
std::vector<std::pair<std::string, std::string>> recorded_params();

/// All registered subcommands, sorted by name.
std::vector<bench_entry> registered_benches();

/// The subcommand called `name`, or nullptr.
const bench_entry* find_bench(std::string_view name);

}  // namespace cairn::bench
