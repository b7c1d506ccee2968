// The planners on their own: every schedule is run by a sequential simulator (all ranks of a
// group in one loop, messages as FIFO queues per ordered pair) for many group sizes and roots,
// and compared with a sequential reference. Also the stage counts promised by the papers.
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "coll/algorithms/planners.hpp"
#include "coll_reference.hpp"
#include "harness.hpp"

using cairn::test::mat2;
using cairn::test::mul;
using cairn::test::random_mats;

using namespace cairn::coll;
using cairn::allreduce_algorithm;
using cairn::bcast_algorithm;
using cairn::reduce_algorithm;

namespace {

using combine_fn = void (*)(const void* from, void* to, std::size_t bytes, bool from_is_left);

void sum_i64(const void* from, void* to, std::size_t bytes, bool) {
  auto* t = static_cast<std::int64_t*>(to);
  const auto* f = static_cast<const std::int64_t*>(from);
  for (std::size_t i = 0; i < bytes / 8; ++i) t[i] += f[i];
}
void mul_mat(const void* from, void* to, std::size_t bytes, bool from_is_left) {
  auto* t = static_cast<mat2*>(to);
  const auto* f = static_cast<const mat2*>(from);
  for (std::size_t i = 0; i < bytes / sizeof(mat2); ++i)
    t[i] = from_is_left ? mul(f[i], t[i]) : mul(t[i], f[i]);
}

struct rank_buffers {
  std::vector<std::byte> in, out, temp;
  std::vector<std::byte>& of(const region& r) {
    return r.slot == slot::input ? in : r.slot == slot::output ? out : temp;
  }
  std::byte* at(const region& r) { return of(r).data() + r.offset; }
  // Whether `bytes` at `r` lie inside the buffer.
  bool holds(const region& r, std::size_t bytes) {
    const std::size_t size = of(r).size();
    return r.offset <= size && bytes <= size - r.offset;
  }
};

// Runs one schedule per rank to completion (eager sends). Fails the test on a deadlock, on a
// receive whose size differs from the matching send, on a message left over, on a step that
// reaches outside its buffers (temp is sized by the plan; in and out by the test), or on a
// write to the input (the caller's const data).
// `depth`, if given, receives the longest chain of messages that depend on each other (a
// message sent in a round depends on the messages received before it): the latency in stages.
void simulate(const std::vector<schedule>& plans, std::vector<rank_buffers>& bufs, combine_fn op,
              std::size_t* depth = nullptr) {
  const int p = static_cast<int>(plans.size());
  struct message {
    std::vector<std::byte> data;
    std::size_t stage;  // length of the chain that ends with this message
  };
  std::map<std::pair<int, int>, std::deque<message>> wire;
  std::vector<std::size_t> clock(static_cast<std::size_t>(p), 0);  // longest chain received
  std::vector<std::size_t> round(static_cast<std::size_t>(p), 0);
  std::vector<bool> started(static_cast<std::size_t>(p), false);
  // Scratch starts as garbage (the executor recycles it): a plan must write before it reads.
  for (int r = 0; r < p; ++r)
    bufs[static_cast<std::size_t>(r)].temp.assign(plans[static_cast<std::size_t>(r)].temp_bytes,
                                                  std::byte{0xA5});
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
          // The round's messages are in flight together: no receive may write what another
          // message of the round reads or writes.
          for (std::size_t i = first; i < last; ++i)
            for (std::size_t j = first; j < last; ++j) {
              const step &a = s.steps[i], &c = s.steps[j];
              if (i == j || a.kind != step_kind::recv ||
                  (c.kind != step_kind::send && c.kind != step_kind::recv))
                continue;
              const region& other = c.kind == step_kind::send ? c.from : c.to;
              ASSERT_FALSE(a.bytes && c.bytes && a.to.slot == other.slot &&
                           a.to.offset < other.offset + c.bytes &&
                           other.offset < a.to.offset + a.bytes)
                  << s.name << " rank " << r << " of " << p << " round " << k
                  << ": a receive overlaps another message";
            }
          for (std::size_t i = first; i < last; ++i) {
            const step& st = s.steps[i];
            const bool reads = st.kind != step_kind::recv, writes = st.kind != step_kind::send;
            ASSERT_TRUE(!reads || b.holds(st.from, st.bytes))
                << s.name << " rank " << r << " of " << p << " round " << k
                << " reads outside its buffer";
            ASSERT_TRUE(!writes || b.holds(st.to, st.bytes))
                << s.name << " rank " << r << " of " << p << " round " << k
                << " writes outside its buffer";
            ASSERT_TRUE(!writes || st.to.slot != slot::input)
                << s.name << " rank " << r << " of " << p << " round " << k
                << " writes the caller's input";
            if (st.kind == step_kind::copy && b.at(st.from) != b.at(st.to) && st.bytes)
              std::memmove(b.at(st.to), b.at(st.from), st.bytes);
            if (st.kind == step_kind::reduce)
              op(b.at(st.from), b.at(st.to), st.bytes, st.from_is_left);
          }
          for (std::size_t i = first; i < last; ++i) {
            const step& st = s.steps[i];
            if (st.kind == step_kind::send)
              wire[{r, st.peer}].push_back({{b.at(st.from), b.at(st.from) + st.bytes},
                                            clock[static_cast<std::size_t>(r)] + 1});
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
          ASSERT_EQ(q.front().data.size(), st.bytes) << s.name << " rank " << r << " round " << k;
          if (st.bytes) std::memcpy(b.at(st.to), q.front().data.data(), st.bytes);
          clock[static_cast<std::size_t>(r)] =
              std::max(clock[static_cast<std::size_t>(r)], q.front().stage);
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
  if (depth) *depth = *std::max_element(clock.begin(), clock.end());
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());  // (no null pointers to memcpy)
  return b;
}
template <class T>
std::vector<T> values_of(const std::vector<std::byte>& b, std::size_t n) {
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), b.data(), n * sizeof(T));
  return v;
}

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  const auto raw = cairn::test::random_values<std::uint8_t>(n, seed);
  std::vector<std::byte> b(n);
  if (n) std::memcpy(b.data(), raw.data(), n);
  return b;
}
std::vector<std::byte> slice(const std::vector<std::byte>& v, std::size_t offset, std::size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(offset),
          v.begin() + static_cast<std::ptrdiff_t>(offset + n)};
}
int ceil_log2(int p) {
  int log = 0;
  while ((1 << log) < p) ++log;
  return log;
}
int floor_log2(int p) {
  int log = 0;
  while ((2 << log) <= p) ++log;
  return log;
}
std::size_t steps_of(const schedule& s, step_kind k) {
  return static_cast<std::size_t>(
      std::count_if(s.steps.begin(), s.steps.end(), [k](const step& st) { return st.kind == k; }));
}
std::size_t sends_of(const schedule& s) { return steps_of(s, step_kind::send); }
std::size_t recvs_of(const schedule& s) { return steps_of(s, step_kind::recv); }

