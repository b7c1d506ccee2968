// The selection machinery: every collective's algorithms by name, the parser of selection
// strings (CAIRN_COLL and the default table, src/coll/engine/selection_table.cpp), both resolved
// once per process, and the choice they make for a call.
#include "coll/engine/selection.hpp"

#include <array>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "cairn/runtime/error.hpp"
#include "coll/board/shared_memory_flat.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {
using bc = board_collective;
constexpr bool commutative_only = true, unbalanced_only = true, in_node_order = true,
               equal_nodes = true;
constexpr board_path direct = board_path::direct, staged = board_path::staged;

// Each collective's algorithms: the name CAIRN_COLL and the table use for each enum value.
constexpr algorithm_entry barrier_algorithms[] = {
    {"dissemination", barrier_algorithm::dissemination},
    {"shared_memory", barrier_algorithm::shared_memory, bc::barrier},
};
constexpr algorithm_entry bcast_algorithms[] = {
    {"binomial", bcast_algorithm::binomial},
    {"scatter_allgather", bcast_algorithm::scatter_allgather},
    {"shared_memory", bcast_algorithm::shared_memory, bc::bcast},
    {"shared_memory_direct", bcast_algorithm::shared_memory_direct, bc::bcast, false, false,
     direct},
    {"shared_memory_staged", bcast_algorithm::shared_memory_staged, bc::bcast, false, false,
     staged},
    {"hierarchical", bcast_algorithm::hierarchical},
};
constexpr algorithm_entry reduce_algorithms[] = {
    {"binomial", reduce_algorithm::binomial},
    {"reduce_scatter_gather", reduce_algorithm::reduce_scatter_gather},
    {"shared_memory", reduce_algorithm::shared_memory, bc::reduce},
    {"shared_memory_direct", reduce_algorithm::shared_memory_direct, bc::reduce, false, false,
     direct},
    {"shared_memory_staged", reduce_algorithm::shared_memory_staged, bc::reduce, false, false,
     staged},
    {"hierarchical", reduce_algorithm::hierarchical, bc::none, false, false, board_path::automatic,
     in_node_order},
};
constexpr algorithm_entry allreduce_algorithms[] = {
    {"recursive_doubling", allreduce_algorithm::recursive_doubling},
    {"ring", allreduce_algorithm::ring, bc::none, commutative_only},
    {"rabenseifner", allreduce_algorithm::rabenseifner},
    {"shared_memory", allreduce_algorithm::shared_memory, bc::allreduce},
    {"shared_memory_direct", allreduce_algorithm::shared_memory_direct, bc::allreduce, false, false,
     direct},
    {"shared_memory_staged", allreduce_algorithm::shared_memory_staged, bc::allreduce, false, false,
     staged},
    {"hierarchical", allreduce_algorithm::hierarchical, bc::none, false, false,
     board_path::automatic, in_node_order},
    {"hierarchical_slices", allreduce_algorithm::hierarchical_slices, bc::none, false, false,
     board_path::automatic, in_node_order, equal_nodes},
};
constexpr algorithm_entry binomial_only[] = {{"binomial", sole_algorithm::sole}};
constexpr algorithm_entry allgather_algorithms[] = {
    {"ring", allgather_algorithm::ring},
    {"bruck", allgather_algorithm::bruck},
    {"recursive_doubling", allgather_algorithm::recursive_doubling},
    {"shared_memory", allgather_algorithm::shared_memory, bc::allgather},
    {"shared_memory_direct", allgather_algorithm::shared_memory_direct, bc::allgather, false, false,
     direct},
    {"shared_memory_staged", allgather_algorithm::shared_memory_staged, bc::allgather, false, false,
     staged},
    {"hierarchical", allgather_algorithm::hierarchical},
};
constexpr algorithm_entry alltoall_algorithms[] = {
    {"pairwise", alltoall_algorithm::pairwise},
    {"bruck", alltoall_algorithm::bruck},
};
constexpr algorithm_entry reduce_scatter_block_algorithms[] = {
    {"recursive_halving", reduce_scatter_block_algorithm::recursive_halving},
    {"ring", reduce_scatter_block_algorithm::ring, bc::none, commutative_only},
    {"shared_memory", reduce_scatter_block_algorithm::shared_memory, bc::reduce_scatter_block},
    {"shared_memory_direct", reduce_scatter_block_algorithm::shared_memory_direct,
     bc::reduce_scatter_block, false, false, direct},
    {"shared_memory_staged", reduce_scatter_block_algorithm::shared_memory_staged,
     bc::reduce_scatter_block, false, false, staged},
};
constexpr algorithm_entry recursive_doubling_only[] = {
    {"recursive_doubling", sole_algorithm::sole}};
