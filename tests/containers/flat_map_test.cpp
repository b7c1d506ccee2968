// cairn::containers::flat_map against std::unordered_map: random inserts, assigns, erases and
// lookups (some by a precomputed slot hash) with fixed seeds, on keys that collide in the low bits,
// string keys and a hash that sends every key to one slot; erase_if, copies and moves. And
// flat_set against std::unordered_set the same way.

#include "cairn/containers/flat_map.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace {

// Items in key order, to compare two maps whatever their iteration order.
template <class M>
auto sorted(const M& m) {
  std::map<typename M::key_type, typename M::mapped_type> out;
  for (const auto& [k, v] : m) EXPECT_TRUE(out.emplace(k, v).second) << "key seen twice";
  return out;
}

template <class K, class Hash, class MakeKey>
void check_against_reference(std::uint64_t seed, std::uint64_t keys, int steps, MakeKey make) {
  cairn::containers::flat_map<K, std::uint64_t, Hash> m;
  std::unordered_map<K, std::uint64_t> ref;
  std::mt19937_64 g(seed);
  for (int i = 0; i < steps; ++i) {
    const K k = make(g() % keys);
    const std::uint64_t v = g();
    switch (g() % 6) {
      case 0: {
        const auto [it, fresh] = m.try_emplace(k, v);
        const bool want = ref.try_emplace(k, v).second;
        ASSERT_EQ(fresh, want) << "step " << i;
        ASSERT_EQ(it->second, ref.at(k)) << "step " << i;
        break;
      }
      case 1:
        m.insert_or_assign(k, v);
        ref.insert_or_assign(k, v);
        break;
      case 2:
        if (i % 2 == 0) {
          m[k] += v;
        } else {  // as a container's batch inserts: hash, prefetch, then insert by the hash
          const std::uint64_t h = m.slot_hash(k);
          m.prefetch(h);
          m.try_emplace_hashed(h, k).first->second += v;
        }
        ref[k] += v;
        break;
      case 3: ASSERT_EQ(m.erase(k), ref.erase(k)) << "step " << i; break;
      default: {
        const auto it = m.find(k);
        const auto r = ref.find(k);
        ASSERT_EQ(it == m.end(), r == ref.end()) << "step " << i;
        if (r != ref.end()) {
          ASSERT_EQ(it->second, r->second) << "step " << i;
        }
        ASSERT_EQ(m.contains(k), r != ref.end());
      }
    }
    ASSERT_EQ(m.size(), ref.size()) << "step " << i;
  }
  EXPECT_EQ(sorted(m), sorted(ref));
  // Removing by predicate, across the wrap of the slots too.
  const auto odd = [](const auto& item) { return item.second % 2 == 1; };
  const auto removed = erase_if(m, odd);
  EXPECT_EQ(removed, std::erase_if(ref, odd));
  EXPECT_EQ(sorted(m), sorted(ref));
  for (const auto& [k, v] : ref) EXPECT_TRUE(m.contains(k));
  // Copies and moves keep every item; the moved-from map is empty and usable.
  auto copy = m;
  EXPECT_EQ(sorted(copy), sorted(ref));
  auto moved = std::move(copy);
  EXPECT_EQ(sorted(moved), sorted(ref));
  EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from map is left empty, as documented
  copy[make(0)] = 1;
  EXPECT_EQ(copy.size(), 1u);
  m.clear();
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.begin(), m.end());
  EXPECT_FALSE(m.contains(make(0)));
}

// Key x as a string: short keys (in the string) and long ones (on the heap).
std::string string_key(std::uint64_t x) {
  return x % 3 == 0 ? std::string(40, 'k') + std::to_string(x) : std::to_string(x);
}

// Every key in one home slot: lookups and erases walk one long run of items.
struct one_slot {
  std::size_t operator()(std::uint64_t) const noexcept { return 7; }
};

TEST(FlatMap, MatchesUnorderedMapOnIntegerKeys) {
  check_against_reference<std::uint64_t, std::hash<std::uint64_t>>(
      1, 5000, 200000, [](std::uint64_t x) { return x; });
}

TEST(FlatMap, MatchesUnorderedMapOnKeysThatShareTheirLowBits) {
  check_against_reference<std::uint64_t, std::hash<std::uint64_t>>(
      2, 3000, 100000, [](std::uint64_t x) { return x << 20; });
}

TEST(FlatMap, MatchesUnorderedMapWhenEveryKeyHashesAlike) {
  check_against_reference<std::uint64_t, one_slot>(3, 300, 20000,
                                                   [](std::uint64_t x) { return x; });
}

TEST(FlatMap, MatchesUnorderedMapOnStringKeys) {
  check_against_reference<std::string, std::hash<std::string>>(4, 4000, 100000, string_key);
}

TEST(FlatMap, AnInsertMayTakeItsValueFromAnItemOfTheSameMap) {
  cairn::containers::flat_map<std::uint64_t, std::string> m;
  m[0] = std::string(100, 'x');
  // Each insert copies the value of an item; some of them grow the slots while they do.
  for (std::uint64_t k = 1; k < 1000; ++k) m.try_emplace(k, m.find(k - 1)->second);
  for (std::uint64_t k = 0; k < 1000; ++k) ASSERT_EQ(m.find(k)->second, std::string(100, 'x'));
}