// Block sizes in bytes for the block collectives: empty, odd, and a few elements.
const std::size_t block_sizes[] = {0, 1, 5, 24};

}  // namespace

TEST(Schedules, BarrierCompletesEverywhere) {
  for (int p = 1; p <= 40; ++p) {
    std::vector<schedule> plans;
    for (int r = 0; r < p; ++r) plans.push_back(plan_barrier_dissemination(p, r));
    std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
    simulate(plans, bufs, sum_i64);
    int log = 0;
    while ((1 << log) < p) ++log;
    EXPECT_EQ(plans[0].message_rounds(), static_cast<std::size_t>(log)) << p;
  }
}

TEST(Schedules, BcastFromEveryRoot) {
  for (int p = 1; p <= 33; ++p)
    for (int root = 0; root < p; root += (p > 8 ? 3 : 1)) {
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      const auto data =
          cairn::test::random_values<std::int64_t>(13, static_cast<unsigned>(p * 100 + root));
      for (int r = 0; r < p; ++r) {
        plans.push_back(plan_bcast_binomial(p, r, root, data.size() * 8));
        bufs[static_cast<std::size_t>(r)].out =
            r == root ? bytes_of(data) : std::vector<std::byte>(data.size() * 8);
      }
      simulate(plans, bufs, sum_i64);
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, data.size()), data)
            << p << " " << root;
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
      ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(root)].out, n), expect)
          << p << " " << root;
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
      ASSERT_EQ(values_of<mat2>(mb[static_cast<std::size_t>(root)].out, n), prod)
          << p << " " << root;
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
        plans.push_back(
            plan_allreduce_recursive_doubling(p, r, n * sizeof(mat2), sizeof(mat2), commutative));
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
        for (int r = 0; r < p; ++r)
          sp.push_back(plan_allreduce_recursive_doubling(p, r, n * 8, 8, true));
        simulate(sp, sb, sum_i64);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(values_of<std::int64_t>(sb[static_cast<std::size_t>(r)].out, n), expect)
              << p << " rank " << r;
      } else {
        simulate(plans, bufs, mul_mat);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(values_of<mat2>(bufs[static_cast<std::size_t>(r)].out, n), prod)
              << p << " rank " << r;
      }
      // Aspen section 2.1: 2 + floor(log2 p) stages when p is not a power of two, else log2 p.
      int log = 0;
      while ((2 << log) <= p) ++log;
      const bool pow2 = (p & (p - 1)) == 0;
      std::size_t most = 0;
      for (const auto& s : plans) most = std::max(most, s.message_rounds());
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
        ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, n), expect)
            << p << " " << n;
      if (p > 1) {
        EXPECT_EQ(plans[0].message_rounds(), static_cast<std::size_t>(2 * (p - 1)));
      }
    }
}

TEST(Schedules, GatherBinomialEveryRoot) {
  for (int p = 1; p <= 33; ++p)
    for (int root = 0; root < p; ++root)
      for (std::size_t block : block_sizes) {
        std::vector<schedule> plans;
        std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
        std::vector<std::byte> expect;
        for (int r = 0; r < p; ++r) {
          plans.push_back(plan_gather_binomial(p, r, root, block));
          auto& b = bufs[static_cast<std::size_t>(r)];
          b.in = random_bytes(block, static_cast<unsigned>(p * 10000 + root * 100 + r));
          expect.insert(expect.end(), b.in.begin(), b.in.end());
          b.out.resize(r == root ? p * block : 0);  // other outputs are empty: no writes there
        }
        std::size_t depth = 0;
        simulate(plans, bufs, sum_i64, &depth);
        ASSERT_EQ(bufs[static_cast<std::size_t>(root)].out, expect)
            << "p=" << p << " root=" << root << " block=" << block;
        // A tree: every rank but the root sends once, to its parent; the longest chain is the
        // tree's height, floor(log2 p) (the root takes ceil(log2 p) messages, one per child).
        std::size_t sends = 0;
        for (int r = 0; r < p; ++r) {
          sends += sends_of(plans[static_cast<std::size_t>(r)]);
          EXPECT_EQ(sends_of(plans[static_cast<std::size_t>(r)]), r == root ? 0u : 1u)
              << "p=" << p << " rank " << r;
        }
        EXPECT_EQ(sends, static_cast<std::size_t>(p - 1));
        EXPECT_EQ(recvs_of(plans[static_cast<std::size_t>(root)]),
                  static_cast<std::size_t>(ceil_log2(p)));
        EXPECT_EQ(depth, static_cast<std::size_t>(floor_log2(p))) << "p=" << p;
      }
}

