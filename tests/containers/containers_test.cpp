// Distributed containers on both engines, each against a sequential reference over random
// operations from every rank with random keys (integers, strings, structs): every rank
// regenerates every rank's operations and applies them in one sequence. Operations whose
// outcome depends on arrival order (insert-if-missing from several ranks) are checked against
// the set of outcomes any order could give.
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cairn/containers/array.hpp"
#include "cairn/containers/bag.hpp"
#include "cairn/containers/counting_set.hpp"
#include "cairn/containers/disjoint_set.hpp"
#include "cairn/containers/map.hpp"
#include "cairn/containers/set.hpp"
#include "harness.hpp"

using cairn::test::run;

namespace {

// A struct key with cereal's serialize (not trivially copyable).
struct name_key {
  std::string first;
  std::int32_t number = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(first, number);
  }
  bool operator==(const name_key&) const = default;
  auto operator<=>(const name_key&) const = default;
};

std::mt19937_64 rank_gen(std::uint64_t seed, int rank) {
  return std::mt19937_64(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) * 7919);
}

// Words from a small vocabulary with a skew (so keys repeat, within and across ranks).
std::string word(std::mt19937_64& g) {
  const std::uint64_t r = g() % 1000;
  const std::uint64_t id = r < 500 ? r % 7 : r % 311;
  std::string s = "w";
  s += std::to_string(id * 2654435761ULL % 100003);
  if (id % 5 == 0) s += std::string(id % 40, 'z');  // some longer keys
  return s;
}

// This rank's batch of queries: `n` keys (a rank-dependent number, 0 on the last rank), each
// from the reference's keys or, one in four, made by `absent` (usually not in the container).
template <class K, class Ranks, class Ref, class Absent>
std::vector<K> query_batch(const Ranks& w, std::uint64_t seed, const Ref& ref, Absent absent) {
  auto g = rank_gen(seed + 999, w.rank());
  const std::size_t n = w.rank() == w.size() - 1 ? 0 : 1 + g() % 300;
  std::vector<K> keys;
  for (std::size_t i = 0; i < n; ++i) {
    if (g() % 4 == 0 || ref.empty())
      keys.push_back(absent(i));
    else
      keys.push_back(std::next(ref.begin(), static_cast<std::ptrdiff_t>(g() % ref.size()))->first);
  }
  return keys;
}

using direct = cairn::route::direct;

template <class K, class Route = direct, class MakeKey, class Ranks>
void check_counting_set(Ranks& w, std::uint64_t seed, std::size_t cache_slots, MakeKey make_key,
                        Route route = {}) {
  cairn::containers::counting_set<K, cairn::containers::default_hash<K>, Route> cs(
      w, cairn::containers::container_options{.buffer_bytes = 256, .cache_slots = cache_slots}, {},
      route);
  const int ops = 2000;
  std::map<K, std::uint64_t> ref;
  for (int r = 0; r < w.size(); ++r) {
    auto g = rank_gen(seed, r);
    for (int i = 0; i < ops; ++i) {
      const K k = make_key(g);
      const std::uint64_t n = g() % 3 + 1;
      ref[k] += n;
      if (r == w.rank()) cs.async_insert(k, n);
    }
  }
  w.quiesce();
  // This rank holds exactly the reference's keys it owns, with their counts.
  std::map<K, std::uint64_t> mine(cs.local().begin(), cs.local().end()), want;
  for (const auto& [k, n] : ref)
    if (cs.owner(k) == w.rank()) want.emplace(k, n);
  EXPECT_TRUE(mine == want) << "rank " << w.rank() << ": " << mine.size() << " keys, want "
                            << want.size();
  EXPECT_EQ(cs.size(), ref.size());
  auto it = ref.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(seed % ref.size()));
  EXPECT_EQ(cs.count(it->first), it->second);
  // A batch of counts per rank, absent keys counting 0.
  const auto batch = query_batch<K>(w, seed, ref, [&](std::size_t i) {
    std::mt19937_64 g(i);  // a key not in the container if a few draws find one
    K k = make_key(g);
    for (int tries = 0; tries < 50 && ref.count(k); ++tries) k = make_key(g);
    return k;
  });
  const auto counts = cs.counts_of(batch);
  ASSERT_EQ(counts.size(), batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i)
    EXPECT_EQ(counts[i], ref.count(batch[i]) ? ref.at(batch[i]) : 0) << "rank " << w.rank();
  std::vector<std::pair<K, std::uint64_t>> top(ref.begin(), ref.end());
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  top.resize(std::min<std::size_t>(5, top.size()));
  EXPECT_TRUE(cs.topk(5) == top) << "rank " << w.rank();
  cs.clear();
  EXPECT_EQ(cs.size(), 0u);
}

TEST(CountingSet, MatchesTheSequentialCount) {
  run([](cairn::world& w) {
    for (std::size_t cache : {std::size_t{0}, std::size_t{1}, std::size_t{64}, std::size_t{4096}}) {
      check_counting_set<std::string>(w, 11 + cache, cache, [](auto& g) { return word(g); });
      check_counting_set<std::uint64_t>(w, 12 + cache, cache, [](auto& g) { return g() % 500; });
      check_counting_set<name_key>(w, 13 + cache, cache, [](auto& g) {
        return name_key{word(g), static_cast<std::int32_t>(g() % 3)};
      });
      if (::testing::Test::HasFailure()) break;
    }
  });
}

