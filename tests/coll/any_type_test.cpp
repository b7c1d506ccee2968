// The value collectives of any type (serialized: strings, nested containers, tuples, optionals,
// user types with serialize) and lists (std::vector, std::string), and the v-forms (gatherv,
// allgatherv, scatterv, alltoallv) whose members contribute different numbers of items;
// blocking and non-blocking (two steps that keep their place in issue order), on both engines,
// on the world and on groups, against sequential references on seeded random values.
#include <atomic>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::on_groups;

namespace {

std::mt19937_64 gen_for(std::uint64_t seed, int who, std::uint64_t k = 0) {
  return std::mt19937_64(seed * 0x9E3779B97F4A7C15ull +
                         static_cast<std::uint64_t>(who) * 0xBF58476D1CE4E5B9ull + k * 7919 + 1);
}
std::size_t below(std::mt19937_64& g, std::size_t n) { return n ? g() % n : 0; }

std::string rand_string(std::mt19937_64& g) {
  std::string s(below(g, 24), ' ');
  for (char& ch : s) ch = static_cast<char>('a' + below(g, 26));
  return s;
}

using nested = std::map<std::string, std::vector<int>>;
nested rand_nested(std::mt19937_64& g) {
  nested m;
  const std::size_t keys = below(g, 5);
  for (std::size_t k = 0; k < keys; ++k) {
    std::vector<int> v(below(g, 9));
    for (int& x : v) x = static_cast<int>(g() % 1000) - 500;
    m[rand_string(g)] = std::move(v);
  }
  return m;
}

using record = std::tuple<int, std::string, std::optional<double>>;
record rand_record(std::mt19937_64& g) {
  std::optional<double> o;
  if (g() % 2) o = static_cast<double>(g() % 1000) / 4.0;
  return {static_cast<int>(g() % 100000), rand_string(g), o};
}

// A user type with a serialize member.
struct particle {
  std::string name;
  std::vector<double> pos;
  std::optional<int> tag;
  nested attrs;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, pos, tag, attrs);
  }
  friend bool operator==(const particle&, const particle&) = default;
};
particle rand_particle(std::mt19937_64& g) {
  particle p;
  p.name = rand_string(g);
  p.pos.resize(below(g, 4));
  for (double& d : p.pos) d = static_cast<double>(g() % 4096) / 16.0;
  if (g() % 3 == 0) p.tag = static_cast<int>(g() % 77);
  if (g() % 2 == 0) p.attrs = rand_nested(g);
  return p;
}

// A trivially copyable type with a serialize member that counts its calls: the collectives
// move it as bytes, so the count stays 0.
std::atomic<int> serialize_calls{0};
struct counted {
  std::int64_t a;
  std::int32_t b;
  template <class Archive>
  void serialize(Archive& ar) {
    ++serialize_calls;
    ar(a, b);
  }
  friend bool operator==(const counted&, const counted&) = default;
};
static_assert(cairn::detail::transferable<counted> && !cairn::serializable<counted>);

// What world rank `who` contributes in test case (seed, k): a value of each kind.
template <class T>
T make(std::uint64_t seed, int who, std::uint64_t k = 0) {
  auto g = gen_for(seed, who, k);
  if constexpr (std::is_same_v<T, std::string>)
    return rand_string(g);
  else if constexpr (std::is_same_v<T, nested>)
    return rand_nested(g);
  else if constexpr (std::is_same_v<T, record>)
    return rand_record(g);
  else if constexpr (std::is_same_v<T, particle>)
    return rand_particle(g);
  else if constexpr (std::is_same_v<T, counted>)
    return counted{static_cast<std::int64_t>(g()), static_cast<std::int32_t>(g() % 1000)};
  else if constexpr (std::is_same_v<T, int>)
    return static_cast<int>(g() % 100000);
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    std::vector<std::string> v(below(g, 6));
    for (auto& s : v) s = rand_string(g);
    return v;
  }
}
// A list of 0..`top` items (some empty) of world rank `who`.
template <class E>
std::vector<E> make_list(std::uint64_t seed, int who, std::uint64_t k, std::size_t top) {
  auto g = gen_for(seed + 17, who, k);
  const std::size_t n = g() % 4 == 0 ? 0 : below(g, top + 1);
  std::vector<E> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(make<E>(seed, who, k * 1000003 + i));
  return v;
}