constexpr algorithm_entry linear_only[] = {{"linear", sole_algorithm::sole}};
constexpr algorithm_entry ring_only[] = {{"ring", sole_algorithm::sole}};
constexpr algorithm_entry pairwise_only[] = {{"pairwise", sole_algorithm::sole}};
constexpr algorithm_entry generalized_reduce_algorithms[] = {
    {"butterfly", generalized_reduce_algorithm::butterfly},
    {"shared_memory", generalized_reduce_algorithm::shared_memory, bc::reduce_generalized, false,
     unbalanced_only},
    {"hierarchical", generalized_reduce_algorithm::hierarchical, bc::none, false, unbalanced_only},
    {"shared_memory_staged", generalized_reduce_algorithm::shared_memory_staged,
     bc::reduce_generalized, false, unbalanced_only, staged},
};

constexpr collective_entry collectives[] = {
    {coll_id::barrier, "barrier", "-", barrier_algorithms},
    {coll_id::bcast, "bcast", "buffer bytes", bcast_algorithms},
    {coll_id::reduce, "reduce", "buffer bytes", reduce_algorithms},
    {coll_id::allreduce, "allreduce", "buffer bytes", allreduce_algorithms},
    {coll_id::gather, "gather", "block bytes", binomial_only},
    {coll_id::scatter, "scatter", "block bytes", binomial_only},
    {coll_id::allgather, "allgather", "gathered bytes (ranks x block)", allgather_algorithms},
    {coll_id::alltoall, "alltoall", "block bytes (one destination)", alltoall_algorithms},
    {coll_id::reduce_scatter_block, "reduce_scatter_block", "input bytes (ranks x block)",
     reduce_scatter_block_algorithms},
    {coll_id::scan, "scan", "buffer bytes", recursive_doubling_only},
    {coll_id::exscan, "exscan", "buffer bytes", recursive_doubling_only},
    {coll_id::gatherv, "gatherv", "-", linear_only},
    {coll_id::scatterv, "scatterv", "-", linear_only},
    {coll_id::allgatherv, "allgatherv", "-", ring_only},
    {coll_id::alltoallv, "alltoallv", "-", pairwise_only},
    {coll_id::reduce_scatter, "reduce_scatter", "-", pairwise_only},
    {coll_id::generalized_reduce, "generalized_reduce", "buffer bytes (per participant)",
     generalized_reduce_algorithms},
};

// The tables are consistent: indexed by coll_id, every algorithm a value other than automatic,
// names unique per collective, at most one board provider per collective (and its forms of
// another board_path).
constexpr bool consistent() {
  if (std::size(collectives) != coll_count) return false;
  for (std::size_t c = 0; c < std::size(collectives); ++c) {
    if (static_cast<std::size_t>(collectives[c].id) != c) return false;
    int boards = 0;
    const auto algs = collectives[c].algorithms;
    for (std::size_t a = 0; a < algs.size(); ++a) {
      if (algs[a].value == 0) return false;
      boards += algs[a].board != bc::none && algs[a].path == board_path::automatic;
      for (std::size_t b = 0; b < a; ++b)
        if (algs[b].name == algs[a].name || algs[b].value == algs[a].value) return false;
    }
    if (boards > 1) return false;
  }
  return true;
}
static_assert(consistent(), "the algorithm tables must be indexed by coll_id, names unique");
}  // namespace

std::span<const collective_entry> collective_table() { return collectives; }

std::string_view algorithm_name(coll_id which, std::uint8_t value) {
  for (const algorithm_entry& a : collectives[static_cast<std::size_t>(which)].algorithms)
    if (a.value == value) return a.name;
  return "automatic";
}

board_collective board_provider(coll_id which) {
  for (const algorithm_entry& a : collectives[static_cast<std::size_t>(which)].algorithms)
    if (a.board != bc::none) return a.board;
  return bc::none;
}

bool count_check_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("CAIRN_COLL_CHECK");
    return v && *v && std::string_view(v) != "0";
  }();
  return on;
}

}  // namespace cairn::detail