template <class Route = direct, class Ranks>
void check_map(Ranks& w, std::size_t cache_slots, Route route = {}) {
  {
    using value = std::vector<std::int64_t>;  // a serialized value
    cairn::containers::map<std::string, value, cairn::containers::default_hash<std::string>, Route>
        m(w, cairn::containers::container_options{.buffer_bytes = 512, .cache_slots = cache_slots},
          {}, route);
    const int ops = 1500;
    // Phase 1: reductions (element-wise sums, commutative) and visits that add their extra
    // arguments: the outcome does not depend on arrival order.
    std::map<std::string, value> ref;
    auto add_into = [](value& a, const value& b) {
      if (a.size() < b.size()) a.resize(b.size());
      for (std::size_t i = 0; i < b.size(); ++i) a[i] += b[i];
    };
    for (int r = 0; r < w.size(); ++r) {
      auto g = rank_gen(21, r);
      for (int i = 0; i < ops; ++i) {
        const std::string k = word(g);
        const value v(g() % 4 + 1, static_cast<std::int64_t>(g() % 100));
        if (g() % 2) {
          if (r == w.rank())
            m.async_reduce(k, v, [](const value& a, const value& b) {
              value out = a;
              if (out.size() < b.size()) out.resize(b.size());
              for (std::size_t j = 0; j < b.size(); ++j) out[j] += b[j];
              return out;
            });
          auto [it, fresh] = ref.try_emplace(k, v);
          if (!fresh) add_into(it->second, v);
        } else {
          const std::int64_t x = static_cast<std::int64_t>(g() % 1000);
          const std::string tag(g() % 3, 't');
          if (r == w.rank())
            m.async_visit(
                k,
                [](const std::string&, value& val, std::int64_t add, const std::string& t) {
                  if (val.empty()) val.resize(1);
                  val[0] += add + static_cast<std::int64_t>(t.size());
                },
                x, tag);
          value& val = ref[k];
          if (val.empty()) val.resize(1);
          val[0] += x + static_cast<std::int64_t>(tag.size());
        }
      }
    }
    w.quiesce();
    const auto all = m.gather(0);
    if (w.rank() == 0) {
      EXPECT_TRUE(all == ref) << all.size() << " keys, want " << ref.size();
    }
    EXPECT_EQ(m.size(), ref.size());
    const auto& probe = *std::next(ref.begin(), static_cast<std::ptrdiff_t>(ref.size() / 2));
    EXPECT_EQ(m.value_of(probe.first), std::optional<value>(probe.second));
    EXPECT_EQ(m.value_of("no such key"), std::nullopt);
    const auto batch = query_batch<std::string>(
        w, 21, ref, [](std::size_t i) { return "no such key " + std::to_string(i); });
    const auto values = m.values_of(batch);
    ASSERT_EQ(values.size(), batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto want = ref.count(batch[i]) ? std::optional<value>(ref.at(batch[i])) : std::nullopt;
      EXPECT_EQ(values[i], want) << "rank " << w.rank() << ": " << batch[i];
    }

    // Phase 2: each rank assigns keys only it writes; inserts of shared keys keep one of the
    // values offered; erases of keys nobody writes in this phase.
    std::map<std::string, std::set<value>> offered;
    std::set<std::string> erased;
    for (int r = 0; r < w.size(); ++r) {
      auto g = rank_gen(22, r);
      for (int i = 0; i < 200; ++i) {
        std::string own = "own";
        own += std::to_string(r);
        own += '.';
        own += std::to_string(g() % 50);
        const value v{static_cast<std::int64_t>(r), static_cast<std::int64_t>(i)};
        if (r == w.rank()) m.async_insert_or_assign(own, v);
        ref[own] = v;  // one writer, in program order
        std::string shared = "shared";
        shared += std::to_string(g() % 20);
        if (r == w.rank()) m.async_insert(shared, v);
        offered[shared].insert(v);
      }
      const std::string gone = std::next(ref.begin(), static_cast<std::ptrdiff_t>(g() % 50))->first;
      if (gone.rfind("own", 0) != 0 && gone.rfind("shared", 0) != 0) {
        if (r == w.rank()) m.async_erase(gone);
        erased.insert(gone);
      }
    }
    w.quiesce();
    for (const auto& k : erased) ref.erase(k);
    const auto after = m.gather(w.size() - 1);
    if (w.rank() == w.size() - 1) {
      EXPECT_EQ(after.size(), ref.size() + offered.size());
      for (const auto& [k, v] : after) {
        if (auto o = offered.find(k); o != offered.end())
          EXPECT_TRUE(o->second.count(v)) << k << " holds a value nobody offered";
        else
          EXPECT_TRUE(ref.count(k) && ref.at(k) == v) << k;
      }
    }

    // Phase 3: each rank's reductions, assignments, visits and erases of its own keys, in an
    // order that matters (reductions gathered at the owner must be applied before a later
    // assignment of the key, and after an earlier one).
    m.clear();
    std::map<std::string, value> own_ref;
    auto sum_into = [](const value& a, const value& b) {
      value out = a;
      if (out.size() < b.size()) out.resize(b.size());
      for (std::size_t j = 0; j < b.size(); ++j) out[j] += b[j];
      return out;
    };
    for (int r = 0; r < w.size(); ++r) {
      auto g = rank_gen(23, r);
      for (int i = 0; i < 600; ++i) {
        const std::string k = "ord" + std::to_string(r) + '.' + std::to_string(g() % 40);
        const value v{static_cast<std::int64_t>(g() % 100)};
        const bool mine = r == w.rank();
        switch (g() % 4) {
          case 0:
          case 1: {
            if (mine) m.async_reduce(k, v, sum_into);
            auto [it, fresh] = own_ref.try_emplace(k, v);
            if (!fresh) it->second = sum_into(it->second, v);
            break;
          }
          case 2:
            if (mine) m.async_insert_or_assign(k, v);
            own_ref[k] = v;
            break;
          default:
            if (g() % 4 == 0) {
              if (mine) m.async_erase(k);
              own_ref.erase(k);
            } else {
              if (mine) m.async_visit(k, [](const std::string&, value& val) { val.push_back(7); });
              own_ref[k].push_back(7);
            }
        }
      }
    }
    w.quiesce();
    const auto ordered = m.gather(0);
    if (w.rank() == 0) {
      EXPECT_EQ(ordered.size(), own_ref.size());
      int shown = 0;  // the first keys that differ
      for (const auto& [k, v] : own_ref) {
        const auto it = ordered.find(k);
        if ((it == ordered.end() || it->second != v) && shown++ < 3)
          ADD_FAILURE() << "cache " << cache_slots << ": key " << k
                        << (it == ordered.end() ? " is missing" : " has a wrong value") << " ("
                        << v.size() << " numbers expected)";
      }
    }
  }
}

// Reductions cached at the source (a cache of 0, 1 and 4096 slots) mixed with visits,
// assignments and erases of the same keys from the same rank.
TEST(Map, ReduceVisitAssignEraseMatchTheReference) {
  run([](cairn::world& w) {
    for (std::size_t cache : {std::size_t{0}, std::size_t{1}, std::size_t{4096}}) {
      check_map(w, cache);
      if (::testing::Test::HasFailure()) break;
    }
  });
}

using fan_map = cairn::containers::map<std::uint64_t, std::uint64_t>;

// A visitor's calls on keys of its rank wait until it returns: here each inserts many keys
// (the rank's part grows under it) and then adds to the value it holds; and it inserts, assigns
// and erases one key of its own rank, which must run in that order.
void visit_and_fan_out(fan_map& self, const std::uint64_t& key, std::uint64_t& value,
                       std::uint64_t fan) {
  for (std::uint64_t i = 0; i < fan; ++i) self.async_insert(1000 + key * fan + i, key);
  std::uint64_t own = (1u << 30) + key * 1024;  // a key of this rank, of this visit alone
  while (self.owner(own) != self.owner(key)) ++own;
  self.async_insert(own, 1);
  self.async_insert_or_assign(own, 2);
  self.async_erase(own);
  self.async_insert_or_assign(own, value + 3);
  value += 1;
}

