// cairn-info: prints the engines of this build, every collective's algorithms and the active
// selection table (the default table in CAIRN_COLL syntax, one rule a line, then the CAIRN_COLL
// rules that come before it). Exits 1 with the error when CAIRN_COLL does not parse.
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>

#include "cairn/cairn.hpp"

namespace {
std::string range_text(const cairn::coll::selection_rule& r) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  if (r.min_bytes == 0 && r.max_bytes == none) return "for every size";
  if (r.max_bytes == none) return "for " + std::to_string(r.min_bytes) + " bytes and more";
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
}  // namespace

int main(int argc, char** argv) {
  std::cout << "engines: threads" << (cairn::mpi_available() ? ", mpi" : "")
            << " (this run would use "
            << (cairn::detect_engine(argc, argv) == cairn::engine::mpi ? "mpi" : "threads")
            << ")\n";
  const char* progress = std::getenv("CAIRN_PROGRESS");
  std::cout << "progress modes: calls (default), peers (threads engine), thread; CAIRN_PROGRESS"
            << (progress ? " = \"" + std::string(progress) + "\"" : std::string(" is not set"))
            << "\n";
  try {
    const cairn::thread_level level = cairn::mpi_thread_level_requested({});
    const char* asked = std::getenv("CAIRN_MPI_THREAD_LEVEL");
    std::cout << "MPI engine's thread level: " << cairn::to_string(level)
              << (level == cairn::thread_level::multiple && !asked ? " (the progress thread)" : "")
              << "; CAIRN_MPI_THREAD_LEVEL"
              << (asked ? " = \"" + std::string(asked) + "\"" : std::string(" is not set"))
              << "\n\n";
  } catch (const cairn::error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::cout << "collectives and algorithms (size measured for the selection table):\n";
  for (const auto& c : cairn::coll::algorithm_catalog()) {
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
  try {
    std::cout << "\ndefault selection (CAIRN_COLL syntax; for each collective the first rule "
                 "that applies\nand whose algorithm can run the call; shared_memory needs one "
                 "node, ring a commutative\noperation):\n";
    for (const auto& r : cairn::coll::default_selection())
      std::cout << "  " << cairn::coll::to_string(r) << "\n";
  } catch (const cairn::error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  const char* env = std::getenv("CAIRN_COLL");
  std::cout << "\nCAIRN_COLL"
            << (env ? " = \"" + std::string(env) + "\"" : std::string(" is not set")) << "\n";
  try {
    const auto& rules = cairn::coll::environment_selection();
    if (!rules.empty())
      std::cout << "overrides (first matching rule wins; per-call algorithms win over them):\n";
    for (const auto& r : rules)
      std::cout << "  " << r.collective << "=" << r.algorithm << " " << range_text(r)
                << conditions_text(r) << "\n";
  } catch (const cairn::error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
