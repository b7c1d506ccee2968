// The value forms of the collectives for trivially copyable values (allreduce, reduce, scan,
// exscan, bcast, gather, allgather, scatter, alltoall; blocking and non-blocking; element-wise
// forms of const ranges), the commutativity of the standard function objects, and the errors,
// on both engines, on the world and on groups, against sequential references on seeded data.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::mat2;
using cairn::test::message_of;
using cairn::test::mul;
using cairn::test::on_groups;

namespace {

// A trivially copyable value with several fields.
struct point {
  std::int32_t x;
  double y;
  char tag;
  friend bool operator==(const point&, const point&) = default;
};

// Deterministic 64-bit hash of (seed, who, k).
std::uint64_t mix(std::uint64_t seed, std::uint64_t who, std::uint64_t k = 0) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + who * 0xBF58476D1CE4E5B9ull + k + 1;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// Values of world rank `who` (small: sums and products over 16 ranks are exact).
std::int64_t ival(std::uint64_t seed, int who, std::uint64_t k = 0) {
  return static_cast<std::int64_t>(mix(seed, static_cast<std::uint64_t>(who), k) % 2001) - 1000;
}
point pval(std::uint64_t seed, int who, std::uint64_t k = 0) {
  const std::uint64_t h = mix(seed, static_cast<std::uint64_t>(who), k);
  return {static_cast<std::int32_t>(h % 100000), static_cast<double>(h % 977) / 8.0,
          static_cast<char>('a' + h % 26)};
}
mat2 mval(std::uint64_t seed, int who, std::uint64_t k = 0) {
  const std::uint64_t h = mix(seed, static_cast<std::uint64_t>(who), k);
  const std::uint64_t g = mix(seed + 7, static_cast<std::uint64_t>(who), k);
  return {static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(h >> 32),
          static_cast<std::uint32_t>(g), static_cast<std::uint32_t>(g >> 32)};
}

// Overloads: value forms for values and const ranges; the buffer forms keep non-const ranges.
template <class C>
concept in_place_allreduce_is_void = requires(C& c, std::vector<double>& v) {
  { c.allreduce(v, cairn::plus{}) } -> std::same_as<void>;
};
template <class C>
concept const_range_allreduce_is_vector = requires(C& c, const std::vector<double>& v) {
  { c.allreduce(v, cairn::plus{}) } -> std::same_as<std::vector<double>>;
};
template <class C>
concept value_forms = requires(C& c, int& n, const int& k, double x, const std::vector<int>& vi) {
  { c.allreduce(x, cairn::plus{}) } -> std::same_as<double>;
  { c.allreduce(x) } -> std::same_as<double>;
  { c.iallreduce(x, std::plus<>{}) } -> std::same_as<cairn::value_request<double>>;
  { c.reduce(x, 0, cairn::max{}) } -> std::same_as<double>;
  { c.scan(x) } -> std::same_as<double>;
  { c.exscan(x) } -> std::same_as<double>;
  { c.bcast(n, 0) } -> std::same_as<void>;
  { c.bcast(k, 0) } -> std::same_as<int>;
  { c.bcast(3, 0) } -> std::same_as<int>;
  { c.ibcast(k, 0) } -> std::same_as<cairn::value_request<int>>;
  { c.gather(x, 0) } -> std::same_as<std::vector<double>>;
  { c.allgather(x) } -> std::same_as<std::vector<double>>;
  { c.scatter(vi, 0) } -> std::same_as<int>;
  { c.alltoall(vi) } -> std::same_as<std::vector<int>>;
  { c.reduce(vi, 0, cairn::plus{}) } -> std::same_as<std::vector<int>>;
  { c.scan(vi) } -> std::same_as<std::vector<int>>;
};
static_assert(in_place_allreduce_is_void<cairn::world> && in_place_allreduce_is_void<cairn::group>);
static_assert(const_range_allreduce_is_vector<cairn::world> &&
              const_range_allreduce_is_vector<cairn::group>);
static_assert(value_forms<cairn::world> && value_forms<cairn::group>);
// The input of a non-blocking scatter of trivially copyable values is read where it is.
template <class C>
concept iscatter_takes_temporaries = requires(C& c) {
  c.iscatter(std::vector<int>(4), 0);
};
static_assert(!iscatter_takes_temporaries<cairn::world>);

// Commutativity of operations.
struct subtract {
  int operator()(int a, int b) const { return a - b; }
};
static_assert(cairn::is_commutative_v<cairn::plus> && cairn::is_commutative_v<cairn::max>);
static_assert(cairn::is_commutative_v<std::plus<>> && cairn::is_commutative_v<std::plus<int>>);
static_assert(cairn::is_commutative_v<std::multiplies<>> &&
              cairn::is_commutative_v<std::multiplies<double>>);
static_assert(cairn::is_commutative_v<std::bit_and<>> && cairn::is_commutative_v<std::bit_or<>> &&
              cairn::is_commutative_v<std::bit_xor<unsigned>>);
static_assert(cairn::is_commutative_v<std::logical_and<>> &&
              cairn::is_commutative_v<std::logical_or<bool>>);
static_assert(cairn::is_commutative_v<decltype(std::ranges::min)> &&
              cairn::is_commutative_v<decltype(std::ranges::max)>);
static_assert(!cairn::is_commutative_v<std::minus<>> && !cairn::is_commutative_v<subtract>);
static_assert(!cairn::is_commutative_v<cairn::user_op<subtract>>);
static_assert(cairn::detail::op_commutative(std::plus<>{}) &&
              !cairn::detail::op_commutative(subtract{}));

}  // namespace