namespace cairn::coll {

namespace {
using detail::comparison;
using detail::fact;
using detail::resolved_condition;

[[noreturn]] void bad(std::string_view source, std::string_view entry, const std::string& why) {
  throw error("cairn: " + std::string(source) + ": bad entry '" + std::string(entry) + "': " + why);
}

// A byte size or number with an optional k/m/g suffix (powers of 1024); `fallback` when empty.
std::size_t parse_size(std::string_view source, std::string_view entry, std::string_view s,
                       std::size_t fallback) {
  if (s.empty()) return fallback;
  std::size_t scale = 1;
  const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(s.back())));
  if (last == 'k' || last == 'm' || last == 'g') {
    scale = last == 'k'   ? std::size_t{1} << 10
            : last == 'm' ? std::size_t{1} << 20
                          : std::size_t{1} << 30;
    s.remove_suffix(1);
  }
  if (s.empty()) bad(source, entry, "size has no digits");
  std::size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') bad(source, entry, "size '" + std::string(s) + "' is not a number");
    const std::size_t d = static_cast<std::size_t>(c - '0');
    if (v > (std::numeric_limits<std::size_t>::max() - d) / 10)
      bad(source, entry, "size overflows");
    v = v * 10 + d;
  }
  if (v > std::numeric_limits<std::size_t>::max() / scale) bad(source, entry, "size overflows");
  return v * scale;
}