TEST(Map, CallsAVisitorMakesOnItsRankRunAfterIt) {
  run([](cairn::world& w) {
    constexpr std::uint64_t visited = 64, fan = 200;
    fan_map m(w);
    for (std::uint64_t k = 0; k < visited; ++k)
      m.async_visit(
          k,
          [](fan_map& self, const std::uint64_t& key, std::uint64_t& value, std::uint64_t f) {
            visit_and_fan_out(self, key, value, f);
          },
          fan);
    w.quiesce();
    // Each rank's visit of k adds 1 (after its own calls): k ends at the rank count.
    std::uint64_t wrong = 0, mine = 0;
    for (std::uint64_t k = 0; k < visited; ++k) {
      if (m.owner(k) != w.rank()) continue;
      const auto it = m.local().find(k);
      wrong += it == m.local().end() || it->second != static_cast<std::uint64_t>(w.size());
      ++mine;
    }
    for (const auto& [key, value] : m.local()) {
      if (key < visited) continue;
      if (key < 1u << 30) {  // fanned out: inserted by every visit of key's visitor alike
        wrong += value != (key - 1000) / fan;
      } else {  // erased, then assigned the visited value (0 .. size - 1) plus 3
        wrong += value < 3 || value >= 3 + static_cast<std::uint64_t>(w.size());
      }
      ++mine;
    }
    EXPECT_EQ(wrong, 0u) << "rank " << w.rank();
    EXPECT_EQ(w.allreduce(mine, cairn::plus{}), visited + visited * fan + visited);
    EXPECT_EQ(m.size(), visited + visited * fan + visited);
  });
}

// Every key of every rank's part, in order (each rank's part as `key_of` reads its items).
template <class Part, class KeyOf>
std::vector<std::uint64_t> all_keys(cairn::world& w, const Part& part, KeyOf key_of) {
  std::vector<std::uint64_t> mine;
  for (const auto& item : part) mine.push_back(key_of(item));
  std::vector<std::uint64_t> all;
  for (auto& p : w.allgather(mine)) all.insert(all.end(), p.begin(), p.end());
  std::sort(all.begin(), all.end());
  return all;
}

// for_all's function makes calls on keys of every rank, its own included (enough of them
// to fill buffers and flush while it runs): those on its rank run after the iteration, and
// messages from other ranks wait, so the part it walks does not change under it.
TEST(Containers, CallsAForAllMakesRunAfterIt) {
  run([](cairn::world& w) {
    constexpr std::uint64_t n = 6000;
    const auto me = static_cast<std::uint64_t>(w.rank());
    const auto p = static_cast<std::uint64_t>(w.size());
    std::vector<std::uint64_t> want;
    {  // set: each key k < n adds k + n and k + 2n
      cairn::containers::set<std::uint64_t> s(w);
      for (std::uint64_t k = me; k < n; k += p) s.async_insert(k);
      w.quiesce();
      s.for_all([&](std::uint64_t k) {
        if (k < n) {
          s.async_insert(k + n);
          s.async_insert(k + 2 * n);
        }
      });
      w.quiesce();
      want.resize(3 * n);
      std::iota(want.begin(), want.end(), 0);
      EXPECT_EQ(all_keys(w, s.local(), [](std::uint64_t k) { return k; }), want);
    }
    {  // counting_set: each key k < n adds 1 to itself and to k + n
      cairn::containers::counting_set<std::uint64_t> c(w);
      for (std::uint64_t k = me; k < n; k += p) c.async_insert(k);
      w.quiesce();
      c.for_all([&](std::uint64_t k, std::uint64_t) {
        if (k < n) {
          c.async_insert(k);
          c.async_insert(k + n);
        }
      });
      w.quiesce();
      std::uint64_t wrong = 0;
      for (const auto& [k, count] : c.local()) wrong += count != (k < n ? 2u : 1u);
      EXPECT_EQ(wrong, 0u) << "rank " << w.rank();
      want.resize(2 * n);
      EXPECT_EQ(all_keys(w, c.local(), [](const auto& e) { return e.first; }), want);
    }
    {  // map: each key k < n takes k + 1 (by a call, and after the walk) and adds k + n -> 2k
      cairn::containers::map<std::uint64_t, std::uint64_t> m(w);
      for (std::uint64_t k = me; k < n; k += p) m.async_insert(k, k);
      w.quiesce();
      m.for_all([&](std::uint64_t k, std::uint64_t& v) {
        if (k >= n) return;
        m.async_insert_or_assign(k, v + 1);
        m.async_insert_or_assign(k + n, 2 * v);
      });
      w.quiesce();
      std::uint64_t wrong = 0;
      for (const auto& [k, v] : m.local()) wrong += v != (k < n ? k + 1 : 2 * (k - n));
      EXPECT_EQ(wrong, 0u) << "rank " << w.rank();
      EXPECT_EQ(all_keys(w, m.local(), [](const auto& e) { return e.first; }), want);
    }
    {  // bag: each item x < n places x + n (round robin: on this rank too)
      cairn::containers::bag<std::uint64_t> b(w);
      for (std::uint64_t k = me; k < n; k += p) b.async_insert(k);
      w.quiesce();
      b.for_all([&](std::uint64_t x) {
        if (x < n) b.async_insert(x + n);
      });
      w.quiesce();
      EXPECT_EQ(all_keys(w, b.local(), [](std::uint64_t x) { return x; }), want);
    }
    {  // array: value i sets value i + 1 of its rank to its own plus 1000, read before the
       // walk (a set from another rank may arrive before this rank's walk: none is made)
      cairn::containers::array<std::uint64_t> a(w, n);
      for (std::uint64_t i = me; i < n; i += p) a.async_set(i, i);
      w.quiesce();
      a.for_all([&](std::uint64_t i, std::uint64_t& v) {
        if (i + 1 < n && a.owner(i + 1) == w.rank()) a.async_set(i + 1, v + 1000);
      });
      w.quiesce();
      const auto got = a.gather(0);
      if (w.rank() == 0) {
        std::uint64_t wrong = 0;
        for (std::uint64_t i = 0; i < n; ++i)
          wrong += got[i] != (i > 0 && a.owner(i - 1) == a.owner(i) ? i - 1 + 1000 : i);
        EXPECT_EQ(wrong, 0u);
      }
    }
    {  // disjoint_set: pairs {2j, 2j + 1}; each 2j < n joins 2j + n during the walk
      cairn::containers::disjoint_set<std::uint64_t> d(w);
      for (std::uint64_t j = me; 2 * j + 1 < n; j += p) d.async_union(2 * j, 2 * j + 1);
      w.quiesce();
      d.for_all([&](std::uint64_t x, std::uint64_t) {
        if (x < n && x % 2 == 0) d.async_union(x, x + n);
      });
      d.compress();
      std::uint64_t wrong = 0;
      for (const auto& [x, root] : d.local()) wrong += root != (x < n ? x - x % 2 : x - n);
      EXPECT_EQ(wrong, 0u) << "rank " << w.rank();
      EXPECT_EQ(w.allreduce(static_cast<std::uint64_t>(d.local().size()), cairn::plus{}),
                n + n / 2);
    }
  });
}