TEST(Values, RunTimeCommutativity) {
  EXPECT_TRUE(cairn::detail::op_commutative(cairn::op(subtract{}, true)));
  EXPECT_FALSE(cairn::detail::op_commutative(cairn::op(subtract{}, false)));
  EXPECT_TRUE(cairn::detail::bind_op<int>(std::multiplies<>{}).commutative);
  EXPECT_FALSE(cairn::detail::bind_op<int>(std::minus<>{}).commutative);
}

TEST(Values, Reductions) {
  cairn::test::run([](cairn::world& w) {
    on_groups(w, 3, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank();
      for (std::uint64_t seed : {1u, 2u, 3u}) {
        const std::int64_t x = ival(seed, mem[static_cast<std::size_t>(me)]);
        std::int64_t sum = 0, mx = INT64_MIN, prefix = 0, exprefix = 0;
        std::uint64_t xr = 0;
        bool any = false;
        mat2 prod{1, 0, 0, 1}, mine = mval(seed, mem[static_cast<std::size_t>(me)]);
        mat2 prod_prefix{1, 0, 0, 1};
        for (int r = 0; r < p; ++r) {
          const std::int64_t v = ival(seed, mem[static_cast<std::size_t>(r)]);
          sum += v;
          mx = std::max(mx, v);
          xr ^= static_cast<std::uint64_t>(v);
          any = any || v > 500;
          prod = mul(prod, mval(seed, mem[static_cast<std::size_t>(r)]));
          if (r < me) exprefix += v;
          if (r <= me) {
            prefix += v;
            prod_prefix = mul(prod_prefix, mval(seed, mem[static_cast<std::size_t>(r)]));
          }
        }
        EXPECT_EQ(c.allreduce(x, cairn::plus{}), sum);
        EXPECT_EQ(c.allreduce(x), sum);
        EXPECT_EQ(c.allreduce(x, std::plus<>{}), sum);
        EXPECT_EQ(c.allreduce(x, cairn::max{}), mx);
        EXPECT_EQ(c.allreduce(x, std::ranges::max), mx);
        EXPECT_EQ(c.allreduce(static_cast<std::uint64_t>(x), std::bit_xor<>{}), xr);
        EXPECT_EQ(c.allreduce(x > 500, std::logical_or<>{}), any);
        EXPECT_TRUE(c.allreduce(mine, cairn::op(mul, false)) == prod);
        for (int root = 0; root < p; root += std::max(1, p / 3)) {
          const std::int64_t got = c.reduce(x, root, std::plus<>{});
          if (me == root) {
            EXPECT_EQ(got, sum);
          }
          const mat2 m = c.reduce(mine, root, cairn::op(mul, false));
          if (me == root) {
            EXPECT_TRUE(m == prod);
          }
        }
        EXPECT_EQ(c.scan(x), prefix);
        EXPECT_EQ(c.exscan(x), exprefix);  // 0 on member 0
        EXPECT_TRUE(c.scan(mine, cairn::op(mul, false)) == prod_prefix);
        // Non-blocking, several in flight, waited for in reverse.
        auto r1 = c.iallreduce(x, std::plus<>{});
        auto r2 = c.ireduce(x, p - 1, cairn::max{});
        auto r3 = c.iscan(x);
        auto r4 = c.iexscan(x);
        auto r5 = c.iallreduce(mine, cairn::op(mul, false));
        EXPECT_TRUE(r5.wait() == prod);
        EXPECT_EQ(r4.wait(), exprefix);
        EXPECT_EQ(r3.wait(), prefix);
        const std::int64_t m2 = r2.wait();
        if (me == p - 1) {
          EXPECT_EQ(m2, mx);
        }
        EXPECT_EQ(r1.wait(), sum);
      }
    });
  });
}