TEST(Schedules, ScatterBinomialEveryRoot) {
  for (int p = 1; p <= 33; ++p)
    for (int root = 0; root < p; ++root)
      for (std::size_t block : block_sizes) {
        std::vector<schedule> plans;
        std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
        const auto data =
            random_bytes(p * block, static_cast<unsigned>(p * 10000 + root * 100 + 7));
        for (int r = 0; r < p; ++r) {
          plans.push_back(plan_scatter_binomial(p, r, root, block));
          auto& b = bufs[static_cast<std::size_t>(r)];
          if (r == root) b.in = data;  // other inputs are empty: no reads there
          b.out.resize(block);
        }
        std::size_t depth = 0;
        simulate(plans, bufs, sum_i64, &depth);
        EXPECT_EQ(depth, static_cast<std::size_t>(floor_log2(p))) << "p=" << p;
        std::size_t sends = 0;
        for (int r = 0; r < p; ++r) {
          ASSERT_EQ(bufs[static_cast<std::size_t>(r)].out,
                    slice(data, static_cast<std::size_t>(r) * block, block))
              << "p=" << p << " root=" << root << " block=" << block << " rank " << r;
          sends += sends_of(plans[static_cast<std::size_t>(r)]);
        }
        EXPECT_EQ(sends, static_cast<std::size_t>(p - 1)) << "p=" << p;  // one message per non-root
        EXPECT_EQ(sends_of(plans[static_cast<std::size_t>(root)]),
                  static_cast<std::size_t>(ceil_log2(p)));
      }
}

TEST(Schedules, AllgatherRingAndBruckStages) {
  for (int p = 1; p <= 33; ++p)
    for (std::size_t block : block_sizes)
      for (bool bruck : {false, true}) {
        std::vector<schedule> plans;
        std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
        std::vector<std::byte> expect;
        for (int r = 0; r < p; ++r) {
          plans.push_back(bruck ? plan_allgather_bruck(p, r, block)
                                : plan_allgather_ring(p, r, block));
          auto& b = bufs[static_cast<std::size_t>(r)];
          b.in = random_bytes(block, static_cast<unsigned>(p * 100 + r + (bruck ? 50000 : 0)));
          expect.insert(expect.end(), b.in.begin(), b.in.end());
          b.out.resize(p * block);
        }
        std::size_t depth = 0;
        simulate(plans, bufs, sum_i64, &depth);
        EXPECT_EQ(depth, static_cast<std::size_t>(bruck ? ceil_log2(p) : p - 1))
            << plans[0].name << " p=" << p;
        for (int r = 0; r < p; ++r) {
          ASSERT_EQ(bufs[static_cast<std::size_t>(r)].out, expect)
              << plans[0].name << " p=" << p << " block=" << block << " rank " << r;
          // Ring: p - 1 steps; Bruck: ceil(log2 p), one message each way per step.
          const std::size_t stages = static_cast<std::size_t>(bruck ? ceil_log2(p) : p - 1);
          EXPECT_EQ(plans[static_cast<std::size_t>(r)].message_rounds(), stages)
              << plans[0].name << " p=" << p;
          EXPECT_EQ(sends_of(plans[static_cast<std::size_t>(r)]), stages)
              << plans[0].name << " p=" << p;
        }
      }
}

TEST(Schedules, AlltoallPairwiseStages) {
  for (int p = 1; p <= 33; ++p)
    for (std::size_t block : block_sizes) {
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) {
        plans.push_back(plan_alltoall_pairwise(p, r, block));
        auto& b = bufs[static_cast<std::size_t>(r)];
        b.in = random_bytes(p * block, static_cast<unsigned>(p * 1000 + r + 3));
        b.out.resize(p * block);
      }
      simulate(plans, bufs, sum_i64);
      for (int r = 0; r < p; ++r) {
        for (int i = 0; i < p; ++i)  // out block i of r is in block r of i
          ASSERT_EQ(slice(bufs[static_cast<std::size_t>(r)].out,
                          static_cast<std::size_t>(i) * block, block),
                    slice(bufs[static_cast<std::size_t>(i)].in, static_cast<std::size_t>(r) * block,
                          block))
              << "p=" << p << " block=" << block << " rank " << r << " from " << i;
        EXPECT_EQ(plans[static_cast<std::size_t>(r)].message_rounds(),
                  static_cast<std::size_t>(p - 1))
            << "p=" << p;
        EXPECT_EQ(sends_of(plans[static_cast<std::size_t>(r)]), static_cast<std::size_t>(p - 1))
            << "p=" << p;
      }
    }
}

