// Point-to-point on both engines: matching, ordering, wildcards, sizes, many outstanding
// requests, probes, errors. Every test runs at every registered rank count.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>

#include "harness.hpp"

using cairn::test::random_values;
using cairn::test::run;

namespace {
int right_of(const cairn::world& w) { return (w.rank() + 1) % w.size(); }
int left_of(const cairn::world& w) { return (w.rank() + w.size() - 1) % w.size(); }

// Message size for the pair (src, dst): spans zero, short (eager) and long protocols.
std::size_t pair_size(int src, int dst) {
  std::mt19937 g(static_cast<unsigned>(src * 7919 + dst));
  const std::size_t choices[] = {0, 1, 7, 64, 4095, 4096, 4097, 20000, 100000};
  return choices[g() % std::size(choices)];
}
}  // namespace

TEST(P2P, RingExchange) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    auto mine = random_values<double>(1000, 1, static_cast<unsigned>(w.rank()));
    std::vector<double> got(1000);
    auto r = w.irecv(got, left, 5);
    w.send(mine, right, 5);
    auto st = r.wait();
    EXPECT_EQ(st.source, left);
    EXPECT_EQ(st.tag, 5);
    EXPECT_EQ(st.count<double>(), 1000u);
    EXPECT_EQ(got, random_values<double>(1000, 1, static_cast<unsigned>(left)));
  });
}

TEST(P2P, AllPairsMixedSizes) {
  run([](cairn::world& w) {
    const int n = w.size(), me = w.rank();
    std::vector<std::vector<std::uint8_t>> in(static_cast<std::size_t>(n));
    std::vector<cairn::request> reqs;
    for (int src = 0; src < n; ++src) {
      in[static_cast<std::size_t>(src)].resize(pair_size(src, me));
      reqs.push_back(w.irecv(in[static_cast<std::size_t>(src)], src, 9));
    }
    std::vector<std::vector<std::uint8_t>> out(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      const int dst = (me + k) % n;  // staggered so that not everyone hits rank 0 first
      out[static_cast<std::size_t>(dst)] =
          random_values<std::uint8_t>(pair_size(me, dst), 2, static_cast<unsigned>(me * n + dst));
      reqs.push_back(w.isend(out[static_cast<std::size_t>(dst)], dst, 9));
    }
    cairn::wait_all(reqs);
    for (int src = 0; src < n; ++src) {
      EXPECT_EQ(
          in[static_cast<std::size_t>(src)],
          random_values<std::uint8_t>(pair_size(src, me), 2, static_cast<unsigned>(src * n + me)))
          << "from " << src;
      EXPECT_EQ(reqs[static_cast<std::size_t>(src)].last_status().bytes, pair_size(src, me));
    }
  });
}

// MPI's non-overtaking rule: two messages from one sender with one tag are received in the
// order sent, whatever their sizes (short and long protocols interleaved).
TEST(P2P, NonOvertakingPerSourceAndTag) {
  run([](cairn::world& w) {
    const int n = w.size(), me = w.rank();
    constexpr int per_peer = 200;
    auto size_of = [](int i) -> std::size_t { return i % 3 == 0 ? 6000 : 16; };
    std::vector<std::vector<std::uint32_t>> bufs;
    std::vector<cairn::request> sends;
    for (int i = 0; i < per_peer; ++i)
      for (int dst = 0; dst < n; ++dst) {
        bufs.emplace_back(size_of(i) / 4, static_cast<std::uint32_t>(i));
        sends.push_back(w.isend(bufs.back(), dst, 4));
      }
    // Even ranks receive per source, odd ranks with any_source: both must see each source's
    // messages in sending order.
    std::vector<int> next(static_cast<std::size_t>(n), 0);
    std::vector<std::uint32_t> got(6000 / 4);
    for (int k = 0; k < per_peer * n; ++k) {
      const int src = me % 2 == 0 ? k % n : cairn::any_source;
      auto st = w.recv(got, src, 4);
      int& expect = next[static_cast<std::size_t>(st.source)];
      ASSERT_EQ(st.bytes, size_of(expect));
      ASSERT_EQ(got[0], static_cast<std::uint32_t>(expect)) << "from " << st.source;
      ++expect;
    }
    cairn::wait_all(sends);
  });
}