template <class Route = direct, class Ranks>
void check_set(Ranks& w, Route route = {}) {
  {
    cairn::containers::set<name_key, cairn::containers::default_hash<name_key>, Route> s(w, {}, {},
                                                                                         route);
    std::set<name_key> ref, gone;
    for (int r = 0; r < w.size(); ++r) {
      auto g = rank_gen(31, r);
      for (int i = 0; i < 1000; ++i) {
        name_key k{word(g), static_cast<std::int32_t>(g() % 4)};
        if (r == w.rank()) s.async_insert(k);
        ref.insert(k);
        if (g() % 4 == 0) gone.insert(k);
      }
    }
    w.quiesce();
    EXPECT_EQ(s.size(), ref.size());
    for (const auto& k : s.local()) EXPECT_EQ(s.owner(k), w.rank());
    // Erases, split among the ranks.
    int i = 0;
    for (const auto& k : gone)
      if (i++ % w.size() == w.rank()) s.async_erase(k);
    w.quiesce();
    for (const auto& k : gone) ref.erase(k);
    const auto all = s.gather(0);
    if (w.rank() == 0) {
      EXPECT_TRUE(all == ref);
    }
    EXPECT_EQ(s.contains(*ref.begin()), true);
    EXPECT_EQ(s.contains(*gone.begin()), false);
    // A batch per rank: kept keys, erased keys and keys never inserted.
    auto g = rank_gen(32, w.rank());
    std::vector<name_key> batch;
    for (int i = 0; i < (w.rank() == w.size() - 1 ? 0 : 200); ++i) {
      const auto& from = g() % 2 ? ref : gone;
      batch.push_back(
          g() % 5 == 0 ? name_key{"never", i}
                       : *std::next(from.begin(), static_cast<std::ptrdiff_t>(g() % from.size())));
    }
    const auto found = s.contains_each(batch);
    ASSERT_EQ(found.size(), batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i)
      EXPECT_EQ(found[i], ref.count(batch[i]) == 1)
          << "rank " << w.rank() << ": " << batch[i].first;
  }
}

TEST(Set, InsertAndEraseMatchTheReference) {
  run([](cairn::world& w) { check_set(w); });
}

template <class Route = direct, class Ranks>
void check_bag(Ranks& w, Route route = {}) {
  {
    cairn::containers::bag<std::pair<int, std::string>, Route> b(w, {}, route);
    std::multiset<std::pair<int, std::string>> ref;
    for (int r = 0; r < w.size(); ++r) {
      auto g = rank_gen(41, r);
      const int n = static_cast<int>(g() % 300) * (r % 2);  // odd ranks only: unbalanced
      for (int i = 0; i < n; ++i) {
        std::pair<int, std::string> x{r, word(g)};
        if (r == w.rank()) {
          if (i % 3 == 0)
            b.async_insert(x, 0);  // more skew: a third to rank 0
          else
            b.async_insert(x);
        }
        ref.insert(x);
      }
    }
    w.quiesce();
    auto everything = [&] {
      std::multiset<std::pair<int, std::string>> got;
      for (auto& part : w.allgather(b.local()))
        for (auto& x : part) got.insert(x);
      return got;
    };
    EXPECT_EQ(b.size(), ref.size());
    EXPECT_TRUE(everything() == ref);
    const auto before = w.allgather(b.local());
    b.rebalance();
    const std::uint64_t p = static_cast<std::uint64_t>(w.size());
    const std::uint64_t want =
        ref.size() / p + (static_cast<std::uint64_t>(w.rank()) < ref.size() % p ? 1 : 0);
    EXPECT_EQ(b.local().size(), want) << "rank " << w.rank();
    // The order by (rank, position) is kept: concatenating the parts gives the same sequence.
    std::vector<std::pair<int, std::string>> seq_before, seq_after;
    for (auto& part : before) seq_before.insert(seq_before.end(), part.begin(), part.end());
    for (auto& part : w.allgather(b.local()))
      seq_after.insert(seq_after.end(), part.begin(), part.end());
    EXPECT_TRUE(seq_before == seq_after);
    b.shuffle(7);
    EXPECT_TRUE(everything() == ref);
  }
}

TEST(Bag, RebalanceAndShuffleKeepEveryItem) {
  run([](cairn::world& w) { check_bag(w); });
}

