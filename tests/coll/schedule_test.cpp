// The planners on their own: every schedule is run by a sequential simulator (all ranks of a
// group in one loop, messages as FIFO queues per ordered pair) for many group sizes and roots,
// and compared with a sequential reference. Also the stage counts promised by the papers.
#include <cstring>
#include <deque>
#include <map>
#include <sstream>

#include "coll/planners.hpp"
#include "harness.hpp"

using namespace cairn::coll;

namespace {

// 2x2 matrices modulo 2^32: associative, not commutative.
struct mat2 {
  std::uint32_t a, b, c, d;
  friend bool operator==(const mat2&, const mat2&) = default;
};
mat2 mul(const mat2& x, const mat2& y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}

using combine_fn = void (*)(const void* from, void* to, std::size_t bytes, bool from_is_left);

void sum_i64(const void* from, void* to, std::size_t bytes, bool) {
  auto* t = static_cast<std::int64_t*>(to);
  const auto* f = static_cast<const std::int64_t*>(from);
  for (std::size_t i = 0; i < bytes / 8; ++i) t[i] += f[i];
}
void mul_mat(const void* from, void* to, std::size_t bytes, bool from_is_left) {
  auto* t = static_cast<mat2*>(to);
  const auto* f = static_cast<const mat2*>(from);
  for (std::size_t i = 0; i < bytes / sizeof(mat2); ++i) t[i] = from_is_left ? mul(f[i], t[i]) : mul(t[i], f[i]);
}

struct rank_buffers {
  std::vector<std::byte> in, out, temp;
  std::byte* at(const region& r) {
    auto& v = r.slot == slot::input ? in : r.slot == slot::output ? out : temp;
    return v.data() + r.offset;
  }
};

// Runs one schedule per rank to completion (eager sends). Fails the test on a deadlock, on a
// receive whose size differs from the matching send, or on a message left over.
void simulate(const std::vector<schedule>& plans, std::vector<rank_buffers>& bufs, combine_fn op) {
  const int p = static_cast<int>(plans.size());
  std::map<std::pair<int, int>, std::deque<std::vector<std::byte>>> wire;
  std::vector<std::size_t> round(static_cast<std::size_t>(p), 0);
  std::vector<bool> started(static_cast<std::size_t>(p), false);
  for (int r = 0; r < p; ++r) bufs[static_cast<std::size_t>(r)].temp.resize(plans[static_cast<std::size_t>(r)].temp_bytes);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const schedule& s = plans[static_cast<std::size_t>(r)];
      auto& b = bufs[static_cast<std::size_t>(r)];
      std::size_t& k = round[static_cast<std::size_t>(r)];
      while (k < s.rounds()) {
        const auto [first, last] = s.round(k);
        if (!started[static_cast<std::size_t>(r)]) {  // local steps, then sends
          for (std::size_t i = first; i < last; ++i) {
            const step& st = s.steps[i];
            if (st.kind == step_kind::copy && b.at(st.from) != b.at(st.to) && st.bytes)
              std::memmove(b.at(st.to), b.at(st.from), st.bytes);
            if (st.kind == step_kind::reduce) op(b.at(st.from), b.at(st.to), st.bytes, st.from_is_left);
          }
          for (std::size_t i = first; i < last; ++i) {
            const step& st = s.steps[i];
            if (st.kind == step_kind::send)
              wire[{r, st.peer}].emplace_back(b.at(st.from), b.at(st.from) + st.bytes);
          }
          started[static_cast<std::size_t>(r)] = true;
        }
        bool ready = true;  // every receive of the round has a message waiting (in order)
        std::map<int, std::size_t> need;
        for (std::size_t i = first; i < last; ++i)
          if (s.steps[i].kind == step_kind::recv)
            ready = ready && wire[{s.steps[i].peer, r}].size() > need[s.steps[i].peer]++;
        if (!ready) break;
        for (std::size_t i = first; i < last; ++i) {
          const step& st = s.steps[i];
          if (st.kind != step_kind::recv) continue;
          auto& q = wire[{st.peer, r}];
          ASSERT_EQ(q.front().size(), st.bytes) << s.name << " rank " << r << " round " << k;
          if (st.bytes) std::memcpy(b.at(st.to), q.front().data(), st.bytes);
          q.pop_front();
        }
        ++k;
        started[static_cast<std::size_t>(r)] = false;
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; ++r)
    ASSERT_EQ(round[static_cast<std::size_t>(r)], plans[static_cast<std::size_t>(r)].rounds())
        << plans[0].name << ": rank " << r << " of " << p << " is stuck (deadlock)";
  for (auto& [pair, q] : wire) {
    ASSERT_TRUE(q.empty()) << "message left from " << pair.first << " to " << pair.second;
  }
}

// Rounds that move data (the "stages" of the papers).
std::size_t message_rounds(const schedule& s) {
  std::size_t n = 0;
  for (std::size_t k = 0; k < s.rounds(); ++k) {
    const auto [first, last] = s.round(k);
    bool comm = false;
    for (std::size_t i = first; i < last; ++i)
      comm = comm || s.steps[i].kind == step_kind::send || s.steps[i].kind == step_kind::recv;
    n += comm;
  }
  return n;
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <class T>
std::vector<T> values_of(const std::vector<std::byte>& b, std::size_t n) {
  std::vector<T> v(n);
  std::memcpy(v.data(), b.data(), n * sizeof(T));
  return v;
}

std::vector<mat2> random_mats(std::size_t n, std::uint64_t seed) {
  auto raw = cairn::test::random_values<std::uint32_t>(4 * n, seed);
  std::vector<mat2> m(n);
  std::memcpy(m.data(), raw.data(), n * sizeof(mat2));
  return m;
}

}  // namespace

TEST(Schedules, BarrierCompletesEverywhere) {
  for (int p = 1; p <= 40; ++p) {
    std::vector<schedule> plans;
    for (int r = 0; r < p; ++r) plans.push_back(plan_barrier_dissemination(p, r));
    std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
    simulate(plans, bufs, sum_i64);
    int log = 0;
    while ((1 << log) < p) ++log;
    EXPECT_EQ(message_rounds(plans[0]), static_cast<std::size_t>(log)) << p;
  }
}

TEST(Schedules, BcastFromEveryRoot) {
  for (int p = 1; p <= 33; ++p)
    for (int root = 0; root < p; root += (p > 8 ? 3 : 1)) {
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      const auto data = cairn::test::random_values<std::int64_t>(13, static_cast<unsigned>(p * 100 + root));
      for (int r = 0; r < p; ++r) {
        plans.push_back(plan_bcast_binomial(p, r, root, data.size() * 8));
        bufs[static_cast<std::size_t>(r)].out = r == root ? bytes_of(data) : std::vector<std::byte>(data.size() * 8);
      }
      simulate(plans, bufs, sum_i64);
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, data.size()), data) << p << " " << root;
    }
}

