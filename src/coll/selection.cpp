// The selection table: the catalog of algorithms, the default choices as text, and the
// CAIRN_COLL override (parsed once per process).
#include "coll/selection.hpp"

#include <cctype>
#include <cstdlib>
#include <limits>
#include <string>

#include "cairn/runtime/error.hpp"

namespace cairn::coll {

const std::vector<collective_algorithms>& algorithm_catalog() {
  static const std::vector<collective_algorithms> catalog{
      {"barrier", {"dissemination", "shared_memory"}, "-"},
      {"bcast", {"binomial", "scatter_allgather", "shared_memory"}, "buffer bytes"},
      {"reduce", {"binomial", "reduce_scatter_gather", "shared_memory"}, "buffer bytes"},
      {"allreduce",
       {"recursive_doubling", "ring", "rabenseifner", "shared_memory"},
       "buffer bytes"},
      {"gather", {"binomial"}, "block bytes"},
      {"scatter", {"binomial"}, "block bytes"},
      {"allgather", {"ring", "bruck", "recursive_doubling"}, "gathered bytes (ranks x block)"},
      {"alltoall", {"pairwise", "bruck"}, "block bytes (one destination)"},
      {"reduce_scatter_block", {"recursive_halving", "ring"}, "input bytes (ranks x block)"},
      {"scan", {"recursive_doubling"}, "buffer bytes"},
      {"exscan", {"recursive_doubling"}, "buffer bytes"},
      {"gatherv", {"linear"}, "-"},
      {"scatterv", {"linear"}, "-"},
      {"allgatherv", {"ring"}, "-"},
      {"alltoallv", {"pairwise"}, "-"},
      {"reduce_scatter", {"pairwise"}, "-"},
  };
  return catalog;
}

std::vector<std::string> default_selection() {
  return {
      "barrier: shared_memory on a group of one node; dissemination otherwise",
      "bcast, reduce, allreduce: shared_memory on a group of one node (through the board up to "
      "16384 "
      "bytes, straight between the buffers beyond where ranks can copy across processes); "
      "otherwise:",
      "bcast: binomial; scatter_allgather from 524288 bytes on more than 2 ranks",
      "reduce: binomial; reduce_scatter_gather from 524288 bytes on more than 2 ranks (count >= "
      "ranks)",
      "allreduce: recursive_doubling; rabenseifner from 65536 bytes (count >= ranks); ring from "
      "262144 "
      "bytes for commutative operations on more than 2 ranks",
      "gather, scatter: binomial",
      "allgather: recursive_doubling (powers of two) or bruck below 65536 gathered bytes; ring "
      "from 65536",
      "alltoall: bruck for blocks up to 256 bytes on more than 4 ranks; pairwise otherwise",
      "reduce_scatter_block: ring from 262144 input bytes for commutative operations on more than "
      "2 "
      "ranks; recursive_halving otherwise",
      "scan, exscan: recursive_doubling",
      "gatherv, scatterv: linear; allgatherv: ring; alltoallv, reduce_scatter: pairwise",
      "generalized reduce: shared_memory on one node without load balancing (past 16384 bytes "
      "where "
      "ranks copy straight between buffers); butterfly otherwise "
      "(generalized_reduce_options::algorithm)",
  };
}

namespace {
[[noreturn]] void bad(std::string_view entry, const std::string& why) {
  throw error("cairn: CAIRN_COLL: bad entry '" + std::string(entry) + "': " + why);
}

// A byte size with an optional k/m/g suffix (powers of 1024); `fallback` when empty.
std::size_t parse_size(std::string_view entry, std::string_view s, std::size_t fallback) {
  if (s.empty()) return fallback;
  std::size_t scale = 1;
  const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(s.back())));
  if (last == 'k' || last == 'm' || last == 'g') {
    scale = last == 'k'   ? std::size_t{1} << 10
            : last == 'm' ? std::size_t{1} << 20
                          : std::size_t{1} << 30;
    s.remove_suffix(1);
  }
  if (s.empty()) bad(entry, "size has no digits");
  std::size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') bad(entry, "size '" + std::string(s) + "' is not a number");
    const std::size_t d = static_cast<std::size_t>(c - '0');
    if (v > (std::numeric_limits<std::size_t>::max() - d) / 10) bad(entry, "size overflows");
    v = v * 10 + d;
  }
  if (v > std::numeric_limits<std::size_t>::max() / scale) bad(entry, "size overflows");
  return v * scale;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
}  // namespace

std::vector<selection_rule> parse_selection(std::string_view spec) {
  std::vector<selection_rule> rules;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view entry = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (entry.empty()) continue;
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) bad(entry, "expected collective=algorithm[@min-max]");
    selection_rule r;
    r.collective = std::string(trim(entry.substr(0, eq)));
    std::string_view rest = entry.substr(eq + 1);
    const std::size_t at = rest.find('@');
    r.algorithm = std::string(trim(rest.substr(0, at)));
    const collective_algorithms* c = nullptr;
    for (const auto& k : algorithm_catalog())
      if (k.collective == r.collective) c = &k;
    if (!c) bad(entry, "unknown collective '" + r.collective + "'");
    bool known = false;
    std::string names;
    for (const auto& a : c->algorithms) {
      known = known || a == r.algorithm;
      names += (names.empty() ? "" : ", ") + a;
    }
    if (!known)
      bad(entry, "unknown algorithm '" + r.algorithm + "' for " + r.collective +
                     " (known: " + names + ")");
    if (at != std::string_view::npos) {
      const std::string_view range = trim(rest.substr(at + 1));
      const std::size_t dash = range.find('-');
      if (dash == std::string_view::npos) bad(entry, "expected a range min-max after '@'");
      r.min_bytes = parse_size(entry, trim(range.substr(0, dash)), 0);
      r.max_bytes =
          parse_size(entry, trim(range.substr(dash + 1)), std::numeric_limits<std::size_t>::max());
      if (r.min_bytes > r.max_bytes) bad(entry, "empty range (min > max)");
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

namespace {
// CAIRN_COLL, parsed once (thread-safe static), with its rules also resolved to numbers.
struct parsed_environment {
  std::vector<selection_rule> rules;
  std::vector<detail::resolved_rule> resolved;
  std::string failure;  // a bad string: thrown on every call, so that every rank reports it
};

const parsed_environment& environment() {
  static const parsed_environment parsed = [] {
    parsed_environment p;
    const char* env = std::getenv("CAIRN_COLL");
    if (!env) return p;
    try {
      p.rules = parse_selection(env);
    } catch (const error& e) {
      p.failure = e.what();
      return p;
    }
    const auto& cat = algorithm_catalog();
    for (const auto& r : p.rules)
      for (std::size_t c = 0; c < cat.size(); ++c)
        if (cat[c].collective == r.collective)
          for (std::size_t a = 0; a < cat[c].algorithms.size(); ++a)
            if (cat[c].algorithms[a] == r.algorithm)
              p.resolved.push_back({static_cast<detail::coll_id>(c), static_cast<int>(a) + 1,
                                    r.min_bytes, r.max_bytes});
    return p;
  }();
  if (!parsed.failure.empty()) throw error(parsed.failure);
  return parsed;
}
}  // namespace

const std::vector<selection_rule>& environment_selection() { return environment().rules; }

}  // namespace cairn::coll

namespace cairn::detail {

const std::vector<resolved_rule>& environment_rules() { return coll::environment().resolved; }

}  // namespace cairn::detail