template <class Route = direct, class Ranks>
void check_array(Ranks& w, Route route = {}, std::size_t cache_slots = 32768) {
  {
    for (std::uint64_t n :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{5}, std::uint64_t{1000}}) {
      cairn::containers::array<std::int64_t, Route> a(w, n, 3, {.cache_slots = cache_slots}, route);
      std::vector<std::int64_t> ref(n, 3);
      if (n > 0) {
        // Phase 1: updates that commute (reductions by +, visits that add and count).
        for (int r = 0; r < w.size(); ++r) {
          auto g = rank_gen(51 + n, r);
          for (int i = 0; i < 500; ++i) {
            const std::uint64_t k = g() % n;
            const auto v = static_cast<std::int64_t>(g() % 100);
            if (g() % 2) {
              if (r == w.rank())
                a.async_reduce(k, v, [](std::int64_t x, std::int64_t y) { return x + y; });
              ref[k] += v;
            } else {
              if (r == w.rank())
                a.async_visit(
                    k, [](std::uint64_t, std::int64_t& x, std::int64_t d) { x += d; }, v);
              ref[k] += v;
            }
          }
        }
        w.quiesce();
        // Phase 2: sets of indices each owned by one writer rank, in program order.
        for (int r = 0; r < w.size(); ++r) {
          auto g = rank_gen(61 + n, r);
          for (int i = 0; i < 100; ++i) {
            const std::uint64_t k = (g() % n) / static_cast<std::uint64_t>(w.size()) *
                                        static_cast<std::uint64_t>(w.size()) +
                                    static_cast<std::uint64_t>(r);
            if (k >= n) continue;
            const auto v = static_cast<std::int64_t>(i);
            if (r == w.rank()) a.async_set(k, v);
            ref[k] = v;
          }
        }
        w.quiesce();
        // Phase 3: each rank's reductions, sets and visits of its own indices in an order
        // that matters (a reduction cached at the source goes before a later set or visit).
        for (int r = 0; r < w.size(); ++r) {
          auto g = rank_gen(71 + n, r);
          for (int i = 0; i < 400; ++i) {
            const std::uint64_t k =
                (g() % 16) * static_cast<std::uint64_t>(w.size()) + static_cast<std::uint64_t>(r);
            const auto v = static_cast<std::int64_t>(g() % 7);
            const auto op = g() % 3;
            if (k >= n) continue;
            const bool mine = r == w.rank();
            if (op == 0) {
              if (mine) a.async_reduce(k, v, [](std::int64_t x, std::int64_t y) { return x + y; });
              ref[k] += v;
            } else if (op == 1) {
              if (mine) a.async_set(k, v);
              ref[k] = v;
            } else {
              if (mine)
                a.async_visit(
                    k,
                    [](std::uint64_t, std::int64_t& x, std::int64_t d) {
                      x = (x * 3 + d) % 1000003;
                    },
                    v);
              ref[k] = (ref[k] * 3 + v) % 1000003;
            }
          }
        }
        w.quiesce();
      }
      const auto all = a.gather(0);
      if (w.rank() == 0) {
        EXPECT_EQ(all, ref) << "n = " << n;
      }
      std::uint64_t mine = a.local().size(), total = 0;
      w.allreduce(std::span(&mine, 1), std::span(&total, 1), cairn::plus{});
      EXPECT_EQ(total, n);
    }
  }
}

TEST(Array, SetVisitReduceMatchTheReference) {
  run([](cairn::world& w) {
    check_array(w);
    check_array(w, direct{}, 0);  // no combining
    check_array(w, direct{}, 4);  // evictions all the time
  });
}

TEST(Array, IndexPastTheEndIsRefused) {
  run([](cairn::world& w) {
    cairn::containers::array<int> a(w, 10);
    const std::string m = cairn::test::message_of([&] { a.async_set(10, 1); });
    EXPECT_TRUE(cairn::test::has_text(m, "array::async_set: rank " + std::to_string(w.rank()) +
                                             ": index 10 is outside the array of 10 values"))
        << m;
    w.quiesce();
  });
}

// Sequential union-find: the reference partition.
template <class K>
struct reference_sets {
  std::map<K, K> parent;
  K find(K x) {
    auto it = parent.try_emplace(x, x).first;
    while (!(it->second == x)) {
      x = it->second;
      it = parent.find(x);
    }
    return x;
  }
  void unite(const K& a, const K& b) {
    const K ra = find(a), rb = find(b);
    if (ra < rb) parent[rb] = ra;
    if (rb < ra) parent[ra] = rb;
  }
};

template <class K, class Route = direct, class MakeKey, class Ranks>
void check_disjoint_set(Ranks& w, std::uint64_t seed, int unions, MakeKey make_key,
                        Route route = {}) {
  cairn::containers::disjoint_set<K, cairn::containers::default_hash<K>, Route> ds(w, {}, {},
                                                                                   route);
  reference_sets<K> ref;
  for (int r = 0; r < w.size(); ++r) {
    auto g = rank_gen(seed, r);
    for (int i = 0; i < unions; ++i) {
      const K a = make_key(g), b = make_key(g);
      if (r == w.rank()) ds.async_union(a, b);
      ref.unite(a, b);
    }
  }
  ds.compress();
  for (const auto& [x, root] : ds.local()) {
    EXPECT_EQ(ds.owner(x), w.rank());
    EXPECT_TRUE(root == ref.find(x)) << "rank " << w.rank();  // the set's smallest key
  }
  EXPECT_EQ(ds.size(), ref.parent.size());
  std::uint64_t sets = 0;
  for (const auto& [x, p] : ref.parent) sets += ref.find(x) == x ? 1 : 0;
  EXPECT_EQ(ds.num_sets(), sets);
  const K probe =
      std::next(ref.parent.begin(), static_cast<std::ptrdiff_t>(seed % ref.parent.size()))->first;
  EXPECT_TRUE(ds.find(probe) == ref.find(probe));
  // A batch of roots per rank; a key in no union is its own root.
  const auto batch = query_batch<K>(w, seed, ref.parent, [&](std::size_t i) {
    std::mt19937_64 g(i);  // a key not in the container if a few draws find one
    K k = make_key(g);
    for (int tries = 0; tries < 50 && ref.parent.count(k); ++tries) k = make_key(g);
    return k;
  });
  const auto roots = ds.roots_of(batch);
  ASSERT_EQ(roots.size(), batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const K want = ref.parent.count(batch[i]) ? ref.find(batch[i]) : batch[i];
    EXPECT_TRUE(roots[i] == want) << "rank " << w.rank();
  }
}

// A chain of unions whose walk stays on one rank for its whole length: the walk loops (no
// nested calls, no stack overflow) and halves the path it climbs.
TEST(DisjointSet, LongLocalChainsNeitherNestNorOverflow) {
  run([](cairn::world& w) {
    const std::uint32_t n = w.size() == 1 ? 300000 : 3000;
    cairn::containers::disjoint_set<std::uint32_t> ds(w);
    if (w.rank() == 0) {
      for (std::uint32_t i = n - 1; i-- > 0;) ds.async_union(i, i + 1);  // n-1 -> ... -> 0
      ds.async_union(n - 1, n);                                          // walks the whole chain
    }
    ds.compress();
    EXPECT_EQ(ds.num_sets(), 1u);
    EXPECT_EQ(ds.size(), static_cast<std::uint64_t>(n) + 1);
    for (const auto& [x, root] : ds.local()) EXPECT_EQ(root, 0u) << x;
  });
}