// The shortest exact spelling of a size: 524288 -> "512k", 256 -> "256".
std::string size_text(std::size_t v) {
  if (v == 0) return "0";
  for (auto [shift, suffix] : {std::pair{30, "g"}, std::pair{20, "m"}, std::pair{10, "k"}})
    if (v % (std::size_t{1} << shift) == 0) return std::to_string(v >> shift) + suffix;
  return std::to_string(v);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The first place `word` stands alone in `s` (whitespace or an end on both sides), or npos.
std::size_t find_word(std::string_view s, std::string_view word) {
  for (std::size_t i = s.find(word); i != std::string_view::npos; i = s.find(word, i + 1)) {
    const bool before = i == 0 || std::isspace(static_cast<unsigned char>(s[i - 1]));
    const std::size_t end = i + word.size();
    const bool after = end == s.size() || std::isspace(static_cast<unsigned char>(s[end]));
    if (before && after) return i;
  }
  return std::string_view::npos;
}

// The condition vocabulary (selection_rule::conditions).
struct flag_name {
  std::string_view name;
  fact which;
};
constexpr flag_name flags[] = {{"commutative", fact::commutative},
                               {"power_of_two", fact::power_of_two},
                               {"count_check", fact::count_check},
                               {"balanced", fact::balanced},
                               {"processes", fact::processes}};
struct comparison_name {
  std::string_view text;
  comparison op;
};
// Two-character operators first (a prefix match picks them before '<' and '>').
constexpr comparison_name comparisons[] = {{"<=", comparison::le}, {">=", comparison::ge},
                                           {"==", comparison::eq}, {"!=", comparison::ne},
                                           {"<", comparison::lt},  {">", comparison::gt}};
constexpr std::string_view known_conditions =
    "known: commutative, power_of_two, count_check, balanced, processes, each maybe negated "
    "with '!'; "
    "ranks, count or nodes compared (< <= > >= == !=) with a number, or count or nodes with "
    "ranks";

// A condition parsed: its canonical text (no spaces) and its resolved form.
std::pair<std::string, resolved_condition> parse_condition(std::string_view source,
                                                           std::string_view entry,
                                                           std::string_view text) {
  auto unknown = [&]() -> std::pair<std::string, resolved_condition> {
    bad(source, entry,
        "unknown condition '" + std::string(text) + "' (" + std::string(known_conditions) + ")");
  };
  const std::size_t at = text.find_first_of("<>=!");
  if (at == std::string_view::npos || (at == 0 && text.substr(0, 2) != "!=")) {
    const bool negated = at == 0;
    const std::string_view name = trim(negated ? text.substr(1) : text);
    for (const flag_name& f : flags)
      if (f.name == name)
        return {std::string(negated ? "!" : "").append(name),
                {f.which, negated ? comparison::eq : comparison::ne, fact::number, 0}};
    return unknown();
  }
  const std::string_view lhs = trim(text.substr(0, at));
  const std::string_view ops = text.substr(at);
  const comparison_name* op = nullptr;
  for (const comparison_name& c : comparisons)
    if (ops.substr(0, c.text.size()) == c.text) {
      op = &c;
      break;
    }
  if (!op) return unknown();
  const std::string_view rhs = trim(ops.substr(op->text.size()));
  resolved_condition c{fact::number, op->op, fact::number, 0};
  if (lhs == "ranks")
    c.lhs = fact::ranks;
  else if (lhs == "count")
    c.lhs = fact::count;
  else if (lhs == "nodes")
    c.lhs = fact::nodes;
  else
    return unknown();
  if (rhs == "ranks" && c.lhs != fact::ranks)
    c.rhs = fact::ranks;
  else if (!rhs.empty() && std::isdigit(static_cast<unsigned char>(rhs.front())))
    c.value = parse_size(source, entry, rhs, 0);
  else
    return unknown();
  return {std::string(lhs) + std::string(op->text) + std::string(rhs), c};
}

const detail::collective_entry* find_collective(std::string_view name) {
  for (const detail::collective_entry& c : detail::collective_table())
    if (c.name == name) return &c;
  return nullptr;
}

const detail::algorithm_entry* find_algorithm(const detail::collective_entry& c,
                                              std::string_view name) {
  for (const detail::algorithm_entry& a : c.algorithms)
    if (a.name == name) return &a;
  return nullptr;
}

// parse_selection for a named source ("CAIRN_COLL", the default table), in its errors.
std::vector<selection_rule> parse_rules(std::string_view spec, std::string_view source) {
  std::vector<selection_rule> rules;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view entry = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (entry.empty()) continue;
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos)
      bad(source, entry, "expected collective=algorithm[@min-max][ if condition[ and ...]]");
    selection_rule r;
    r.collective = std::string(trim(entry.substr(0, eq)));
    std::string_view rest = entry.substr(eq + 1), conditions;
    if (const std::size_t when = find_word(rest, "if"); when != std::string_view::npos) {
      conditions = rest.substr(when + 2);
      rest = rest.substr(0, when);
      if (trim(conditions).empty()) bad(source, entry, "expected a condition after 'if'");
    }
    const std::size_t at = rest.find('@');
    r.algorithm = std::string(trim(rest.substr(0, at)));
    const detail::collective_entry* c = find_collective(r.collective);
    if (!c) bad(source, entry, "unknown collective '" + r.collective + "'");
    if (!find_algorithm(*c, r.algorithm)) {
      std::string names;
      for (const auto& a : c->algorithms)
        names += (names.empty() ? "" : ", ") + std::string(a.name);
      bad(source, entry,
          "unknown algorithm '" + r.algorithm + "' for " + r.collective + " (known: " + names +
              ")");
    }
    if (at != std::string_view::npos) {
      const std::string_view range = trim(rest.substr(at + 1));
      const std::size_t dash = range.find('-');
      if (dash == std::string_view::npos) bad(source, entry, "expected a range min-max after '@'");
      r.min_bytes = parse_size(source, entry, trim(range.substr(0, dash)), 0);
      r.max_bytes = parse_size(source, entry, trim(range.substr(dash + 1)),
                               std::numeric_limits<std::size_t>::max());
      if (r.min_bytes > r.max_bytes) bad(source, entry, "empty range (min > max)");
    }
    for (bool more = !conditions.empty(); more;) {
      const std::size_t and_at = find_word(conditions, "and");
      const std::string_view one = trim(conditions.substr(0, and_at));
      more = and_at != std::string_view::npos;
      if (more) conditions = conditions.substr(and_at + 3);
      if (one.empty()) bad(source, entry, "expected a condition around 'and'");
      r.conditions.push_back(parse_condition(source, entry, one).first);
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

constexpr std::string_view table_source = "the default selection table";

// A parsed rule resolved: its collective, its algorithm's entry, its conditions.
detail::resolved_rule resolve(const selection_rule& r) {
  const detail::collective_entry* c = find_collective(r.collective);
  detail::resolved_rule out{c->id, find_algorithm(*c, r.algorithm), r.min_bytes, r.max_bytes, {}};
  for (const std::string& k : r.conditions)
    out.conditions.push_back(parse_condition(table_source, r.collective, k).second);
  return out;
}

// CAIRN_COLL and the default table, parsed and resolved once (thread-safe static).
struct selection_state {
  std::vector<selection_rule> environment, defaults;
  std::array<std::vector<detail::resolved_rule>, detail::coll_count> by_collective;
  std::string failure;  // a bad string: thrown on every use, so that every rank reports it
};

const selection_state& state() {
  static const selection_state parsed = [] {
    selection_state s;
    try {
      s.defaults = coll::default_selection();
      if (const char* env = std::getenv("CAIRN_COLL"))
        s.environment = parse_rules(env, "CAIRN_COLL");
    } catch (const error& e) {
      s.failure = e.what();
      return s;
    }
    for (const auto* rules : {&s.environment, &s.defaults})
      for (const selection_rule& r : *rules) {
        detail::resolved_rule k = resolve(r);
        s.by_collective[static_cast<std::size_t>(k.which)].push_back(std::move(k));
      }
    return s;
  }();
  if (!parsed.failure.empty()) [[unlikely]]
    throw error(parsed.failure);
  return parsed;
}
}  // namespace

const std::vector<collective_algorithms>& algorithm_catalog() {
  static const std::vector<collective_algorithms> catalog = [] {
    std::vector<collective_algorithms> c;
    for (const detail::collective_entry& e : detail::collective_table()) {
      collective_algorithms k{std::string(e.name), {}, std::string(e.size_meaning)};
      for (const detail::algorithm_entry& a : e.algorithms) k.algorithms.emplace_back(a.name);
      c.push_back(std::move(k));
    }
    return c;
  }();
  return catalog;
}

std::vector<selection_rule> parse_selection(std::string_view spec) {
  return parse_rules(spec, "CAIRN_COLL");
}

std::string to_string(const selection_rule& r) {
  std::string s = r.collective + "=" + r.algorithm;
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  if (r.min_bytes != 0 || r.max_bytes != none) {
    s += '@';
    if (r.min_bytes) s += size_text(r.min_bytes);
    s += '-';
    if (r.max_bytes != none) s += size_text(r.max_bytes);
  }
  for (std::size_t i = 0; i < r.conditions.size(); ++i)
    s += (i ? " and " : " if ") + r.conditions[i];
  return s;
}

const std::vector<selection_rule>& environment_selection() { return state().environment; }

const std::vector<selection_rule>& default_selection() {
  static const std::vector<selection_rule> rules =
      parse_rules(default_selection_table(), table_source);
  return rules;
}

}  // namespace cairn::coll