// Every value collective for values of type T on `c`, blocking and not.
template <class T, class C>
void check_values(C& c, const std::vector<int>& mem, std::uint64_t seed) {
  const int p = c.size(), me = c.rank();
  const auto P = static_cast<std::size_t>(p);
  const int wme = mem[static_cast<std::size_t>(me)];
  const T x = make<T>(seed, wme);
  std::vector<T> all;
  for (int r : mem) all.push_back(make<T>(seed, r));
  for (int root = 0; root < p; root += std::max(1, p / 2)) {
    const T want = make<T>(seed, mem[static_cast<std::size_t>(root)]);
    EXPECT_TRUE(c.bcast(x, root) == want);
    if constexpr (!cairn::detail::contiguous_data<T>) {  // (strings take the buffer form)
      T inout = me == root ? x : T{};
      c.bcast(inout, root);
      EXPECT_TRUE(inout == want);
    }
    EXPECT_TRUE(c.ibcast(x, root).wait() == want);
    EXPECT_TRUE(c.gather(x, root) == (me == root ? all : std::vector<T>{}));
    EXPECT_TRUE(c.igather(x, root).wait() == (me == root ? all : std::vector<T>{}));
    std::vector<T> per_rank;
    if (me == root)
      for (std::size_t i = 0; i < P; ++i) per_rank.push_back(make<T>(seed, wme, 100 + i));
    const T mine =
        make<T>(seed, mem[static_cast<std::size_t>(root)], 100 + static_cast<std::size_t>(me));
    EXPECT_TRUE(c.scatter(per_rank, root) == mine);
    EXPECT_TRUE(c.iscatter(per_rank, root).wait() == mine);
  }
  EXPECT_TRUE(c.allgather(x) == all);
  EXPECT_TRUE(c.iallgather(x).wait() == all);
  std::vector<T> per_dest, want;
  for (std::size_t d = 0; d < P; ++d) {
    per_dest.push_back(make<T>(seed, wme, 1000 + static_cast<std::size_t>(mem[d])));
    want.push_back(make<T>(seed, mem[d], 1000 + static_cast<std::size_t>(wme)));
  }
  EXPECT_TRUE(c.alltoall(per_dest) == want);
  EXPECT_TRUE(c.ialltoall(per_dest).wait() == want);
}

// The v-forms for items of type E (up to `top` per member and block).
template <class E, class C>
void check_vforms(C& c, const std::vector<int>& mem, std::uint64_t seed, std::size_t top) {
  const int p = c.size(), me = c.rank();
  const auto P = static_cast<std::size_t>(p);
  const int wme = mem[static_cast<std::size_t>(me)];
  const std::vector<E> mine = make_list<E>(seed, wme, 0, top);
  std::vector<E> concat;
  std::vector<std::vector<E>> lists;
  for (int r : mem) {
    lists.push_back(make_list<E>(seed, r, 0, top));
    concat.insert(concat.end(), lists.back().begin(), lists.back().end());
  }
  for (int root = 0; root < p; root += std::max(1, p / 2)) {
    EXPECT_TRUE(c.gatherv(mine, root) == (me == root ? concat : std::vector<E>{}));
    EXPECT_TRUE(c.igatherv(mine, root).wait() == (me == root ? concat : std::vector<E>{}));
    // The per-rank form: a list is one value per member.
    EXPECT_TRUE(c.gather(mine, root) == (me == root ? lists : std::vector<std::vector<E>>{}));
    std::vector<std::vector<E>> per_rank;
    if (me == root)
      for (std::size_t i = 0; i < P; ++i) per_rank.push_back(make_list<E>(seed, wme, 10 + i, top));
    const auto want = make_list<E>(seed, mem[static_cast<std::size_t>(root)],
                                   10 + static_cast<std::size_t>(me), top);
    EXPECT_TRUE(c.scatterv(per_rank, root) == want);
    EXPECT_TRUE(c.iscatterv(per_rank, root).wait() == want);
    // Broadcast of a list, sized by the root's.
    const auto root_list = make_list<E>(seed, mem[static_cast<std::size_t>(root)], 0, top);
    EXPECT_TRUE(c.bcast(mine, root) == root_list);
    EXPECT_TRUE(c.ibcast(mine, root).wait() == root_list);
  }
  EXPECT_TRUE(c.allgatherv(mine) == concat);
  EXPECT_TRUE(c.iallgatherv(mine).wait() == concat);
  EXPECT_TRUE(c.allgather(mine) == lists);
  std::vector<std::vector<E>> per_dest, want;
  for (std::size_t d = 0; d < P; ++d) {
    per_dest.push_back(make_list<E>(seed, wme, 5000 + static_cast<std::size_t>(mem[d]), top));
    want.push_back(make_list<E>(seed, mem[d], 5000 + static_cast<std::size_t>(wme), top));
  }
  EXPECT_TRUE(c.alltoallv(per_dest) == want);
  EXPECT_TRUE(c.ialltoallv(per_dest).wait() == want);
}

}  // namespace