TEST(Values, RangeReductions) {
  cairn::test::run([](cairn::world& w) {
    on_groups(w, 4, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank();
      for (std::size_t n : {0, 1, 7, 1000, 70000}) {
        auto data_of = [&](int r) {
          std::vector<std::int64_t> v(n);
          for (std::size_t i = 0; i < n; ++i) v[i] = ival(n, mem[static_cast<std::size_t>(r)], i);
          return v;
        };
        const std::vector<std::int64_t> mine = data_of(me);
        std::vector<std::int64_t> sum(n, 0), prefix(n, 0), exprefix(n, 0);
        for (int r = 0; r < p; ++r) {
          const auto v = data_of(r);
          for (std::size_t i = 0; i < n; ++i) {
            sum[i] += v[i];
            if (r <= me) prefix[i] += v[i];
            if (r < me) exprefix[i] += v[i];
          }
        }
        EXPECT_EQ(c.allreduce(mine, std::plus<>{}), sum);
        EXPECT_EQ(c.iallreduce(mine, cairn::plus{}).wait(), sum);
        const int root = static_cast<int>(n % static_cast<std::size_t>(p));
        const auto red = c.reduce(mine, root);
        EXPECT_EQ(red, me == root ? sum : std::vector<std::int64_t>{});
        EXPECT_EQ(c.ireduce(mine, root).wait(), me == root ? sum : std::vector<std::int64_t>{});
        EXPECT_EQ(c.scan(mine), prefix);
        EXPECT_EQ(c.exscan(mine), exprefix);
        // The buffer form still reduces a non-const range in place.
        std::vector<std::int64_t> inout = mine;
        c.allreduce(inout, cairn::plus{});
        EXPECT_EQ(inout, sum);
      }
    });
  });
}

TEST(Values, BcastGatherScatterAlltoall) {
  cairn::test::run([](cairn::world& w) {
    on_groups(w, 5, [&](auto& c, const std::vector<int>& mem) {
      const int p = c.size(), me = c.rank();
      const auto P = static_cast<std::size_t>(p);
      for (std::uint64_t seed : {11u, 12u}) {
        const int wme = mem[static_cast<std::size_t>(me)];
        const point x = pval(seed, wme);
        std::vector<point> all(P);
        for (std::size_t r = 0; r < P; ++r) all[r] = pval(seed, mem[r]);
        for (int root = 0; root < p; root += std::max(1, p / 2)) {
          const point want = pval(seed, mem[static_cast<std::size_t>(root)]);
          EXPECT_EQ(c.bcast(x, root), want);
          point inout = me == root ? x : point{};
          c.bcast(inout, root);
          EXPECT_EQ(inout, want);
          EXPECT_EQ(c.ibcast(x, root).wait(), want);
          point later = me == root ? x : point{};
          auto rq = c.ibcast(later, root);
          rq.wait();
          EXPECT_EQ(later, want);

          EXPECT_EQ(c.gather(x, root), me == root ? all : std::vector<point>{});
          EXPECT_EQ(c.igather(x, root).wait(), me == root ? all : std::vector<point>{});

          // per_rank[i] = value for member i, made from the root's world rank.
          std::vector<point> per_rank;
          if (me == root)
            for (std::size_t i = 0; i < P; ++i) per_rank.push_back(pval(seed, wme, 100 + i));
          const point mine =
              pval(seed, mem[static_cast<std::size_t>(root)], 100 + static_cast<std::size_t>(me));
          EXPECT_EQ(c.scatter(per_rank, root), mine);
          EXPECT_EQ(c.iscatter(per_rank, root).wait(), mine);
        }
        EXPECT_EQ(c.allgather(x), all);
        EXPECT_EQ(c.iallgather(x).wait(), all);
        std::vector<point> per_dest(P), want(P);
        for (std::size_t d = 0; d < P; ++d) {
          per_dest[d] = pval(seed, wme, 1000 + static_cast<std::size_t>(mem[d]));
          want[d] = pval(seed, mem[d], 1000 + static_cast<std::size_t>(wme));
        }
        EXPECT_EQ(c.alltoall(per_dest), want);
        EXPECT_EQ(c.ialltoall(per_dest).wait(), want);
      }
    });
  });
}