// Reduce-scatter: rank r's input holds p blocks of n elements; its output gets block r reduced
// over all ranks. Sums with both algorithms; matrix products (in rank order) with recursive
// halving, the one for non-commutative operations.
TEST(Schedules, ReduceScatterBlockRingAndRecursiveHalving) {
  for (int p = 1; p <= 33; ++p)
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}})
      for (bool ring : {true, false}) {
        const std::size_t P = static_cast<std::size_t>(p);
        auto plan = [&](int r, std::size_t block) {
          return ring ? plan_reduce_scatter_block_ring(p, r, block)
                      : plan_reduce_scatter_block_recursive_halving(p, r, block);
        };
        std::vector<schedule> plans;
        std::vector<rank_buffers> bufs(P);
        std::vector<std::int64_t> expect(P * n, 0);
        for (int r = 0; r < p; ++r) {
          auto v = cairn::test::random_values<std::int64_t>(P * n, 13,
                                                            static_cast<unsigned>(r + 100 * p));
          for (std::size_t i = 0; i < P * n; ++i) expect[i] += v[i];
          plans.push_back(plan(r, n * 8));
          bufs[static_cast<std::size_t>(r)].in = bytes_of(v);
          bufs[static_cast<std::size_t>(r)].out.resize(n * 8);
        }
        std::size_t depth = 0;
        simulate(plans, bufs, sum_i64, &depth);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(
              values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, n),
              std::vector<std::int64_t>(
                  expect.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * n),
                  expect.begin() +
                      static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r + 1) * n)))
              << plans[0].name << " p=" << p << " n=" << n << " rank " << r;
        // Ring: p - 1 steps of one block each way. Recursive halving: log2 p steps, two more
        // (fold, unfold) when p is not a power of two.
        const bool pow2 = (p & (p - 1)) == 0;
        const std::size_t stages =
            static_cast<std::size_t>(ring ? p - 1 : (pow2 ? floor_log2(p) : floor_log2(p) + 2));
        std::size_t most = 0;
        for (int r = 0; r < p; ++r) {
          const schedule& s = plans[static_cast<std::size_t>(r)];
          most = std::max(most, s.message_rounds());
          if (ring) {
            EXPECT_EQ(s.message_rounds(), stages) << "p=" << p;
            EXPECT_EQ(sends_of(s), stages) << "p=" << p;
          }
        }
        EXPECT_EQ(most, stages) << plans[0].name << " p=" << p;
        // The longest chain of dependent messages: the ring's p - 1 steps. With recursive
        // halving, steps of ranks that do not fold need not wait for the fold.
        if (ring || pow2) {
          EXPECT_EQ(depth, stages) << plans[0].name << " p=" << p;
        } else {
          EXPECT_GE(depth, stages - 1) << plans[0].name << " p=" << p;
          EXPECT_LE(depth, stages) << plans[0].name << " p=" << p;
        }
        if (ring) continue;
        // Matrix products in rank order.
        plans.clear();
        std::vector<rank_buffers> mb(P);
        std::vector<mat2> prod(P * n, mat2{1, 0, 0, 1});
        for (int r = 0; r < p; ++r) {
          auto m = random_mats(P * n, static_cast<unsigned>(r + 1000 * p + 7));
          for (std::size_t i = 0; i < P * n; ++i) prod[i] = mul(prod[i], m[i]);
          plans.push_back(plan_reduce_scatter_block_recursive_halving(p, r, n * sizeof(mat2)));
          mb[static_cast<std::size_t>(r)].in = bytes_of(m);
          mb[static_cast<std::size_t>(r)].out.resize(n * sizeof(mat2));
        }
        simulate(plans, mb, mul_mat);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(
              values_of<mat2>(mb[static_cast<std::size_t>(r)].out, n),
              std::vector<mat2>(
                  prod.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * n),
                  prod.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r + 1) * n)))
              << "p=" << p << " n=" << n << " rank " << r;
      }
}