namespace cairn::detail {

namespace {
std::size_t value_of(fact f, const call_facts& c, std::size_t number) {
  switch (f) {
    case fact::number: return number;
    case fact::ranks: return static_cast<std::size_t>(c.ranks);
    case fact::count: return c.elem ? c.bytes / c.elem : c.bytes;
    case fact::commutative: return c.commutative;
    case fact::power_of_two: return (c.ranks & (c.ranks - 1)) == 0;
    case fact::count_check: return count_check_enabled();
    case fact::balanced: return c.balanced;
    case fact::processes: return c.processes;
    case fact::nodes: return static_cast<std::size_t>(c.nodes);
  }
  return 0;
}

bool holds(const resolved_condition& k, const call_facts& c) {
  const std::size_t a = value_of(k.lhs, c, k.value), b = value_of(k.rhs, c, k.value);
  switch (k.op) {
    case comparison::lt: return a < b;
    case comparison::le: return a <= b;
    case comparison::gt: return a > b;
    case comparison::ge: return a >= b;
    case comparison::eq: return a == b;
    case comparison::ne: return a != b;
  }
  return false;
}

// True if algorithm `a` can run the call `f` on `t` (algorithm_entry's needs).
bool can_run(const coll_target& t, const algorithm_entry& a, const call_facts& f) {
  if (a.needs_commutative && !f.commutative) return false;
  if (a.needs_unbalanced && f.balanced) return false;
  if (a.needs_node_order && !f.commutative && !t.members->nodes_consecutive) return false;
  if (a.needs_equal_nodes && !t.members->nodes_equal) return false;
  if (a.board == board_collective::none) return true;
  // The board counts an allgather's and a reduce-scatter's bytes per rank (its block), the
  // table all ranks' blocks.
  const bool blocks =
      a.board == board_collective::allgather || a.board == board_collective::reduce_scatter_block;
  const std::size_t bytes =
      blocks && f.ranks ? f.bytes / static_cast<std::size_t>(f.ranks) : f.bytes;
  return !board_refusal(t, a.board, bytes, a.path);
}

// The table's recent answers, per rank: walking the rules, their conditions and the board's
// refusals costs more than a short collective by messages, and a program repeats its calls.
// An answer is a function of the rules (fixed per process), the rank, the group and the facts:
// keyed by the group's address (held, so that no other group takes it while remembered; the
// world's, not counted, lives as long as the rank).
class choice_memo {
 public:
  explicit choice_memo(rank_context&) {}
  enum class question : std::uint8_t { rule, board_elsewhere };
  struct answer {
    const resolved_rule* rule = nullptr;
    bool elsewhere = false;
  };
  template <class Compute>
  answer ask(const coll_target& t, question q, coll_id which, const call_facts& f,
             Compute&& compute) {
    // The call before, asked again (a loop of one collective): no hash.
    entry* const last = last_[static_cast<std::size_t>(q)];
    if (last && last->members == t.members && last->q == q && last->which == which &&
        last->facts == f)
      return last->got;
    std::size_t h = reinterpret_cast<std::uintptr_t>(t.members.get()) * 0x9E3779B97F4A7C15ull;
    for (std::size_t v :
         {static_cast<std::size_t>(which) * 2 + static_cast<std::size_t>(q), f.bytes, f.elem,
          static_cast<std::size_t>(f.ranks), static_cast<std::size_t>(f.nodes),
          static_cast<std::size_t>(f.commutative + 2 * f.balanced + 4 * f.processes)})
      h = (h ^ v) * 0x100000001B3ull + (h >> 29);
    entry& e = entries_[(h ^ (h >> 23)) & (entries_.size() - 1)];
    if (e.members != t.members || e.q != q || e.which != which || !(e.facts == f)) {
      e = {t.members, q, which, f, compute()};
    }
    last_[static_cast<std::size_t>(q)] = &e;
    return e.got;
  }