TEST(Schedules, ReduceCommutativeAndOrdered) {
  for (int p = 1; p <= 33; ++p)
    for (int root = 0; root < p; root += (p > 8 ? 5 : 1)) {
      const std::size_t n = 9;
      // Sum of int64.
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      std::vector<std::int64_t> expect(n, 0);
      for (int r = 0; r < p; ++r) {
        auto v = cairn::test::random_values<std::int64_t>(n, 7, static_cast<unsigned>(r));
        for (std::size_t i = 0; i < n; ++i) expect[i] += v[i];
        plans.push_back(plan_reduce_binomial(p, r, root, n * 8, true));
        bufs[static_cast<std::size_t>(r)].in = bytes_of(v);
        bufs[static_cast<std::size_t>(r)].out.resize(r == root ? n * 8 : 0);
      }
      simulate(plans, bufs, sum_i64);
      ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(root)].out, n), expect) << p << " " << root;
      // Matrix product in rank order.
      plans.clear();
      std::vector<rank_buffers> mb(static_cast<std::size_t>(p));
      std::vector<mat2> prod(n, mat2{1, 0, 0, 1});
      for (int r = 0; r < p; ++r) {
        auto m = random_mats(n, static_cast<unsigned>(r + 1000 * p));
        for (std::size_t i = 0; i < n; ++i) prod[i] = mul(prod[i], m[i]);
        plans.push_back(plan_reduce_binomial(p, r, root, n * sizeof(mat2), false));
        mb[static_cast<std::size_t>(r)].in = bytes_of(m);
        mb[static_cast<std::size_t>(r)].out.resize(r == root ? n * sizeof(mat2) : 0);
      }
      simulate(plans, mb, mul_mat);
      ASSERT_EQ(values_of<mat2>(mb[static_cast<std::size_t>(root)].out, n), prod) << p << " " << root;
    }
}