// std::plus<> is commutative: allreduce chooses the same algorithm as with cairn::plus (the
// plans of the persistent forms name it), and the ring accepts it.
TEST(Values, StandardOperationsChooseAsCairnOnes) {
  cairn::test::run([](cairn::world& w) {
    const int p = w.size();
    for (std::size_t n : {1, 100, 5000, 40000, 300000}) {
      std::vector<double> in(n, 1.0), out(n);
      auto a = w.allreduce_init(in, out, cairn::plus{});
      auto b = w.allreduce_init(in, out, std::plus<>{});
      auto c = w.allreduce_init(in, out, std::plus<double>{});
      EXPECT_EQ(a.plan().name, b.plan().name) << n;
      EXPECT_EQ(a.plan().name, c.plan().name) << n;
      std::vector<unsigned> uin(n, 1u), uout(n);
      auto d = w.allreduce_init(uin, uout, cairn::bit_xor{});
      auto e = w.allreduce_init(uin, uout, std::bit_xor<>{});
      EXPECT_EQ(d.plan().name, e.plan().name) << n;
      w.allreduce(in, out, std::plus<>{}, cairn::allreduce_algorithm::ring);
      EXPECT_EQ(out, std::vector<double>(n, static_cast<double>(p)));
    }
    // A non-commutative operation is still refused by the ring.
    std::vector<double> in(8, 1.0), out(8);
    EXPECT_TRUE(has_text(
        message_of([&] { w.allreduce(in, out, std::minus<>{}, cairn::allreduce_algorithm::ring); }),
        "needs a commutative operation"));
  });
}

TEST(Values, Errors) {
  cairn::test::run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    const std::string P = std::to_string(p);
    // alltoall: every member checks its own per_dest (so every member fails, nobody waits).
    std::vector<int> wrong(static_cast<std::size_t>(p + 1));
    std::string msg = message_of([&] { (void)w.alltoall(wrong); });
    EXPECT_TRUE(has_text(msg, "cairn::alltoall: rank " + std::to_string(me) + ": per_dest holds " +
                                  std::to_string(p + 1) + " values, the group has " + P +
                                  " members"))
        << msg;
    msg = message_of([&] { (void)w.ialltoall(wrong); });
    EXPECT_TRUE(has_text(msg, "cairn::ialltoall")) << msg;
    // scatter: the root checks per_rank (only the root calls).
    if (me == 0) {
      const std::vector<int> few(static_cast<std::size_t>(p + 2));
      msg = message_of([&] { (void)w.scatter(few, 0); });
      EXPECT_TRUE(has_text(msg, "cairn::scatter: rank 0: per_rank holds " + std::to_string(p + 2) +
                                    " values, the group has " + P + " members"))
          << msg;
    }
    // A root outside the group fails everywhere.
    msg = message_of([&] { (void)w.bcast(1.5, p); });
    EXPECT_TRUE(has_text(msg, "root " + P + " is outside the group")) << msg;
    msg = message_of([&] { (void)w.gather(1.5, -1); });
    EXPECT_TRUE(has_text(msg, "root -1 is outside the group")) << msg;
    w.barrier();
  });
}