 private:
  struct entry {
    std::shared_ptr<const group_members> members;
    question q = question::rule;
    coll_id which = coll_id::barrier;
    call_facts facts;
    answer got;
  };
  std::array<entry, 64> entries_{};
  std::array<entry*, 2> last_{};  // per question: the entry answered last
};
}  // namespace

std::span<const resolved_rule> selection_rules(coll_id which) {
  return coll::state().by_collective[static_cast<std::size_t>(which)];
}

namespace {
// chosen_rule without the memo.
const resolved_rule* first_rule(const coll_target& t, coll_id which, const call_facts& f) {
  for (const resolved_rule& r : selection_rules(which)) {
    if (f.bytes < r.min_bytes || f.bytes > r.max_bytes) continue;
    bool all = true;
    for (const resolved_condition& k : r.conditions) all = all && holds(k, f);
    if (all && can_run(t, *r.algorithm, f)) return &r;
  }
  return nullptr;
}

// board_elsewhere without the memo.
bool board_used_elsewhere(const coll_target& t, coll_id which, const call_facts& f) {
  auto board_at = [&](std::size_t bytes) {
    call_facts g = f;
    g.bytes = bytes;
    const resolved_rule* r = first_rule(t, which, g);
    return r && r->algorithm->board != board_collective::none;
  };
  // The choice is constant between the sizes where a rule's range or a condition on the count
  // changes, but for the board's own reach, which only shrinks as the size grows: the board's
  // first size is 0 or one of those.
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  if (board_at(0)) return true;
  const std::size_t elem = f.elem ? f.elem : 1;
  for (const resolved_rule& r : selection_rules(which)) {
    if (board_at(r.min_bytes) || (r.max_bytes != none && board_at(r.max_bytes + 1))) return true;
    for (const resolved_condition& k : r.conditions) {
      if (k.lhs != fact::count) continue;
      const std::size_t v = value_of(k.rhs, f, k.value);  // count's condition changes at v, v + 1
      for (std::size_t n : {v, v + 1})
        if (n != 0 && n <= none / elem && board_at(n * elem)) return true;
    }
  }
  return false;
}
}  // namespace

const resolved_rule* chosen_rule(const coll_target& t, coll_id which, const call_facts& f) {
  return t.ctx->layer<choice_memo>()
      .ask(t, choice_memo::question::rule, which, f,
           [&] {
             return choice_memo::answer{first_rule(t, which, f), false};
           })
      .rule;
}

bool board_elsewhere(const coll_target& t, coll_id which, const call_facts& f) {
  if (count_check_enabled() || !t.ctx->node_memory() ||
      board_provider(which) == board_collective::none)
    return false;
  return t.ctx->layer<choice_memo>()
      .ask(t, choice_memo::question::board_elsewhere, which, f,
           [&] {
             return choice_memo::answer{nullptr, board_used_elsewhere(t, which, f)};
           })
      .elsewhere;
}

}  // namespace cairn::detail