// Scans: rank r gets the reduction over ranks 0..r (inclusive) or 0..r-1 (exclusive; rank 0's
// output keeps its old contents), sums and matrix products in rank order, in ceil(log2 p)
// rounds of messages.
TEST(Schedules, ScanAndExscanRecursiveDoubling) {
  for (int p = 1; p <= 33; ++p)
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}})
      for (bool exclusive : {false, true}) {
        const std::size_t P = static_cast<std::size_t>(p);
        auto plan = [&](int r, std::size_t bytes) {
          return exclusive ? plan_exscan_recursive_doubling(p, r, bytes)
                           : plan_scan_recursive_doubling(p, r, bytes);
        };
        const std::vector<std::int64_t> untouched(n, -42);
        std::vector<schedule> plans;
        std::vector<rank_buffers> bufs(P);
        for (int r = 0; r < p; ++r) {
          plans.push_back(plan(r, n * 8));
          bufs[static_cast<std::size_t>(r)].in = bytes_of(
              cairn::test::random_values<std::int64_t>(n, 17, static_cast<unsigned>(r + 100 * p)));
          bufs[static_cast<std::size_t>(r)].out = bytes_of(untouched);
        }
        std::size_t depth = 0;
        simulate(plans, bufs, sum_i64, &depth);
        std::vector<std::int64_t> sum(n, 0);
        for (int r = 0; r < p; ++r) {
          const auto v = values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].in, n);
          if (!exclusive)
            for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
          const auto& want = exclusive && r == 0 ? untouched : sum;
          ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, n), want)
              << plans[0].name << " p=" << p << " n=" << n << " rank " << r;
          if (exclusive)
            for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
        }
        std::size_t most = 0;
        for (const auto& s : plans) most = std::max(most, s.message_rounds());
        EXPECT_EQ(most, static_cast<std::size_t>(ceil_log2(p))) << plans[0].name << " p=" << p;
        // Rank 2^k's partial of round k reaches ranks below 2^(k+1) only: for p = 2^k + 1 the
        // longest chain of dependent messages is a round shorter.
        EXPECT_EQ(depth, static_cast<std::size_t>(floor_log2(p))) << plans[0].name << " p=" << p;
        // Matrix products in rank order.
        plans.clear();
        std::vector<rank_buffers> mb(P);
        const std::vector<mat2> unset(n, mat2{7, 7, 7, 7});
        for (int r = 0; r < p; ++r) {
          plans.push_back(plan(r, n * sizeof(mat2)));
          mb[static_cast<std::size_t>(r)].in =
              bytes_of(random_mats(n, static_cast<unsigned>(r + 1000 * p + 3)));
          mb[static_cast<std::size_t>(r)].out = bytes_of(unset);
        }
        simulate(plans, mb, mul_mat);
        std::vector<mat2> prod(n, mat2{1, 0, 0, 1});
        for (int r = 0; r < p; ++r) {
          const auto m = values_of<mat2>(mb[static_cast<std::size_t>(r)].in, n);
          if (!exclusive)
            for (std::size_t i = 0; i < n; ++i) prod[i] = mul(prod[i], m[i]);
          const auto& want = exclusive && r == 0 ? unset : prod;
          ASSERT_EQ(values_of<mat2>(mb[static_cast<std::size_t>(r)].out, n), want)
              << plans[0].name << " p=" << p << " n=" << n << " rank " << r;
          if (exclusive)
            for (std::size_t i = 0; i < n; ++i) prod[i] = mul(prod[i], m[i]);
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

// ---- Algorithms for long messages and small blocks, and the v-collectives ----

namespace {
std::vector<std::int64_t> rank_values(std::size_t n, int p, int r) {
  return cairn::test::random_values<std::int64_t>(n, static_cast<unsigned>(p * 7 + 5),
                                                  static_cast<unsigned>(r));
}
// Random per-rank counts (zeros included) for a group of p.
std::vector<std::size_t> random_counts(int p, unsigned seed, std::size_t max) {
  std::mt19937 g(seed);
  std::vector<std::size_t> c(static_cast<std::size_t>(p));
  for (auto& x : c) x = g() % 4 == 0 ? 0 : g() % (max + 1);
  return c;
}
std::vector<std::size_t> prefix(const std::vector<std::size_t>& c) {
  std::vector<std::size_t> o(c.size(), 0);
  for (std::size_t i = 1; i < c.size(); ++i) o[i] = o[i - 1] + c[i - 1];
  return o;
}
std::size_t total(const std::vector<std::size_t>& c) {
  return std::accumulate(c.begin(), c.end(), std::size_t{0});
}
}  // namespace

TEST(Schedules, AllgatherRecursiveDoublingStages) {
  for (int p = 1; p <= 33; ++p)
    for (std::size_t block : block_sizes) {
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      std::vector<std::byte> expect;
      for (int r = 0; r < p; ++r) {
        plans.push_back(plan_allgather_recursive_doubling(p, r, block));
        auto& b = bufs[static_cast<std::size_t>(r)];
        b.in = random_bytes(block, static_cast<unsigned>(p * 100 + r + 70000));
        expect.insert(expect.end(), b.in.begin(), b.in.end());
        b.out.resize(p * block);
      }
      std::size_t depth = 0;
      simulate(plans, bufs, sum_i64, &depth);
      const bool pow2 = (p & (p - 1)) == 0;
      // Rounds of messages on rank 0 (which serves a folded rank): log2 p, or the fold's two more.
      const auto rounds = static_cast<std::size_t>(pow2 ? ceil_log2(p) : floor_log2(p) + 2);
      EXPECT_EQ(plans[0].message_rounds(), rounds) << "p=" << p;
      EXPECT_LE(depth, rounds) << "p=" << p;
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(bufs[static_cast<std::size_t>(r)].out, expect)
            << "p=" << p << " block=" << block << " rank " << r;
    }
}

TEST(Schedules, AlltoallBruckStages) {
  for (int p = 1; p <= 33; ++p)
    for (std::size_t block : block_sizes) {
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) {
        plans.push_back(plan_alltoall_bruck(p, r, block));
        auto& b = bufs[static_cast<std::size_t>(r)];
        b.in = random_bytes(p * block, static_cast<unsigned>(p * 1000 + r + 9));
        b.out.resize(p * block);
      }
      std::size_t depth = 0;
      simulate(plans, bufs, sum_i64, &depth);
      EXPECT_EQ(depth, static_cast<std::size_t>(ceil_log2(p))) << "p=" << p;
      for (int r = 0; r < p; ++r) {
        for (int i = 0; i < p; ++i)
          ASSERT_EQ(slice(bufs[static_cast<std::size_t>(r)].out,
                          static_cast<std::size_t>(i) * block, block),
                    slice(bufs[static_cast<std::size_t>(i)].in, static_cast<std::size_t>(r) * block,
                          block))
              << "p=" << p << " block=" << block << " rank " << r << " from " << i;
        EXPECT_EQ(sends_of(plans[static_cast<std::size_t>(r)]),
                  static_cast<std::size_t>(ceil_log2(p)));
      }
    }
}