// compress() asks each parent on another rank once per round, however many items point to
// it: a star of n items under key 0 costs a rank at most one ask and an answer per asking rank
// each round, not an ask and an answer per item.
TEST(DisjointSet, CompressAsksEachParentOncePerRound) {
  run([](cairn::world& w) {
    const std::uint64_t n = 4000;
    cairn::containers::disjoint_set<std::uint64_t> ds(w);
    for (std::uint64_t i = 1 + static_cast<std::uint64_t>(w.rank()); i <= n;
         i += static_cast<std::uint64_t>(w.size()))
      ds.async_union(0, i);
    w.quiesce();
    const std::uint64_t before = ds.stats().sent;
    const int rounds = ds.compress();
    const std::uint64_t sent = ds.stats().sent - before;
    EXPECT_LE(sent, static_cast<std::uint64_t>(rounds) * static_cast<std::uint64_t>(1 + w.size()))
        << "rank " << w.rank() << ", " << rounds << " rounds";
    EXPECT_GT(ds.stats().combined_source, 0u) << "rank " << w.rank();
    EXPECT_EQ(ds.num_sets(), 1u);
    EXPECT_EQ(ds.size(), n + 1);
    for (const auto& [x, root] : ds.local()) EXPECT_EQ(root, 0u) << x;
  });
}

TEST(DisjointSet, ComponentsMatchTheSequentialUnionFind) {
  run([](cairn::world& w) {
    check_disjoint_set<std::uint64_t>(w, 71, 300, [](auto& g) { return g() % 2000; });
    // A long chain: path compression must take several rounds.
    check_disjoint_set<std::uint64_t>(w, 72, 400, [](auto& g) { return g() % 600; });
    check_disjoint_set<std::string>(w, 73, 200, [](auto& g) { return word(g); });
  });
}

// Every container on each forwarding route (items pass through intermediate ranks) gives the
// same results as on the direct route.
template <class Route, class Ranks>
void check_every_container(Ranks& w, Route route) {
  check_counting_set<std::string>(
      w, 81, 64, [](auto& g) { return word(g); }, route);
  check_map(w, 4096, route);
  check_set(w, route);
  check_bag(w, route);
  check_array(w, route);
  check_disjoint_set<std::uint64_t>(
      w, 82, 300, [](auto& g) { return g() % 2000; }, route);
}

// Every container on groups (a shuffle of all ranks, and the odd ranks beside the even ones,
// two containers alive at once on disjoint groups) gives the reference's results in group
// ranks, with group::quiesce ending its phases.
TEST(Containers, OnGroupsMatchTheReference) {
  run([](cairn::world& w) {
    std::vector<int> all(static_cast<std::size_t>(w.size()));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), std::mt19937_64(20261128));
    auto shuffled = w.group(all);
    check_every_container(shuffled, cairn::route::direct{});
    auto half = w.group(cairn::ranks{w.rank() % 2, w.size(), 2});  // this rank's parity
    check_every_container(half, cairn::route::grid{});
    // A container on the world and one on the group alive at once: each its own calls.
    cairn::containers::counting_set<std::uint64_t> on_world(w), on_half(half);
    for (std::uint64_t k = 0; k < 50; ++k) {
      on_world.async_insert(k);
      on_half.async_insert(k % 7, 2);
    }
    half.quiesce();
    EXPECT_EQ(on_half.size(), 7u);
    EXPECT_EQ(on_half.count(3),
              2u * 7 * static_cast<std::uint64_t>(half.size()));  // k = 3, 10, .., 45
    w.quiesce();
    EXPECT_EQ(on_world.count(3), static_cast<std::uint64_t>(w.size()));
    // An insertion on a rank outside the group is refused before anything is sent.
    cairn::containers::bag<int> b(half);
    try {
      b.async_insert(1, half.size());
      ADD_FAILURE() << "no error for a bag target outside the group";
    } catch (const cairn::error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("rank " + std::to_string(w.rank())), std::string::npos) << what;
      EXPECT_NE(what.find("target rank " + std::to_string(half.size()) +
                          " is outside the group of " + std::to_string(half.size())),
                std::string::npos)
          << what;
    }
  });
}

TEST(Containers, EveryRouteMatchesTheReference) {
  run([](cairn::world& w) {
    check_every_container(w, cairn::route::grid{});
    check_every_container(w, cairn::route::hypercube{});
    check_every_container(w, cairn::route::node_aware{});
  });
}

}  // namespace

