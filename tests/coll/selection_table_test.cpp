// The default selection table (src/coll/engine/selection_table.cpp): it parses with the CAIRN_COLL
// parser, names only algorithms that exist, is what cairn-info prints, and picks for a grid of
// collectives, sizes, operations and groups what a reference written here independently picks
// (the default choices as they were written before the table: constants and ternaries).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "coll/engine/selection.hpp"
#include "coll_reference.hpp"

namespace {

using cairn::coll::algorithm_catalog;
using cairn::coll::default_selection_table;
using cairn::coll::parse_selection;

TEST(SelectionTable, ParsesWithTheOverrideParserAndNamesKnownAlgorithms) {
  const auto rules = parse_selection(default_selection_table());
  ASSERT_FALSE(rules.empty());
  // Canonical: the rules printed back, joined by ",", are the table.
  std::string joined;
  for (const auto& r : rules) {
    if (!joined.empty()) joined += ',';
    joined += cairn::coll::to_string(r);
  }
  EXPECT_EQ(joined, default_selection_table());
  // Every algorithm named exists; every collective of the catalog has rules, and its last rule
  // applies to every call (no range, no condition, an algorithm that runs every call).
  for (const auto& c : algorithm_catalog()) {
    const cairn::coll::selection_rule* last = nullptr;
    for (const auto& r : rules)
      if (r.collective == c.collective) {
        last = &r;
        EXPECT_NE(std::find(c.algorithms.begin(), c.algorithms.end(), r.algorithm),
                  c.algorithms.end())
            << cairn::coll::to_string(r);
      }
    ASSERT_NE(last, nullptr) << c.collective << " has no rule";
    EXPECT_EQ(last->min_bytes, 0u) << c.collective;
    EXPECT_EQ(last->max_bytes, static_cast<std::size_t>(-1)) << c.collective;
    EXPECT_TRUE(last->conditions.empty()) << c.collective;
    EXPECT_NE(last->algorithm, "shared_memory") << c.collective;
    if (c.collective == "allreduce" || c.collective == "reduce_scatter_block") {
      EXPECT_NE(last->algorithm, "ring") << c.collective;
    }
  }
  for (const auto& r : rules) {
    bool known = false;
    for (const auto& c : algorithm_catalog()) known = known || c.collective == r.collective;
    EXPECT_TRUE(known) << r.collective;
  }
  EXPECT_EQ(cairn::coll::default_selection().size(), rules.size());
}

TEST(SelectionTable, ConditionsParse) {
  const auto r = parse_selection(
      "allreduce=ring@1k- if ranks > 8 and count>=ranks and commutative,"
      "allgather=bruck if !power_of_two,generalized_reduce=butterfly if balanced,"
      "alltoall=bruck@-256 if ranks!=3 and count<2k");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].conditions, (std::vector<std::string>{"ranks>8", "count>=ranks", "commutative"}));
  EXPECT_EQ(cairn::coll::to_string(r[0]),
            "allreduce=ring@1k- if ranks>8 and count>=ranks and commutative");
  EXPECT_EQ(cairn::coll::to_string(r[1]), "allgather=bruck if !power_of_two");
  EXPECT_EQ(cairn::coll::to_string(r[3]), "alltoall=bruck@-256 if ranks!=3 and count<2k");
  for (const char* bad :
       {"allreduce=ring if", "allreduce=ring if rnks>2", "allreduce=ring if ranks=2",
        "allreduce=ring if ranks>x", "allreduce=ring if ranks>2 and", "allreduce=ring if !ranks",
        "allreduce=ring if ranks>count"}) {
    const std::string msg = cairn::test::message_of([&] { (void)parse_selection(bad); });
    EXPECT_TRUE(cairn::test::has_text(msg, "CAIRN_COLL: bad entry '" + std::string(bad) + "'"))
        << bad << ": " << msg;
  }
}