TEST(Schedules, AllreduceRecursiveDoublingStagesAndOrder) {
  for (int p = 1; p <= 40; ++p)
    for (bool commutative : {true, false}) {
      const std::size_t n = 5;
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      std::vector<mat2> prod(n, mat2{1, 0, 0, 1});
      for (int r = 0; r < p; ++r) {
        auto m = random_mats(n, static_cast<unsigned>(r + 77 * p));
        for (std::size_t i = 0; i < n; ++i) prod[i] = mul(prod[i], m[i]);
        plans.push_back(plan_allreduce_recursive_doubling(p, r, n * sizeof(mat2), sizeof(mat2), commutative));
        bufs[static_cast<std::size_t>(r)].in = bytes_of(m);
        bufs[static_cast<std::size_t>(r)].out.resize(n * sizeof(mat2));
      }
      if (commutative) {  // matrices do not commute: check the sum instead
        std::vector<rank_buffers> sb(static_cast<std::size_t>(p));
        std::vector<std::int64_t> expect(n, 0);
        for (int r = 0; r < p; ++r) {
          auto v = cairn::test::random_values<std::int64_t>(n, 3, static_cast<unsigned>(r));
          for (std::size_t i = 0; i < n; ++i) expect[i] += v[i];
          sb[static_cast<std::size_t>(r)].in = bytes_of(v);
          sb[static_cast<std::size_t>(r)].out.resize(n * 8);
        }
        std::vector<schedule> sp;
        for (int r = 0; r < p; ++r) sp.push_back(plan_allreduce_recursive_doubling(p, r, n * 8, 8, true));
        simulate(sp, sb, sum_i64);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(values_of<std::int64_t>(sb[static_cast<std::size_t>(r)].out, n), expect) << p << " rank " << r;
      } else {
        simulate(plans, bufs, mul_mat);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(values_of<mat2>(bufs[static_cast<std::size_t>(r)].out, n), prod) << p << " rank " << r;
      }
      // Aspen section 2.1: 2 + floor(log2 p) stages when p is not a power of two, else log2 p.
      int log = 0;
      while ((2 << log) <= p) ++log;
      const bool pow2 = (p & (p - 1)) == 0;
      std::size_t most = 0;
      for (const auto& s : plans) most = std::max(most, message_rounds(s));
      EXPECT_EQ(most, static_cast<std::size_t>(pow2 ? log : log + 2)) << "p=" << p;
    }
}

TEST(Schedules, AllreduceRing) {
  for (int p = 1; p <= 24; ++p)
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{64}, std::size_t{1001}}) {
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      std::vector<std::int64_t> expect(n, 0);
      for (int r = 0; r < p; ++r) {
        auto v = cairn::test::random_values<std::int64_t>(n, 11, static_cast<unsigned>(r));
        for (std::size_t i = 0; i < n; ++i) expect[i] += v[i];
        plans.push_back(plan_allreduce_ring(p, r, n * 8, 8));
        bufs[static_cast<std::size_t>(r)].in = bytes_of(v);
        bufs[static_cast<std::size_t>(r)].out.resize(n * 8);
      }
      simulate(plans, bufs, sum_i64);
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, n), expect) << p << " " << n;
      if (p > 1) {
        EXPECT_EQ(message_rounds(plans[0]), static_cast<std::size_t>(2 * (p - 1)));
      }
    }
}

TEST(Schedules, PrintsRoundByRound) {
  std::ostringstream os;
  os << plan_allreduce_recursive_doubling(6, 1, 64, 8, true);
  const std::string text = os.str();
  EXPECT_NE(text.find("allreduce/recursive_doubling (rank 1 of 6"), std::string::npos) << text;
  EXPECT_NE(text.find("round 0:"), std::string::npos) << text;
  EXPECT_NE(text.find("send(out+0 -> 0, 64B)"), std::string::npos) << text;
}