TEST(Schedules, BcastScatterAllgatherEveryRoot) {
  for (int p = 1; p <= 33; ++p)
    for (int root = 0; root < p; root += (p > 8 ? 3 : 1))
      for (std::size_t bytes :
           {std::size_t{0}, std::size_t{1}, std::size_t{13}, static_cast<std::size_t>(p) * 24,
            static_cast<std::size_t>(p) * 24 + 5}) {
        std::vector<schedule> plans;
        std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
        const auto data = random_bytes(bytes, static_cast<unsigned>(p * 100 + root));
        for (int r = 0; r < p; ++r) {
          plans.push_back(plan_bcast_scatter_allgather(p, r, root, bytes));
          bufs[static_cast<std::size_t>(r)].out = r == root ? data : std::vector<std::byte>(bytes);
        }
        simulate(plans, bufs, sum_i64);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(bufs[static_cast<std::size_t>(r)].out, data)
              << "p=" << p << " root=" << root << " bytes=" << bytes;
      }
}

// Rabenseifner's reduce and allreduce: sums and ordered matrix products, counts below, at and
// above multiples of p.
TEST(Schedules, ReduceScatterGatherAndRabenseifner) {
  for (int p = 1; p <= 24; ++p)
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, static_cast<std::size_t>(3 * p),
                          static_cast<std::size_t>(3 * p + 2)})
      for (int root : {0, p / 2, p - 1}) {
        std::vector<std::int64_t> sum(n, 0);
        std::vector<mat2> prod(n, mat2{1, 0, 0, 1});
        for (int r = 0; r < p; ++r) {
          auto v = rank_values(n, p, r);
          for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
          auto m = random_mats(n, static_cast<unsigned>(r + 31 * p));
          for (std::size_t i = 0; i < n; ++i) prod[i] = mul(prod[i], m[i]);
        }
        for (bool all : {false, true}) {
          std::vector<schedule> plans, mplans;
          std::vector<rank_buffers> bufs(static_cast<std::size_t>(p)),
              mb(static_cast<std::size_t>(p));
          for (int r = 0; r < p; ++r) {
            const bool gets = all || r == root;
            plans.push_back(all ? plan_allreduce_rabenseifner(p, r, n * 8, 8, true)
                                : plan_reduce_scatter_gather(p, r, root, n * 8, 8, true));
            bufs[static_cast<std::size_t>(r)].in = bytes_of(rank_values(n, p, r));
            bufs[static_cast<std::size_t>(r)].out.resize(gets ? n * 8 : 0);
            mplans.push_back(
                all ? plan_allreduce_rabenseifner(p, r, n * sizeof(mat2), sizeof(mat2), false)
                    : plan_reduce_scatter_gather(p, r, root, n * sizeof(mat2), sizeof(mat2),
                                                 false));
            mb[static_cast<std::size_t>(r)].in =
                bytes_of(random_mats(n, static_cast<unsigned>(r + 31 * p)));
            mb[static_cast<std::size_t>(r)].out.resize(gets ? n * sizeof(mat2) : 0);
          }
          simulate(plans, bufs, sum_i64);
          simulate(mplans, mb, mul_mat);
          for (int r = 0; r < p; ++r) {
            if (!all && r != root) continue;
            ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, n), sum)
                << plans[0].name << " p=" << p << " n=" << n << " rank " << r;
            ASSERT_EQ(values_of<mat2>(mb[static_cast<std::size_t>(r)].out, n), prod)
                << mplans[0].name << " p=" << p << " n=" << n << " rank " << r;
          }
          if (all) break;  // one root is enough for the allreduce
        }
      }
}