// Many messages from every rank wait unexpected at rank 0, of sizes in every envelope class of
// the threads engine (and both protocols): a receive by source and tag out of sending order
// finds its message among them; any-source, any-tag receives then see each source's remaining
// messages in sending order, and a probe sees the oldest of some source.
TEST(P2P, ManyUnexpectedMessagesFromEverySource) {
  run([](cairn::world& w) {
    const int n = w.size(), me = w.rank();
    constexpr int per_source = 300, tags = 5;
    const std::size_t sizes[] = {0, 8, 64, 65, 1000, 1025, 4096, 5000};
    auto size_of = [&](int src, int i) {
      return sizes[static_cast<std::size_t>(src + i) % std::size(sizes)];
    };
    auto payload = [&](int src, int i) {
      return random_values<std::uint8_t>(size_of(src, i), 31,
                                         static_cast<unsigned>(src * per_source + i));
    };
    std::vector<std::vector<std::uint8_t>> bufs;
    bufs.reserve(per_source);  // the sends read from these until they complete
    std::vector<cairn::request> sends;
    if (me != 0)
      for (int i = 0; i < per_source; ++i) {
        bufs.push_back(payload(me, i));
        sends.push_back(w.isend(bufs.back(), 0, i % tags));
      }
    w.barrier();  // every message is on its way before rank 0 receives
    if (me == 0 && n > 1) {
      std::vector<std::uint8_t> got(5000);
      for (int src = n - 1; src >= 1; --src) {
        const auto st = w.recv(got, src, 3);
        ASSERT_EQ(st.bytes, size_of(src, 3));  // the first message of tag 3
        EXPECT_TRUE(std::equal(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(st.bytes),
                               payload(src, 3).begin()));
      }
      const auto probed = w.iprobe(cairn::any_source, cairn::any_tag);
      ASSERT_TRUE(probed.has_value());
      EXPECT_EQ(probed->tag, 0);
      EXPECT_EQ(probed->bytes, size_of(probed->source, 0));
      std::vector<int> next(static_cast<std::size_t>(n), 0);
      for (int k = 0; k < (n - 1) * (per_source - 1); ++k) {
        const auto st = w.recv(got, cairn::any_source, cairn::any_tag);
        int& i = next[static_cast<std::size_t>(st.source)];
        if (i == 3) ++i;  // received above
        ASSERT_EQ(st.tag, i % tags) << "from " << st.source;
        ASSERT_EQ(st.bytes, size_of(st.source, i)) << "from " << st.source << ", message " << i;
        ASSERT_TRUE(std::equal(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(st.bytes),
                               payload(st.source, i).begin()))
            << "from " << st.source << ", message " << i;
        ++i;
      }
    }
    cairn::wait_all(sends);
  });
}

TEST(P2P, WildcardSource) {
  run([](cairn::world& w) {
    if (w.rank() != 0) {
      int mine = w.rank() * 10;
      w.send(&mine, 1, 0, 3);
      return;
    }
    std::set<int> seen;
    for (int k = 1; k < w.size(); ++k) {
      int v = -1;
      auto st = w.recv(&v, 1, cairn::any_source, 3);
      EXPECT_EQ(v, st.source * 10);
      EXPECT_EQ(st.tag, 3);
      EXPECT_EQ(st.bytes, sizeof(int));
      seen.insert(st.source);
    }
    EXPECT_EQ(static_cast<int>(seen.size()), w.size() - 1);
  });
}

TEST(P2P, AnyTagAndTagSelection) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    std::vector<cairn::request> sends;
    int vals[3] = {101, 102, 103};
    for (int t = 0; t < 3; ++t) sends.push_back(w.isend(&vals[t], 1, right, 101 + t));
    // Receive out of sending order by tag, then with any_tag.
    int v = 0;
    EXPECT_EQ(w.recv(&v, 1, left, 103).tag, 103);
    EXPECT_EQ(v, 103);
    auto st = w.recv(&v, 1, left, cairn::any_tag);
    EXPECT_EQ(st.tag, 101);  // the oldest remaining message
    EXPECT_EQ(v, 101);
    st = w.recv(&v, 1, cairn::any_source, cairn::any_tag);
    EXPECT_EQ(st.tag, 102);
    EXPECT_EQ(st.source, left);
    cairn::wait_all(sends);
  });
}