// The enum values' names, written from the public enums (not from the tables' order).
TEST(SelectionTable, AlgorithmsAreNamedByEnumValue) {
  using cairn::detail::algorithm_name;
  using cairn::detail::coll_id;
  auto name = [](coll_id c, auto a) { return algorithm_name(c, static_cast<std::uint8_t>(a)); };
  EXPECT_EQ(name(coll_id::bcast, cairn::bcast_algorithm::binomial), "binomial");
  EXPECT_EQ(name(coll_id::bcast, cairn::bcast_algorithm::scatter_allgather), "scatter_allgather");
  EXPECT_EQ(name(coll_id::bcast, cairn::bcast_algorithm::shared_memory), "shared_memory");
  EXPECT_EQ(name(coll_id::reduce, cairn::reduce_algorithm::binomial), "binomial");
  EXPECT_EQ(name(coll_id::reduce, cairn::reduce_algorithm::reduce_scatter_gather),
            "reduce_scatter_gather");
  EXPECT_EQ(name(coll_id::reduce, cairn::reduce_algorithm::shared_memory), "shared_memory");
  EXPECT_EQ(name(coll_id::allreduce, cairn::allreduce_algorithm::recursive_doubling),
            "recursive_doubling");
  EXPECT_EQ(name(coll_id::allreduce, cairn::allreduce_algorithm::ring), "ring");
  EXPECT_EQ(name(coll_id::allreduce, cairn::allreduce_algorithm::rabenseifner), "rabenseifner");
  EXPECT_EQ(name(coll_id::allreduce, cairn::allreduce_algorithm::shared_memory), "shared_memory");
  EXPECT_EQ(name(coll_id::allgather, cairn::allgather_algorithm::ring), "ring");
  EXPECT_EQ(name(coll_id::allgather, cairn::allgather_algorithm::bruck), "bruck");
  EXPECT_EQ(name(coll_id::allgather, cairn::allgather_algorithm::recursive_doubling),
            "recursive_doubling");
  EXPECT_EQ(name(coll_id::alltoall, cairn::alltoall_algorithm::pairwise), "pairwise");
  EXPECT_EQ(name(coll_id::alltoall, cairn::alltoall_algorithm::bruck), "bruck");
  EXPECT_EQ(
      name(coll_id::reduce_scatter_block, cairn::reduce_scatter_block_algorithm::recursive_halving),
      "recursive_halving");
  EXPECT_EQ(name(coll_id::reduce_scatter_block, cairn::reduce_scatter_block_algorithm::ring),
            "ring");
  EXPECT_EQ(name(coll_id::generalized_reduce, cairn::generalized_reduce_algorithm::butterfly),
            "butterfly");
  EXPECT_EQ(name(coll_id::generalized_reduce, cairn::generalized_reduce_algorithm::shared_memory),
            "shared_memory");
  EXPECT_EQ(name(coll_id::barrier, cairn::detail::barrier_algorithm::shared_memory),
            "shared_memory");
  // The catalog lists the tables' names per collective, in coll_id order.
  const auto& cat = algorithm_catalog();
  const auto table = cairn::detail::collective_table();
  ASSERT_EQ(cat.size(), table.size());
  for (std::size_t c = 0; c < cat.size(); ++c) {
    EXPECT_EQ(cat[c].collective, table[c].name);
    ASSERT_EQ(cat[c].algorithms.size(), table[c].algorithms.size());
    for (std::size_t a = 0; a < cat[c].algorithms.size(); ++a)
      EXPECT_EQ(cat[c].algorithms[a], table[c].algorithms[a].name);
  }
}

// cairn-info (CAIRN_INFO: its path, set by ctest) prints the table rule by rule.
TEST(SelectionTable, CairnInfoPrintsTheTable) {
  const char* info = std::getenv("CAIRN_INFO");
  if (!info) GTEST_SKIP() << "CAIRN_INFO (the path of cairn-info) is not set";
  FILE* f = popen((std::string("'") + info + "' 2>&1").c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = fread(buf.data(), 1, buf.size(), f)) > 0;) out.append(buf.data(), n);
  ASSERT_EQ(pclose(f), 0) << out;
  const std::size_t head = out.find("\ndefault selection");
  ASSERT_NE(head, std::string::npos) << out;
  std::string printed;
  std::size_t at = out.find("\n  ", head);
  const std::size_t end = out.find("\n\n", head);
  for (; at != std::string::npos && at < end; at = out.find("\n  ", at + 1)) {
    const std::size_t eol = out.find('\n', at + 1);
    if (!printed.empty()) printed += ',';
    printed += out.substr(at + 3, eol - at - 3);
  }
  EXPECT_EQ(printed, default_selection_table()) << out;
}

// ----- The reference: today's default choices, written out as the code read before the table.

struct where {
  int p;             // ranks in the group
  bool board;        // the node board exists (every rank on one node, none emulated)
  bool direct;       // board collectives past 16 KiB move straight between buffers
  bool checked;      // CAIRN_COLL_CHECK=1
  bool processes;    // the MPI engine
  int nodes;         // nodes the group's ranks sit on
  bool consecutive;  // each node's ranks are consecutive in the group
  bool equal;        // every node holds as many of the group's ranks
};