// The hierarchical planners on random placements (nodes of consecutive ranks, and ranks dealt
// to nodes at random): sums for every algorithm among the leaders, rank-ordered products where
// nodes are consecutive, every root; and only node leaders send across nodes.
TEST(Schedules, HierarchicalOnRandomPlacements) {
  std::mt19937 g(77);
  for (int p = 1; p <= 20; ++p)
    for (bool consecutive : {true, false}) {
      const int k = 1 + static_cast<int>(g() % static_cast<unsigned>(p));  // nodes
      std::vector<int> node_of(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) node_of[static_cast<std::size_t>(r)] = r * k / p;
      if (!consecutive) std::shuffle(node_of.begin(), node_of.end(), g);
      const std::size_t n = 1 + g() % 40;
      std::vector<std::int64_t> sum(n, 0);
      std::vector<mat2> prod(n, mat2{1, 0, 0, 1});
      for (int r = 0; r < p; ++r) {
        auto v = rank_values(n, p, r);
        for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
        auto m = random_mats(n, static_cast<unsigned>(r + 7 * p));
        for (std::size_t i = 0; i < n; ++i) prod[i] = mul(prod[i], m[i]);
      }
      // Runs `plan(r)` on every rank, each starting with `in(r)` (output `out_bytes` or, with
      // a root, only the root's), and checks every send across nodes comes from a leader (but
      // for hierarchical_slices, where every rank sends its slice across).
      auto run = [&](auto plan, auto in, std::size_t out_bytes, combine_fn op, int root,
                     bool leaders_only = true) {
        std::vector<schedule> plans;
        std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
        for (int r = 0; r < p; ++r) {
          plans.push_back(plan(r));
          bufs[static_cast<std::size_t>(r)].in = in(r);
          bufs[static_cast<std::size_t>(r)].out.resize(root < 0 || r == root ? out_bytes : 0);
        }
        for (int r = 0; r < p; ++r) {
          const int first = static_cast<int>(
              std::find(node_of.begin(), node_of.end(), node_of[static_cast<std::size_t>(r)]) -
              node_of.begin());
          const bool leads = root >= 0 && node_of[static_cast<std::size_t>(root)] ==
                                              node_of[static_cast<std::size_t>(r)]
                                 ? r == root
                                 : r == first;
          for (const step& st : plans[static_cast<std::size_t>(r)].steps) {
            const bool across =
                st.kind == step_kind::send &&
                node_of[static_cast<std::size_t>(st.peer)] != node_of[static_cast<std::size_t>(r)];
            EXPECT_TRUE(!across || leads || !leaders_only)
                << plans[0].name << " p=" << p << " rank " << r;
          }
        }
        simulate(plans, bufs, op);
        return bufs;
      };
      const std::string at = " p=" + std::to_string(p) + " nodes=" + std::to_string(k) +
                             (consecutive ? " consecutive" : " shuffled");
      auto sums = [&](int r) { return bytes_of(rank_values(n, p, r)); };
      auto mats = [&](int r) { return bytes_of(random_mats(n, static_cast<unsigned>(r + 7 * p))); };
      for (auto across : {allreduce_algorithm::recursive_doubling, allreduce_algorithm::ring,
                          allreduce_algorithm::rabenseifner}) {
        auto b = run(
            [&](int r) { return plan_allreduce_hierarchical(node_of, r, n * 8, 8, true, across); },
            sums, n * 8, sum_i64, -1);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(values_of<std::int64_t>(b[static_cast<std::size_t>(r)].out, n), sum)
              << "allreduce across " << static_cast<int>(across) << at << " rank " << r;
        if (!consecutive || across == allreduce_algorithm::ring) continue;
        auto m = run(
            [&](int r) {
              return plan_allreduce_hierarchical(node_of, r, n * sizeof(mat2), sizeof(mat2), false,
                                                 across);
            },
            mats, n * sizeof(mat2), mul_mat, -1);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(values_of<mat2>(m[static_cast<std::size_t>(r)].out, n), prod)
              << "ordered allreduce" << at << " rank " << r;
      }
      {  // allgather: every rank's block, in group order
        auto b = run([&](int r) { return plan_allgather_hierarchical(node_of, r, n * 8); }, sums,
                     n * 8 * static_cast<std::size_t>(p), sum_i64, -1);
        std::vector<std::int64_t> all;
        for (int r = 0; r < p; ++r) {
          const auto v = rank_values(n, p, r);
          all.insert(all.end(), v.begin(), v.end());
        }
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(values_of<std::int64_t>(b[static_cast<std::size_t>(r)].out, all.size()), all)
              << "allgather" << at << " rank " << r;
      }
      for (int root : {0, p / 2, p - 1}) {
        for (auto across : {reduce_algorithm::binomial, reduce_algorithm::reduce_scatter_gather}) {
          auto b = run(
              [&](int r) {
                return plan_reduce_hierarchical(node_of, r, root, n * 8, 8, true, across);
              },
              sums, n * 8, sum_i64, root);
          ASSERT_EQ(values_of<std::int64_t>(b[static_cast<std::size_t>(root)].out, n), sum)
              << "reduce to " << root << at;
          if (!consecutive) continue;
          auto m = run(
              [&](int r) {
                return plan_reduce_hierarchical(node_of, r, root, n * sizeof(mat2), sizeof(mat2),
                                                false, across);
              },
              mats, n * sizeof(mat2), mul_mat, root);
          ASSERT_EQ(values_of<mat2>(m[static_cast<std::size_t>(root)].out, n), prod)
              << "ordered reduce to " << root << at;
        }
        for (auto across : {bcast_algorithm::binomial, bcast_algorithm::scatter_allgather}) {
          std::vector<schedule> plans;
          std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
          for (int r = 0; r < p; ++r) {
            plans.push_back(plan_bcast_hierarchical(node_of, r, root, n * 8, across));
            bufs[static_cast<std::size_t>(r)].out =
                r == root ? bytes_of(sum) : std::vector<std::byte>(n * 8);
          }
          simulate(plans, bufs, sum_i64);
          for (int r = 0; r < p; ++r)
            ASSERT_EQ(values_of<std::int64_t>(bufs[static_cast<std::size_t>(r)].out, n), sum)
                << "bcast from " << root << at << " rank " << r;
        }
      }
    }
}