namespace {

// Sum of this rank's `n` over the ranks of w.
std::uint64_t total_of(cairn::world& w, std::uint64_t n) { return w.allreduce(n, cairn::plus{}); }

// Counts and reductions of a few keys from every rank on the hypercube route: the ranks on a
// path take the calls passing through into their caches and send them on merged
// (combined_hops), and the results are the reference's. Buffers hold every call until
// quiesce, so each hop has used its cache's merge before any call passes through it.
template <class Route>
void check_hop_combining(cairn::world& w, Route route, bool forwards, bool combine = true) {
  const cairn::containers::container_options opts{.buffer_bytes = 1 << 20, .combine_hops = combine};
  cairn::containers::counting_set<std::uint64_t, cairn::containers::default_hash<std::uint64_t>,
                                  Route>
      cs(w, opts, {}, route);
  cairn::containers::map<std::uint64_t, std::int64_t,
                         cairn::containers::default_hash<std::uint64_t>, Route>
      m(w, opts, {}, route);
  cairn::containers::array<std::int64_t, Route> a(w, 97, 0, opts, route);
  auto low = [](std::int64_t a, std::int64_t b) { return std::min(a, b); };
  auto add = [](std::int64_t a, std::int64_t b) { return a + b; };
  std::vector<std::int64_t> sums(97, 0);
  std::map<std::uint64_t, std::uint64_t> counts;
  std::map<std::uint64_t, std::int64_t> lows;
  for (int r = 0; r < w.size(); ++r) {
    auto g = rank_gen(61, r);
    for (int i = 0; i < 3000; ++i) {
      const std::uint64_t k = g() % 97;
      const std::uint64_t n = g() % 5 + 1;
      const auto v = static_cast<std::int64_t>(g() % 100000) - 50000;
      counts[k] += n;
      auto [it, fresh] = lows.try_emplace(k, v);
      if (!fresh) it->second = std::min(it->second, v);
      sums[k] += v;
      if (r == w.rank()) {
        cs.async_insert(k, n);
        m.async_reduce(k, v, low);
        a.async_reduce(k, v, add);
      }
    }
  }
  w.quiesce();
  for (const auto& [k, n] : counts)
    if (cs.owner(k) == w.rank()) {
      const auto it = cs.local().find(k);
      EXPECT_TRUE(it != cs.local().end() && it->second == n) << "rank " << w.rank() << " key " << k;
    }
  EXPECT_EQ(cs.size(), counts.size());
  EXPECT_EQ(m.gather(0).size(), w.rank() == 0 ? lows.size() : 0u);
  for (const std::uint64_t k : {0ULL, 13ULL, 96ULL})
    EXPECT_EQ(m.value_of(k), std::optional<std::int64_t>(lows.at(k))) << "key " << k;
  const auto all_sums = a.gather(0);
  if (w.rank() == 0) {
    EXPECT_EQ(all_sums, sums);
  }
  const std::uint64_t set_hops = total_of(w, cs.stats().combined_hops);
  const std::uint64_t map_hops = total_of(w, m.stats().combined_hops);
  const std::uint64_t array_hops = total_of(w, a.stats().combined_hops);
  const std::uint64_t forwarded =
      total_of(w, cs.stats().forwarded + m.stats().forwarded + a.stats().forwarded);
  if (forwards && combine) {  // every call passing through joins a cache
    EXPECT_GT(set_hops, 0u);
    EXPECT_GT(map_hops, 0u);
    EXPECT_GT(array_hops, 0u);
  } else {
    EXPECT_EQ(set_hops + map_hops + array_hops, 0u);
    EXPECT_EQ(forwarded > 0, forwards);
  }
}

// A set's inserts repeated within a phase are dropped at the source and at every hop: shared
// keys inserted many times by every rank, each rank's own keys through insert / erase / insert
// sequences, then a phase that erases some shared keys and one that inserts them all again (the
// filters start every phase afresh).
template <class Route>
void check_set_filter(cairn::world& w, Route route, bool forwards) {
  const cairn::containers::container_options opts{.buffer_bytes = 1 << 20};
  cairn::containers::set<std::uint64_t, cairn::containers::default_hash<std::uint64_t>, Route> s(
      w, opts, {}, route);
  std::set<std::uint64_t> ref;
  for (int r = 0; r < w.size(); ++r) {
    auto g = rank_gen(71, r);
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t shared = g() % 200;
      if (r == w.rank()) s.async_insert(shared);
      ref.insert(shared);
      const std::uint64_t own = 100000 + 1000 * static_cast<std::uint64_t>(r) + g() % 50;
      if (g() % 3 == 0) {
        if (r == w.rank()) s.async_erase(own);
        ref.erase(own);
      } else {
        if (r == w.rank()) s.async_insert(own);
        ref.insert(own);
      }
    }
  }
  w.quiesce();
  const auto first = s.gather(0);
  if (w.rank() == 0) {
    EXPECT_TRUE(first == ref) << first.size() << " keys, want " << ref.size();
  }
  w.barrier();  // a non-root leaves gather early: its erases must not reach the root before it
  for (std::uint64_t k = 0; k < 200; k += 3)
    if (static_cast<int>(k / 3) % w.size() == w.rank()) s.async_erase(k);
  w.quiesce();
  for (std::uint64_t k = 0; k < 200; k += 3) ref.erase(k);
  EXPECT_EQ(s.size(), ref.size());
  // Every rank inserts them all again, but a key's eraser not: the others saw it in phase 1.
  for (std::uint64_t k = 0; k < 200; ++k)
    if (k % 3 != 0 || w.size() == 1 || static_cast<int>(k / 3) % w.size() != w.rank())
      s.async_insert(k);
  w.quiesce();
  for (std::uint64_t k = 0; k < 200; ++k) ref.insert(k);
  const auto last = s.gather(0);
  if (w.rank() == 0) {
    EXPECT_TRUE(last == ref) << last.size() << " keys, want " << ref.size();
  }
  EXPECT_GT(total_of(w, s.stats().combined_source), 0u);
  const std::uint64_t hops = total_of(w, s.stats().combined_hops);
  if (forwards) {
    EXPECT_GT(hops, 0u);
  } else {
    EXPECT_EQ(hops, 0u);
  }
}

// A disjoint set's repeated unions are dropped at the source and at every hop: every rank
// unions the same shared pairs (and pairs of its own), so a rank on a forwarding path sees
// steps it sent itself pass through it. The components are the sequential union-find's.
template <class Route>
void check_union_filter(cairn::world& w, Route route, bool forwards, bool combine) {
  const cairn::containers::container_options opts{.buffer_bytes = 1 << 20, .combine_hops = combine};
  cairn::containers::disjoint_set<std::uint64_t, cairn::containers::default_hash<std::uint64_t>,
                                  Route>
      ds(w, opts, {}, route);
  reference_sets<std::uint64_t> ref;
  for (int r = 0; r < w.size(); ++r) {
    auto shared = rank_gen(91, 0);  // the same pairs on every rank
    auto own = rank_gen(92, r);
    for (int i = 0; i < 1500; ++i) {
      const std::uint64_t a = shared() % 3000, b = shared() % 3000;
      const std::uint64_t c = own() % 3000, d = own() % 3000;
      if (r == w.rank()) {
        ds.async_union(a, b);
        ds.async_union(c, d);
      }
      ref.unite(a, b);
      ref.unite(c, d);
    }
  }
  ds.compress();
  for (const auto& [x, root] : ds.local())
    EXPECT_EQ(root, ref.find(x)) << "rank " << w.rank() << " key " << x;
  EXPECT_EQ(ds.size(), ref.parent.size());
  std::uint64_t sets = 0;
  for (const auto& [x, p] : ref.parent) sets += ref.find(x) == x ? 1 : 0;
  EXPECT_EQ(ds.num_sets(), sets);
  if (w.size() > 1) {
    EXPECT_GT(total_of(w, ds.stats().combined_source), 0u);
  }
  const std::uint64_t hops = total_of(w, ds.stats().combined_hops);
  if (forwards && combine) {
    EXPECT_GT(hops, 0u);
  } else {
    EXPECT_EQ(hops, 0u);
  }
}

TEST(DisjointSet, RepeatedUnionsAreDroppedAtTheSourceAndOnEveryHop) {
  run([](cairn::world& w) {
    check_union_filter(w, cairn::route::hypercube{}, w.size() >= 3, true);
    check_union_filter(w, cairn::route::hypercube{}, w.size() >= 3, false);  // turned off
    check_union_filter(w, cairn::route::direct{}, false, true);
  });
}

TEST(Set, RepeatedInsertsAreDroppedAtTheSourceAndOnEveryHop) {
  run([](cairn::world& w) {
    check_set_filter(w, cairn::route::hypercube{}, w.size() >= 3);
    check_set_filter(w, cairn::route::direct{}, false);
  });
}

TEST(Containers, CountsAndReductionsCombineOnEveryHop) {
  run([](cairn::world& w) {
    // The hypercube forwards from 3 ranks on (1 -> 2 goes through 0).
    check_hop_combining(w, cairn::route::hypercube{}, w.size() >= 3);
    check_hop_combining(w, cairn::route::hypercube{}, w.size() >= 3, false);  // turned off
    check_hop_combining(w, cairn::route::direct{}, false);
  });
}

}  // namespace