// Across nodes, while some node holds more than one of the group's ranks, by node leaders
// (operands in group order need consecutive nodes).
bool hierarchical(const where& w, bool commutative) {
  return w.nodes > 1 && w.nodes < w.p && (commutative || w.consecutive);
}

// The board runs a barrier, bcast, reduce, allreduce, allgather, reduce_scatter_block or
// generalized reduce of `bytes` per rank (carried in its slot).
bool on_board(const where& w, std::size_t bytes) {
  return !w.checked && w.board && (bytes <= 16384 || w.direct);
}

// The board algorithm of a bcast, reduce or allreduce of `bytes` ("" off the board): straight
// between the buffers from `threads_direct` bytes on threads (`mpi_direct` across processes, 0:
// never by choice), staged through node memory from `staged` bytes across processes, else the
// slots up to 16 KiB and straight beyond.
std::string board_choice(const where& w, std::size_t bytes, std::size_t threads_direct,
                         std::size_t mpi_direct, std::size_t staged) {
  if (w.checked || !w.board) return "";
  if (w.processes && bytes >= staged) return "shared_memory_staged";
  const std::size_t direct_from = w.processes ? mpi_direct : threads_direct;
  if (w.direct && direct_from && bytes >= direct_from) return "shared_memory_direct";
  return on_board(w, bytes) ? "shared_memory" : "";
}
bool pow2(int p) { return (p & (p - 1)) == 0; }

std::string ref_barrier(const where& w) {
  return on_board(w, 0) ? "barrier/shared_memory" : "barrier/dissemination";
}
std::string ref_bcast(const where& w, std::size_t bytes) {
  if (auto b = board_choice(w, bytes, 4096, 0, 16385); !b.empty()) return "bcast/" + b;
  if (hierarchical(w, true)) return "bcast/hierarchical";
  return w.p > 2 && bytes >= 512 * 1024 ? "bcast/scatter_allgather" : "bcast/binomial";
}
std::string ref_reduce(const where& w, std::size_t count, std::size_t elem,
                       bool commutative = true) {
  const std::size_t bytes = count * elem;
  if (auto b = board_choice(w, bytes, 8192, 0, 16385); !b.empty()) return "reduce/" + b;
  if (hierarchical(w, commutative)) return "reduce/hierarchical";
  return w.p > 2 && bytes >= 512 * 1024 && count >= static_cast<std::size_t>(w.p)
             ? "reduce/reduce_scatter_gather"
             : "reduce/binomial";
}
std::string ref_allreduce(const where& w, std::size_t count, std::size_t elem, bool commutative) {
  const std::size_t bytes = count * elem;
  if (auto b = board_choice(w, bytes, 1024, 16385, 16385); !b.empty()) return "allreduce/" + b;
  if (hierarchical(w, commutative) && w.equal && bytes >= 64 * 1024 && bytes <= 1024 * 1024 &&
      count >= static_cast<std::size_t>(w.p))
    return "allreduce/hierarchical_slices";
  if (hierarchical(w, commutative) && bytes <= 1024 * 1024) return "allreduce/hierarchical";
  const bool long_vector = count >= static_cast<std::size_t>(w.p) && w.p > 1;
  if (!long_vector || bytes < 64 * 1024) return "allreduce/recursive_doubling";
  if (commutative && w.p > 2 && bytes >= 256 * 1024) return "allreduce/ring";
  return "allreduce/rabenseifner";
}
std::string ref_allgather(const where& w, std::size_t block) {
  const std::size_t gathered = block * static_cast<std::size_t>(w.p);
  // On the board: straight between the buffers from 8 KiB gathered on threads, staged through
  // node memory from 16 KiB across processes, else through the slots up to 16 KiB per rank and
  // straight beyond.
  if (!w.checked && w.board && !w.processes && w.direct && gathered >= 8192)
    return "allgather/shared_memory_direct";
  if (!w.checked && w.board && w.processes && gathered >= 16384)
    return "allgather/shared_memory_staged";
  if (on_board(w, block)) return "allgather/shared_memory";
  if (hierarchical(w, true) && gathered <= 256 * 1024) return "allgather/hierarchical";
  if (gathered >= 64 * 1024) return "allgather/ring";
  return pow2(w.p) ? "allgather/recursive_doubling" : "allgather/bruck";
}
std::string ref_alltoall(const where& w, std::size_t block) {
  return w.p >= 5 && block <= 256 ? "alltoall/bruck" : "alltoall/pairwise";
}
std::string ref_reduce_scatter_block(const where& w, std::size_t block, bool commutative) {
  const std::size_t input = block * static_cast<std::size_t>(w.p);
  // On the board through the slots while a whole input fits one, then staged through node
  // memory across processes, else straight.
  if (!w.checked && w.board && w.processes && input > 16384)
    return "reduce_scatter_block/shared_memory_staged";
  if (on_board(w, input)) return "reduce_scatter_block/shared_memory";
  return commutative && w.p > 2 && input >= 256 * 1024 ? "reduce_scatter_block/ring"
                                                       : "reduce_scatter_block/recursive_halving";
}
std::string ref_generalized(const where& w, std::size_t bytes, bool balanced) {
  // On the board as the reduce, staged past the slots across processes, but never forced
  // straight (the slots' path moves straight beyond them where it can).
  if (!balanced)
    if (auto b = board_choice(w, bytes, 0, 0, 16385); !b.empty()) return "reduce_generalized/" + b;
  if (!balanced && hierarchical(w, true)) return "reduce_generalized/hierarchical";
  return balanced ? "reduce_generalized/aspen_balanced" : "reduce_generalized/aspen";
}