TEST(P2P, TenThousandOutstandingRequests) {
  run([](cairn::world& w) {
    constexpr int k = 10000;
    const int right = right_of(w), left = left_of(w);
    std::vector<int> in(k, -1), out(k);
    std::iota(out.begin(), out.end(), w.rank() * k);
    std::vector<cairn::request> reqs;
    reqs.reserve(2 * k);
    // Half the receives are posted before the sends, half after (the unexpected path).
    for (int i = 0; i < k / 2; ++i)
      reqs.push_back(w.irecv(&in[static_cast<std::size_t>(i)], 1, left, i));
    for (int i = k; i-- > 0;)
      reqs.push_back(w.isend(&out[static_cast<std::size_t>(i)], 1, right, i));
    for (int i = k / 2; i < k; ++i)
      reqs.push_back(w.irecv(&in[static_cast<std::size_t>(i)], 1, left, i));
    cairn::wait_all(reqs);
    for (int i = 0; i < k; ++i) ASSERT_EQ(in[static_cast<std::size_t>(i)], left * k + i);
  });
}

TEST(P2P, ZeroBytes) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    std::vector<char> empty;
    std::vector<char> room(16, 'x');
    auto r1 = w.irecv(empty, left, 1);
    auto r2 = w.irecv(room, left, 2);
    w.send(empty, right, 1);
    w.send(std::vector<char>{}, right, 2);
    EXPECT_EQ(r1.wait().bytes, 0u);
    EXPECT_EQ(r2.wait().bytes, 0u);
    EXPECT_EQ(room, std::vector<char>(16, 'x'));
  });
}

TEST(P2P, SixtyFourMiB) {
  run([](cairn::world& w) {
    const std::size_t n = (64u << 20) / sizeof(std::uint64_t);
    const int last = w.size() - 1;
    if (w.rank() != 0 && w.rank() != last) return;
    std::vector<std::uint64_t> in, out;
    cairn::request r;
    if (w.rank() == last) {
      in.assign(n, 0);
      r = w.irecv(in, 0, 64);
    }
    if (w.rank() == 0) {
      out.resize(n);
      for (std::size_t i = 0; i < n; ++i) out[i] = i * 0x9E3779B97F4A7C15ull;
      w.send(out, last, 64);
    }
    if (w.rank() == last) {
      EXPECT_EQ(r.wait().bytes, 64u << 20);
      for (std::size_t i = 0; i < n; i += 4099) ASSERT_EQ(in[i], i * 0x9E3779B97F4A7C15ull);
      EXPECT_EQ(in[n - 1], (n - 1) * 0x9E3779B97F4A7C15ull);
    }
  });
}

TEST(P2P, SelfSends) {
  run([](cairn::world& w) {
    const int me = w.rank();
    for (std::size_t size :
         {std::size_t{0}, std::size_t{8}, std::size_t{5000}, std::size_t{1} << 20}) {
      auto out = random_values<std::uint8_t>(size, 3, size);
      std::vector<std::uint8_t> in(size);
      auto r = w.irecv(in, me, 7);  // posted first
      w.send(out, me, 7);
      r.wait();
      EXPECT_EQ(in, out);
      std::vector<std::uint8_t> in2(size);
      auto s = w.isend(out, me, 8);  // sent first
      w.recv(in2, me, 8);
      s.wait();
      EXPECT_EQ(in2, out);
    }
  });
}

// Receive buffers that start 1..63 bytes after the send buffer modulo a page: the case where
// glibc's memcpy is slow on AMD and the engines copy with their own loop (transport/copy_bytes).
// Sizes leave tails shorter than the loop's 64-byte stride; bytes either side must stay untouched.
TEST(P2P, SelfSendsAtPageDistances) {
  run([](cairn::world& w) {
    const int me = w.rank();
    for (std::size_t size :
         {std::size_t{2047}, std::size_t{2048}, std::size_t{4097}, std::size_t{65536 + 61}}) {
      for (std::size_t shift : {0, 1, 16, 63, 64, 2048}) {
        const std::size_t pages = (size + 1 + 4095) / 4096 * 4096;  // out, then at least a byte gap
        std::vector<std::uint8_t> storage(4096 + pages + shift + size + 1, 0xA5);
        std::uint8_t* out =
            storage.data() + (4096 - reinterpret_cast<std::uintptr_t>(storage.data()) % 4096);
        std::uint8_t* in = out + pages + shift;  // distance `shift` modulo a page
        const auto data = random_values<std::uint8_t>(size, 4, size + shift);
        std::copy(data.begin(), data.end(), out);
        auto r = w.irecv(std::span<std::uint8_t>(in, size), me, 11);
        w.send(std::span<const std::uint8_t>(out, size), me, 11);
        r.wait();
        ASSERT_TRUE(std::equal(data.begin(), data.end(), in))
            << "size " << size << ", shift " << shift;
        EXPECT_EQ(in[-1], 0xA5) << "size " << size << ", shift " << shift;
        EXPECT_EQ(in[size], 0xA5) << "size " << size << ", shift " << shift;
      }
    }
  });
}