// A value whose construction from a negative number throws.
struct picky {
  int v = 0;
  picky() = default;
  explicit picky(int x) : v(x) {
    if (x < 0) throw std::runtime_error("picky");
  }
};

TEST(FlatMap, AnInsertThatThrowsKeepsEveryItem) {
  cairn::containers::flat_map<std::uint64_t, picky> m;
  for (std::uint64_t k = 0; k < 2000; ++k) {
    // Tried at every size, so also when the insert would grow the slots.
    EXPECT_THROW(m.try_emplace(k + 100000, -1), std::runtime_error);
    ASSERT_EQ(m.size(), k);
    m.try_emplace(k, static_cast<int>(k));
  }
  for (std::uint64_t k = 0; k < 2000; ++k) {
    ASSERT_TRUE(m.contains(k)) << k;
    ASSERT_EQ(m.find(k)->second.v, static_cast<int>(k));
    ASSERT_FALSE(m.contains(k + 100000));
  }
}

TEST(FlatMap, ReserveKeepsTheSlotsWhileItemsFit) {
  cairn::containers::flat_map<std::uint32_t, std::uint32_t> m;
  m.reserve(1000);
  m[1] = 2;
  const auto* first = &*m.find(1);
  for (std::uint32_t k = 2; k < 1000; ++k) m[k] = k;
  EXPECT_EQ(&*m.find(1), first) << "the slots grew before 1000 items";
}

template <class K, class Hash, class MakeKey>
void check_set_against_reference(std::uint64_t seed, std::uint64_t keys, int steps, MakeKey make) {
  cairn::containers::flat_set<K, Hash> s;
  std::unordered_set<K> ref;
  const auto sorted_keys = [](const auto& c) {
    std::set<K> out;
    for (const K& k : c) EXPECT_TRUE(out.insert(k).second) << "key seen twice";
    return out;
  };
  std::mt19937_64 g(seed);
  for (int i = 0; i < steps; ++i) {
    const K k = make(g() % keys);
    switch (g() % 4) {
      case 0: {
        const auto [it, fresh] = s.insert(k);
        ASSERT_EQ(fresh, ref.insert(k).second) << "step " << i;
        ASSERT_EQ(*it, k) << "step " << i;
        break;
      }
      case 1: {  // as the set's batch inserts: by a precomputed slot hash
        const std::uint64_t h = s.slot_hash(k);
        s.prefetch(h);
        ASSERT_EQ(s.try_emplace_hashed(h, k).second, ref.insert(k).second) << "step " << i;
        break;
      }
      case 2: ASSERT_EQ(s.erase(k), ref.erase(k)) << "step " << i; break;
      default: ASSERT_EQ(s.contains(k), ref.contains(k)) << "step " << i;
    }
    ASSERT_EQ(s.size(), ref.size()) << "step " << i;
  }
  EXPECT_EQ(sorted_keys(s), sorted_keys(ref));
  const auto even = [](const K& k) { return std::hash<K>{}(k) % 2 == 0; };
  EXPECT_EQ(erase_if(s, even), std::erase_if(ref, even));
  EXPECT_EQ(sorted_keys(s), sorted_keys(ref));
  auto copy = s;
  auto moved = std::move(copy);
  EXPECT_EQ(sorted_keys(moved), sorted_keys(ref));
  EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from set is left empty, as documented
}

TEST(FlatSet, MatchesUnorderedSetOnIntegerKeys) {
  check_set_against_reference<std::uint64_t, std::hash<std::uint64_t>>(
      5, 5000, 200000, [](std::uint64_t x) { return x; });
}

TEST(FlatSet, MatchesUnorderedSetWhenEveryKeyHashesAlike) {
  check_set_against_reference<std::uint64_t, one_slot>(6, 300, 20000,
                                                       [](std::uint64_t x) { return x; });
}

TEST(FlatSet, MatchesUnorderedSetOnStringKeys) {
  check_set_against_reference<std::string, std::hash<std::string>>(7, 4000, 100000, string_key);
}

// A key that counts its copies (a map's keys are const and copied when items move; a set's
// are moved, so moving items cannot throw where the key's move does not).
struct counted_key {
  static inline int copies = 0;
  std::uint64_t v = 0;
  explicit counted_key(std::uint64_t x) : v(x) {}
  counted_key(const counted_key& o) : v(o.v) { ++copies; }
  counted_key(counted_key&& o) noexcept : v(o.v) {}
  counted_key& operator=(const counted_key&) = delete;
  friend bool operator==(const counted_key& a, const counted_key& b) { return a.v == b.v; }
};
struct counted_hash {
  std::size_t operator()(const counted_key& k) const noexcept { return k.v; }
};

TEST(FlatSet, MovesItsKeysWhenItemsMove) {
  cairn::containers::flat_set<counted_key, counted_hash> s;
  counted_key::copies = 0;
  for (std::uint64_t k = 0; k < 5000; ++k) s.insert(counted_key(k));  // grows ten times
  for (std::uint64_t k = 0; k < 5000; k += 3) ASSERT_EQ(s.erase(counted_key(k)), 1u);  // shifts
  EXPECT_EQ(counted_key::copies, 0);
  for (std::uint64_t k = 0; k < 5000; ++k) ASSERT_EQ(s.contains(counted_key(k)), k % 3 != 0);
}

}  // namespace