// The algorithm a persistent collective runs: its plan's name without the variants an
// algorithm names itself by (recursive doubling's rank-ordered form, direct delivery; not the
// board's shared_memory_direct, an algorithm of its own).
std::string chosen(const cairn::persistent_request& r) {
  std::string name = r.plan().name;
  if (cairn::test::on_board_plan(name)) return name;
  for (const std::string suffix : {"_ordered", "_direct"})
    if (name.size() > suffix.size() && name.ends_with(suffix))
      name.resize(name.size() - suffix.size());
  return name;
}

// An element of 32 KiB: few elements for many bytes (count < ranks past 64 KiB).
struct wide {
  std::int64_t v[4096];
};
const auto wide_sum = cairn::op(
    [](const wide& a, const wide& b) {
      wide c;
      for (int i = 0; i < 4096; ++i) c.v[i] = a.v[i] + b.v[i];
      return c;
    },
    true);

// The sizes around every threshold of the table (bytes of int64 elements).
const std::vector<std::size_t> sizes = {
    8,     256,   264,    1016,   1024,   4088,   4096,    8184,    8192,    16376,   16384,  16392,
    65528, 65536, 262136, 262144, 524280, 524288, 1048576, 2097144, 2097152, 4194296, 4194304};

template <class Comm>
void check_grid(Comm& c, const where& w) {
  using cairn::test::mat2;
  const int p = w.p;
  const std::string at = " (" + std::to_string(p) + " ranks)";
  EXPECT_EQ(chosen(c.barrier_init()), ref_barrier(w)) << at;
  for (std::size_t bytes : sizes) {
    const std::size_t n = bytes / 8;
    const std::string of = " at " + std::to_string(bytes) + " bytes" + at;
    std::vector<std::int64_t> a(n, 1), b(n);
    EXPECT_EQ(chosen(c.bcast_init(a, 0)), ref_bcast(w, bytes)) << "bcast" << of;
    EXPECT_EQ(chosen(c.reduce_init(a, b, 0)), ref_reduce(w, n, 8)) << "reduce" << of;
    EXPECT_EQ(chosen(c.allreduce_init(a, b)), ref_allreduce(w, n, 8, true)) << "allreduce" << of;
    // Non-commutative: 16-byte elements.
    std::vector<mat2> m(n / 2), mo(n / 2);
    if (!m.empty()) {
      EXPECT_EQ(chosen(c.allreduce_init(m, mo, cairn::test::mat_product)),
                ref_allreduce(w, n / 2, 16, false))
          << "non-commutative allreduce" << of;
      EXPECT_EQ(chosen(c.reduce_init(m, mo, 0, cairn::test::mat_product)),
                ref_reduce(w, n / 2, 16, false))
          << "non-commutative reduce" << of;
    }
    // Blocks of `bytes` per rank.
    const auto P = static_cast<std::size_t>(p);
    if (bytes <= 65536) {
      std::vector<std::int64_t> all(n * P), all2(n * P);
      EXPECT_EQ(chosen(c.allgather_init(a, all)), ref_allgather(w, bytes)) << "allgather" << of;
      EXPECT_EQ(chosen(c.alltoall_init(all, all2)), ref_alltoall(w, bytes)) << "alltoall" << of;
      EXPECT_EQ(chosen(c.reduce_scatter_block_init(all, b)),
                ref_reduce_scatter_block(w, bytes, true))
          << "reduce_scatter_block" << of;
      std::vector<mat2> mall(n / 2 * P);
      if (!m.empty()) {
        EXPECT_EQ(chosen(c.reduce_scatter_block_init(mall, mo, cairn::test::mat_product)),
                  ref_reduce_scatter_block(w, bytes, false))
            << "non-commutative reduce_scatter_block" << of;
      }
    }
  }
  // Block sizes whose gathered total lands on either side of 64 KiB and 256 KiB for this p.
  for (std::size_t total : {std::size_t{65536}, std::size_t{262144}})
    for (std::size_t block : {total / static_cast<std::size_t>(p) / 8 * 8,
                              (total / static_cast<std::size_t>(p) + 7) / 8 * 8}) {
      if (block == 0) continue;
      const std::size_t n = block / 8;
      const std::string of = " for blocks of " + std::to_string(block) + " bytes" + at;
      std::vector<std::int64_t> a(n, 1), b(n), all(n * static_cast<std::size_t>(p));
      EXPECT_EQ(chosen(c.allgather_init(a, all)), ref_allgather(w, block)) << of;
      EXPECT_EQ(chosen(c.reduce_scatter_block_init(all, b)),
                ref_reduce_scatter_block(w, block, true))
          << of;
    }
  // Fewer elements than ranks past 64 KiB: 32 KiB elements.
  for (std::size_t n :
       {std::size_t{2}, std::size_t{3}, std::size_t{8}, std::size_t{16}, std::size_t{17}}) {
    std::vector<wide> a(n), b(n);
    const std::string of = " of " + std::to_string(n) + " 32 KiB elements" + at;
    EXPECT_EQ(chosen(c.allreduce_init(a, b, wide_sum)), ref_allreduce(w, n, sizeof(wide), true))
        << "allreduce" << of;
    EXPECT_EQ(chosen(c.reduce_init(a, b, 0, wide_sum)), ref_reduce(w, n, sizeof(wide)))
        << "reduce" << of;
  }
  // The collectives with one algorithm.
  std::vector<std::int64_t> one(4), all(4 * static_cast<std::size_t>(p));
  EXPECT_EQ(chosen(c.gather_init(one, all, 0)), "gather/binomial");
  EXPECT_EQ(chosen(c.scatter_init(all, one, 0)), "scatter/binomial");
  std::vector<std::int64_t> one2(4);
  EXPECT_EQ(chosen(c.scan_init(one, one2)), "scan/recursive_doubling");
  EXPECT_EQ(chosen(c.exscan_init(one, one2)), "exscan/recursive_doubling");
}