TEST(P2P, ProbeThenReceive) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    auto out = random_values<std::int32_t>(static_cast<std::size_t>(17 + w.rank() * 1000), 4,
                                           static_cast<unsigned>(w.rank()));
    auto s = w.isend(out, right, 11);
    auto st = w.probe(left, 11);
    EXPECT_EQ(st.source, left);
    std::vector<std::int32_t> in(st.count<std::int32_t>());
    EXPECT_EQ(in.size(), static_cast<std::size_t>(17 + left * 1000));
    auto again = w.iprobe(cairn::any_source, 11);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->bytes, st.bytes);
    w.recv(in, st.source, st.tag);
    EXPECT_EQ(in, random_values<std::int32_t>(in.size(), 4, static_cast<unsigned>(left)));
    EXPECT_FALSE(w.iprobe(left, 11).has_value());
    s.wait();
  });
}

TEST(P2P, WaitAnyAndTest) {
  run([](cairn::world& w) {
    if (w.rank() != 0) {
      double v = w.rank() + 0.5;
      w.send(&v, 1, 0, 2);
      return;
    }
    const int n = w.size();
    std::vector<double> in(static_cast<std::size_t>(n));
    std::vector<cairn::request> reqs;
    for (int src = 1; src < n; ++src)
      reqs.push_back(w.irecv(&in[static_cast<std::size_t>(src)], 1, src, 2));
    std::set<std::size_t> done;
    for (int k = 1; k < n; ++k) {
      cairn::status st;
      const std::size_t i = cairn::wait_any(reqs, &st);
      ASSERT_LT(i, reqs.size());
      EXPECT_TRUE(done.insert(i).second);
      EXPECT_EQ(st.source, static_cast<int>(i) + 1);
      EXPECT_EQ(in[i + 1], static_cast<double>(i + 1) + 0.5);
    }
    EXPECT_EQ(cairn::wait_any(reqs), reqs.size());  // nothing pending any more
    EXPECT_TRUE(cairn::test_all(reqs));
    // test() polls until completion.
    double v = 0, self = 4.25;
    auto r = w.irecv(&v, 1, 0, 3);
    EXPECT_FALSE(r.test());
    w.send(&self, 1, 0, 3);
    while (!r.test()) {
    }
    EXPECT_EQ(v, 4.25);
    EXPECT_TRUE(r.complete());
  });
}

TEST(P2P, Topology) {
  run([](cairn::world& w) {
    EXPECT_GE(w.node_count(), 1);
    EXPECT_LT(w.local_rank(), w.ranks_on_node());
    int same = 0;
    for (int r = 0; r < w.size(); ++r) {
      EXPECT_GE(w.node_of(r), 0);
      EXPECT_LT(w.node_of(r), w.node_count());
      same += w.node_of(r) == w.node();
    }
    EXPECT_EQ(same, w.ranks_on_node());
    EXPECT_EQ(w.node_of(0), 0);
    EXPECT_GE(w.tag_ub(), 32767);
    // Under CAIRN_NODES=k (the mpi.2x2 runs, on one host): k blocks of consecutive ranks.
    if (const char* k = std::getenv("CAIRN_NODES")) {
      const int nodes = std::atoi(k);
      EXPECT_EQ(w.node_count(), nodes);
      EXPECT_EQ(w.node(), w.rank() * nodes / w.size());
    }
  });
  // The threads engine can pretend to span several nodes (blocks of consecutive ranks).
  for (int nodes : {1, 2, 3}) {
    EXPECT_EQ(cairn::launch(cairn::test::argc, cairn::test::argv,
                            {.engine = cairn::engine::threads, .ranks = 7, .threads_nodes = nodes},
                            [&](cairn::world& w) {
                              EXPECT_EQ(w.node_count(), nodes);
                              const int expect_node = w.rank() * nodes / 7;
                              EXPECT_EQ(w.node(), expect_node);
                              int first = 0;
                              while (first * nodes / 7 != expect_node) ++first;
                              EXPECT_EQ(w.local_rank(), w.rank() - first);
                            }),
              0);
  }
}