namespace {

// Reductions of many keys (evicting all the time), then of a few (merging), mixed with an
// array's order-sensitive operations: the results match the reference exactly.
TEST(Containers, ManyKeysThenFewMatchTheReference) {
  run([](cairn::world& w) {
    const std::uint64_t n = 50000;
    cairn::containers::map<std::uint64_t, std::uint64_t> m(w);
    cairn::containers::counting_set<std::uint64_t> cs(w);
    cairn::containers::array<std::int64_t> a(w, n, 0);
    const auto add = [](std::uint64_t x, std::uint64_t y) { return x + y; };
    const auto iadd = [](std::int64_t x, std::int64_t y) { return x + y; };
    std::map<std::uint64_t, std::uint64_t> sums;
    std::vector<std::int64_t> ref(n, 0);
    for (int r = 0; r < w.size(); ++r) {
      auto g = rank_gen(91, r);
      const bool mine = r == w.rank();
      for (int i = 0; i < 30000; ++i) {
        // First many keys (few merges), then a few keys (many merges).
        const std::uint64_t k = i < 20000 ? g() % n : g() % 40;
        const std::uint64_t v = g() % 5 + 1;
        sums[k] += v;
        if (mine) {
          m.async_reduce(k, v, add);
          cs.async_insert(k, v);
        }
        // The array's indices of this rank only (one writer): sets between the reductions.
        const std::uint64_t j =
            (k / static_cast<std::uint64_t>(w.size())) * static_cast<std::uint64_t>(w.size()) +
            static_cast<std::uint64_t>(r);
        if (j >= n) continue;
        if (g() % 16 == 0) {
          if (mine) a.async_set(j, static_cast<std::int64_t>(v));
          ref[j] = static_cast<std::int64_t>(v);
        } else {
          if (mine) a.async_reduce(j, static_cast<std::int64_t>(v), iadd);
          ref[j] += static_cast<std::int64_t>(v);
        }
      }
    }
    w.quiesce();
    std::uint64_t wrong = 0;
    for (const auto& [k, s] : sums)
      if (m.owner(k) == w.rank()) {
        const auto it = m.local().find(k);
        const auto c = cs.local().find(k);
        wrong +=
            (it == m.local().end() || it->second != s) + (c == cs.local().end() || c->second != s);
      }
    EXPECT_EQ(wrong, 0u) << "rank " << w.rank();
    const auto all = a.gather(0);
    if (w.rank() == 0) {
      EXPECT_EQ(all, ref);
    }
  });
}

}  // namespace

namespace {

// A rank that never reduces still combines the reductions passing through it: it takes up
// the merge of the first one.
template <class Route>
void check_forwarder_combines(cairn::world& w, Route route, bool forwards) {
  const cairn::containers::container_options opts{.buffer_bytes = 1 << 20};
  cairn::containers::map<std::uint64_t, std::int64_t,
                         cairn::containers::default_hash<std::uint64_t>, Route>
      m(w, opts, {}, route);
  cairn::containers::array<std::int64_t, Route> a(w, 61, 0, opts, route);
  auto high = [](std::int64_t x, std::int64_t y) { return std::max(x, y); };
  std::map<std::uint64_t, std::int64_t> highs;
  std::vector<std::int64_t> sums(61, 0);
  for (int r = 1; r < w.size(); ++r) {  // rank 0 only forwards
    auto g = rank_gen(81, r);
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t k = g() % 61;
      const auto v = static_cast<std::int64_t>(g() % 1000);
      auto [it, fresh] = highs.try_emplace(k, v);
      if (!fresh) it->second = std::max(it->second, v);
      sums[k] += v;
      if (r == w.rank()) {
        m.async_reduce(k, v, high);
        a.async_reduce(k, v, [](std::int64_t x, std::int64_t y) { return x + y; });
      }
    }
  }
  w.quiesce();
  const auto all = m.gather(0);
  const auto all_sums = a.gather(0);
  if (w.rank() == 0) {
    EXPECT_TRUE((std::map<std::uint64_t, std::int64_t>(all.begin(), all.end()) == highs));
    EXPECT_EQ(all_sums, sums);
  }
  // Rank 0's hops: each reduction passing through it joined its cache.
  const std::uint64_t hops = w.rank() == 0 ? m.stats().combined_hops : 0;
  const std::uint64_t array_hops = w.rank() == 0 ? a.stats().combined_hops : 0;
  const std::uint64_t passed = w.rank() == 0 ? m.stats().forwarded + a.stats().forwarded : 0;
  if (w.rank() == 0 && forwards) {
    EXPECT_GT(hops, 0u) << "forwarded " << passed;
    EXPECT_GT(array_hops, 0u) << "forwarded " << passed;
  }
}

TEST(Containers, ARankThatOnlyForwardsCombinesToo) {
  run([](cairn::world& w) {
    // The hypercube sends 1 -> 2 through rank 0 from 3 ranks on.
    check_forwarder_combines(w, cairn::route::hypercube{}, w.size() >= 3);
  });
}

}  // namespace

namespace {

// Repeated unions (either way round) are dropped at the source, self loops only insert, and a
// clear() forgets what was sent: the components still match the reference.
TEST(DisjointSet, RepeatedUnionsAreDroppedAtTheSource) {
  run([](cairn::world& w) {
    cairn::containers::disjoint_set<std::uint32_t> ds(w);
    for (int round = 0; round < 2; ++round) {
      reference_sets<std::uint32_t> ref;
      for (int r = 0; r < w.size(); ++r) {
        auto g = rank_gen(101, r);
        std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
        for (int i = 0; i < 40; ++i)
          pairs.emplace_back(static_cast<std::uint32_t>(g() % 500),
                             static_cast<std::uint32_t>(g() % 500));
        for (int rep = 0; rep < 10; ++rep)
          for (const auto& [a, b] : pairs) {
            const bool flip = (rep + a) % 2 != 0;
            if (r == w.rank()) ds.async_union(flip ? b : a, flip ? a : b);
            ref.unite(a, b);
          }
      }
      const std::uint64_t dropped = ds.stats().combined_source;
      ds.compress();
      std::uint64_t wrong = 0;
      for (const auto& [x, root] : ds.local()) wrong += root == ref.find(x) ? 0 : 1;
      EXPECT_EQ(wrong, 0u) << "rank " << w.rank() << ", round " << round;
      EXPECT_EQ(ds.size(), ref.parent.size());
      // 40 pairs, each sent once per round at most: 9 of their 10 repeats dropped (a pair
      // whose slot another pair shares may be sent again).
      EXPECT_GE(dropped, (round + 1) * 9u * 30u) << "rank " << w.rank();
      ds.clear();
    }
  });
}

}  // namespace