where here(cairn::world& w, const std::vector<int>& members) {
  const int p = static_cast<int>(members.size());
  const bool threads = w.engine() == cairn::engine::threads;
  const bool board = w.node_count() == 1;  // emulated nodes share no node memory either
  const char* check = std::getenv("CAIRN_COLL_CHECK");
  const bool checked = check && *check && std::string(check) != "0";
  // Whether the run copies across processes: always on threads, never with CAIRN_CMA=0, else
  // what the launch probe found (the tests' probe; with the count check on, the table keeps
  // collectives off the board and the probe cannot tell).
  const char* cma = std::getenv("CAIRN_CMA");
  bool direct = threads;
  if (!threads && board && !(cma && std::string(cma) == "0"))
    direct = checked || cairn::test::long_collectives_move_direct(w);
  const cairn::test::placement at = cairn::test::placement_of(w, members);
  return {p, board, direct, checked, !threads, at.nodes, at.consecutive, at.equal};
}

TEST(SelectionTable, DefaultChoicesMatchTheReference) {
  if (std::getenv("CAIRN_COLL")) GTEST_SKIP() << "CAIRN_COLL overrides the default table";
  cairn::test::run([](cairn::world& w) {
    cairn::test::on_world_and_group(
        w, 7, [&](auto& c, const std::vector<int>& members) { check_grid(c, here(w, members)); });
    // The generalized reduce: every rank participates and receives.
    std::vector<int> everyone(static_cast<std::size_t>(w.size()));
    std::iota(everyone.begin(), everyone.end(), 0);
    const where at = here(w, everyone);
    for (std::size_t bytes : sizes) {
      std::vector<std::int64_t> a(bytes / 8, 1), b(bytes / 8);
      EXPECT_EQ(chosen(w.ireduce_init(everyone, everyone, a, b)), ref_generalized(at, bytes, false))
          << bytes << " bytes";
      cairn::generalized_reduce_options balanced;
      balanced.load_balance = true;
      EXPECT_EQ(chosen(w.ireduce_init(everyone, everyone, a, b, cairn::plus{}, balanced)),
                ref_generalized(at, bytes, true))
          << bytes << " bytes, balanced";
    }
  });
}

}  // namespace