// A long stream of messages of random sizes between one pair: fills and wraps the threads
// engine's rings (records of 1 to 16 cells, padding at the ring's end) and overflows them into
// the inbox while the receiver lags, with eager and long messages mixed in. Order and content
// must survive.
TEST(P2P, StreamOfMixedSizesInOrder) {
  run([](cairn::world& w) {
    constexpr int count = 6000;
    const int right = right_of(w), left = left_of(w);
    auto size_of = [](int src, int i) {
      std::mt19937 g(static_cast<unsigned>(src * 100003 + i));
      const unsigned pick = g() % 100;
      if (pick < 80) return static_cast<std::size_t>(g() % 1000);         // ring records
      if (pick < 97) return static_cast<std::size_t>(1000 + g() % 3000);  // eager envelopes
      return static_cast<std::size_t>(5000 + g() % 20000);                // long messages
    };
    auto fill = [](std::vector<std::uint8_t>& v, int src, int i) {
      for (std::size_t k = 0; k < v.size(); ++k)
        v[k] = static_cast<std::uint8_t>(src * 31 + i * 7 + k);
    };
    std::vector<std::vector<std::uint8_t>> out(count);
    std::vector<cairn::request> sends;
    for (int i = 0; i < count; ++i) {
      out[static_cast<std::size_t>(i)].resize(size_of(w.rank(), i));
      fill(out[static_cast<std::size_t>(i)], w.rank(), i);
      sends.push_back(w.isend(out[static_cast<std::size_t>(i)], right, 6));
    }
    std::vector<std::uint8_t> in(25000), expect;
    for (int i = 0; i < count; ++i) {
      const auto st = w.recv(in, left, 6);
      expect.resize(size_of(left, i));
      fill(expect, left, i);
      ASSERT_EQ(st.bytes, expect.size()) << "message " << i;
      ASSERT_TRUE(std::equal(expect.begin(), expect.end(), in.begin())) << "message " << i;
    }
    cairn::wait_all(sends);
  });
}

// Many ranks all talking to each other (smaller rings per pair on the threads engine).
TEST(P2P, AllToAllAtFortyRanks) {
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  o.ranks = 40;
  EXPECT_EQ(cairn::launch(
                cairn::test::argc, cairn::test::argv, o,
                [](cairn::world& w) {
                  const int n = w.size();
                  std::vector<std::vector<std::uint8_t>> in(static_cast<std::size_t>(n)),
                      out(static_cast<std::size_t>(n));
                  std::vector<cairn::request> reqs;
                  for (int round = 0; round < 3; ++round) {
                    reqs.clear();
                    for (int src = 0; src < n; ++src) {
                      in[static_cast<std::size_t>(src)].assign(
                          pair_size(src, w.rank()) / 4 + static_cast<std::size_t>(round), 0);
                      reqs.push_back(w.irecv(in[static_cast<std::size_t>(src)], src, round));
                    }
                    for (int k = 0; k < n; ++k) {
                      const int dst = (w.rank() + k) % n;
                      out[static_cast<std::size_t>(dst)] = random_values<std::uint8_t>(
                          pair_size(w.rank(), dst) / 4 + static_cast<std::size_t>(round), 5,
                          static_cast<unsigned>(w.rank() * n + dst + round));
                      reqs.push_back(w.isend(out[static_cast<std::size_t>(dst)], dst, round));
                    }
                    cairn::wait_all(reqs);
                    for (int src = 0; src < n; ++src)
                      ASSERT_EQ(in[static_cast<std::size_t>(src)],
                                random_values<std::uint8_t>(
                                    pair_size(src, w.rank()) / 4 + static_cast<std::size_t>(round),
                                    5, static_cast<unsigned>(src * n + w.rank() + round)));
                  }
                }),
            0);
}