TEST(AnyType, SingleValues) {
  cairn::test::run([](cairn::world& w) {
    on_groups(w, 7, [&](auto& c, const std::vector<int>& mem) {
      for (std::uint64_t seed : {1u, 2u}) {
        check_values<std::string>(c, mem, seed);
        check_values<nested>(c, mem, seed);
        check_values<record>(c, mem, seed);
        check_values<particle>(c, mem, seed);
        check_values<std::vector<std::string>>(c, mem, seed + 10);
      }
    });
  });
}

TEST(AnyType, VectorForms) {
  cairn::test::run([](cairn::world& w) {
    on_groups(w, 8, [&](auto& c, const std::vector<int>& mem) {
      for (std::size_t top : {0, 1, 5, 300}) {
        check_vforms<std::string>(c, mem, top + 1, top);
        check_vforms<particle>(c, mem, top + 2, top / 4);
        check_vforms<int>(c, mem, top + 3, top * 10);
        check_vforms<std::vector<std::string>>(c, mem, top + 4, top / 30);
      }
    });
  });
}

TEST(AnyType, TriviallyCopyableItemsAreNotSerialized) {
  cairn::test::run([](cairn::world& w) {
    on_groups(w, 9, [&](auto& c, const std::vector<int>& mem) {
      check_values<counted>(c, mem, 3);
      check_vforms<counted>(c, mem, 4, 50);
    });
    EXPECT_EQ(serialize_calls.load(), 0);
  });
}

// Non-blocking collectives of two steps interleaved with other collectives, waited for in
// another order: the second steps keep their place in issue order.
TEST(AnyType, NonBlockingKeepIssueOrder) {
  cairn::test::run([](cairn::world& w) {
    on_groups(w, 10, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank();
      const int wme = mem[static_cast<std::size_t>(me)];
      std::vector<std::string> concat;
      for (int r : mem) {
        auto l = make_list<std::string>(21, r, 0, 40);
        concat.insert(concat.end(), l.begin(), l.end());
      }
      const int root = p - 1;
      const auto root_map = make<nested>(22, mem[static_cast<std::size_t>(root)]);
      for (int round = 0; round < 3; ++round) {
        auto a = c.iallgatherv(make_list<std::string>(21, wme, 0, 40));
        auto b = c.ibcast(make<nested>(22, wme), root);
        const std::int64_t s = c.allreduce(std::int64_t{me}, cairn::plus{});
        auto d = c.igatherv(make_list<std::string>(21, wme, 0, 40), 0);
        const std::vector<std::string> e = c.allgatherv(make_list<std::string>(21, wme, 0, 40));
        if (round % 2) {
          EXPECT_TRUE(d.wait() == (me == 0 ? concat : std::vector<std::string>{}));
          EXPECT_TRUE(b.wait() == root_map);
          EXPECT_TRUE(a.wait() == concat);
        } else {
          b.handle().wait();  // the request underneath completes the value too
          EXPECT_TRUE(b.wait() == root_map);
          EXPECT_TRUE(a.wait() == concat);
          EXPECT_TRUE(d.wait() == (me == 0 ? concat : std::vector<std::string>{}));
        }
        EXPECT_EQ(s, static_cast<std::int64_t>(p) * (p - 1) / 2);
        EXPECT_TRUE(e == concat);
      }
    });
  });
}

TEST(AnyType, Errors) {
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const std::string P = std::to_string(p);
    std::vector<std::vector<std::string>> wrong(static_cast<std::size_t>(p + 1));
    std::string msg = message_of([&] { (void)w.alltoallv(wrong); });
    EXPECT_TRUE(has_text(msg, "cairn::alltoall: rank " + std::to_string(me) + ": per_dest holds " +
                                  std::to_string(p + 1) + " values, the group has " + P +
                                  " members"))
        << msg;
    if (me == 0) {
      const std::vector<std::string> few(static_cast<std::size_t>(p + 3));
      msg = message_of([&] { (void)w.scatter(few, 0); });
      EXPECT_TRUE(has_text(msg, "cairn::scatter: rank 0: per_rank holds " + std::to_string(p + 3) +
                                    " values, the group has " + P + " members"))
          << msg;
      msg = message_of([&] { (void)w.iscatterv(wrong, 0); });
      EXPECT_TRUE(has_text(msg, "cairn::iscatter: rank 0: per_rank holds")) << msg;
    }
    msg = message_of([&] { (void)w.gatherv(std::vector<std::string>(2), p); });
    EXPECT_TRUE(has_text(msg, "cairn::gatherv: rank " + std::to_string(me) + ": root " + P +
                                  " is outside the group of " + P + " ranks"))
        << msg;
    // Bytes that do not hold the type: a deserialization error names the call and the rank.
    const std::vector<std::byte> junk(3, std::byte{0xff});
    msg = message_of([&] { (void)cairn::deserialize<std::string>(junk, "gather", me); });
    EXPECT_TRUE(has_text(msg, "cairn::gather: rank " + std::to_string(me))) << msg;
    w.barrier();
  });
}