TEST(Schedules, GathervScattervAllgathervRandomCounts) {
  for (int p = 1; p <= 20; ++p)
    for (unsigned seed = 0; seed < 4; ++seed) {
      const auto c = random_counts(p, seed * 100 + static_cast<unsigned>(p), 9);
      // Displacements with gaps, in reverse rank order (any layout is allowed).
      std::vector<std::size_t> d(c.size());
      std::size_t at = 0;
      for (int r = p - 1; r >= 0; --r) {
        d[static_cast<std::size_t>(r)] = at;
        at += c[static_cast<std::size_t>(r)] + 2;
      }
      const int root = static_cast<int>(seed) % p;
      std::vector<schedule> g, s, a;
      std::vector<rank_buffers> gb(static_cast<std::size_t>(p)), sb(static_cast<std::size_t>(p)),
          ab(static_cast<std::size_t>(p));
      const auto data = random_bytes(at, seed + 7);
      for (int r = 0; r < p; ++r) {
        const std::size_t mine = c[static_cast<std::size_t>(r)];
        const bool is_root = r == root;
        g.push_back(plan_gatherv_linear(p, r, root, mine, is_root ? c : std::vector<std::size_t>{},
                                        is_root ? d : std::vector<std::size_t>{}));
        gb[static_cast<std::size_t>(r)].in = slice(data, d[static_cast<std::size_t>(r)], mine);
        gb[static_cast<std::size_t>(r)].out.assign(is_root ? at : 0, std::byte{0});
        s.push_back(plan_scatterv_linear(p, r, root, is_root ? c : std::vector<std::size_t>{},
                                         is_root ? d : std::vector<std::size_t>{}, mine));
        if (is_root) sb[static_cast<std::size_t>(r)].in = data;
        sb[static_cast<std::size_t>(r)].out.resize(mine);
        a.push_back(plan_allgatherv_ring(p, r, c, d));
        ab[static_cast<std::size_t>(r)].in = slice(data, d[static_cast<std::size_t>(r)], mine);
        ab[static_cast<std::size_t>(r)].out.assign(at, std::byte{0});
      }
      simulate(g, gb, sum_i64);
      simulate(s, sb, sum_i64);
      simulate(a, ab, sum_i64);
      for (int r = 0; r < p; ++r) {
        const auto R = static_cast<std::size_t>(r);
        ASSERT_EQ(sb[R].out, slice(data, d[R], c[R])) << "scatterv p=" << p << " rank " << r;
        for (int i = 0; i < p; ++i) {
          const auto I = static_cast<std::size_t>(i);
          ASSERT_EQ(slice(ab[R].out, d[I], c[I]), slice(data, d[I], c[I]))
              << "allgatherv p=" << p << " rank " << r;
          if (r == root) {
            ASSERT_EQ(slice(gb[R].out, d[I], c[I]), slice(data, d[I], c[I])) << "gatherv p=" << p;
          }
        }
        EXPECT_EQ(a[R].message_rounds(), static_cast<std::size_t>(p - 1));
      }
    }
}

TEST(Schedules, AlltoallvAndReduceScatterRandomCounts) {
  for (int p = 1; p <= 20; ++p)
    for (unsigned seed = 0; seed < 4; ++seed) {
      // counts[i][j]: elements rank i sends to rank j.
      std::vector<std::vector<std::size_t>> counts;
      for (int i = 0; i < p; ++i)
        counts.push_back(random_counts(p, seed * 1000 + static_cast<unsigned>(p * 31 + i), 6));
      std::vector<schedule> plans;
      std::vector<rank_buffers> bufs(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) {
        const auto R = static_cast<std::size_t>(r);
        std::vector<std::size_t> recv(static_cast<std::size_t>(p));
        for (int i = 0; i < p; ++i)
          recv[static_cast<std::size_t>(i)] = counts[static_cast<std::size_t>(i)][R];
        plans.push_back(
            plan_alltoallv_pairwise(p, r, counts[R], prefix(counts[R]), recv, prefix(recv)));
        bufs[R].in = random_bytes(total(counts[R]), seed * 77 + R);
        bufs[R].out.resize(total(recv));
      }
      simulate(plans, bufs, sum_i64);
      for (int r = 0; r < p; ++r) {
        std::vector<std::byte> expect;
        for (int i = 0; i < p; ++i) {
          const auto& ci = counts[static_cast<std::size_t>(i)];
          const auto part =
              slice(bufs[static_cast<std::size_t>(i)].in, prefix(ci)[static_cast<std::size_t>(r)],
                    ci[static_cast<std::size_t>(r)]);
          expect.insert(expect.end(), part.begin(), part.end());
        }
        ASSERT_EQ(bufs[static_cast<std::size_t>(r)].out, expect)
            << "alltoallv p=" << p << " rank " << r;
      }
      // Reduce-scatter: matrices (rank order), counts[0] as the per-rank block sizes.
      const auto& c = counts[0];
      std::vector<std::size_t> cb(c.size());
      for (std::size_t i = 0; i < c.size(); ++i) cb[i] = c[i] * sizeof(mat2);
      std::vector<schedule> rs;
      std::vector<rank_buffers> rb(static_cast<std::size_t>(p));
      std::vector<mat2> prod(total(c), mat2{1, 0, 0, 1});
      for (int r = 0; r < p; ++r) {
        rs.push_back(plan_reduce_scatter_pairwise(p, r, cb));
        const auto m = random_mats(total(c), seed * 13 + static_cast<unsigned>(r));
        for (std::size_t i = 0; i < m.size(); ++i) prod[i] = mul(prod[i], m[i]);
        rb[static_cast<std::size_t>(r)].in = bytes_of(m);
        rb[static_cast<std::size_t>(r)].out.resize(cb[static_cast<std::size_t>(r)]);
      }
      simulate(rs, rb, mul_mat);
      const auto off = prefix(c);
      for (int r = 0; r < p; ++r) {
        const auto R = static_cast<std::size_t>(r);
        ASSERT_EQ(values_of<mat2>(rb[R].out, c[R]),
                  std::vector<mat2>(prod.begin() + static_cast<std::ptrdiff_t>(off[R]),
                                    prod.begin() + static_cast<std::ptrdiff_t>(off[R] + c[R])))
            << "reduce_scatter p=" << p << " rank " << r;
      }
    }
}
