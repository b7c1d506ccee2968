// What a halo code wants from point-to-point, on both engines at every registered rank count:
// proc_null in every call, sendrecv and sendrecv_replace (rings of any size, chains with
// proc_null at the ends), persistent sends and receives started again and again, and their
// errors. Seeded random data against a sequential reference.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "harness.hpp"

using cairn::proc_null;
using cairn::test::random_values;
using cairn::test::run;

namespace {
int right_of(const cairn::world& w) { return (w.rank() + 1) % w.size(); }
int left_of(const cairn::world& w) { return (w.rank() + w.size() - 1) % w.size(); }
// Neighbours on a non-periodic chain: proc_null past the ends.
int chain_right(const cairn::world& w) {
  return w.rank() + 1 < w.size() ? w.rank() + 1 : proc_null;
}
int chain_left(const cairn::world& w) { return w.rank() > 0 ? w.rank() - 1 : proc_null; }

constexpr unsigned seed = 2024;

// Checks that `f` throws cairn::error whose message contains every piece of `pieces`, in order.
template <class F>
void expect_error(F&& f, const std::vector<std::string>& pieces) {
  const std::string what = cairn::test::message_of(f);
  std::size_t at = 0;
  for (const std::string& p : pieces) {
    const std::size_t found = what.find(p, at);
    ASSERT_NE(found, std::string::npos) << "message: " << what << "\nmissing: " << p;
    at = found + p.size();
  }
}

void expect_null_status(const cairn::status& st) {
  EXPECT_EQ(st.source, proc_null);
  EXPECT_EQ(st.tag, cairn::any_tag);
  EXPECT_EQ(st.bytes, 0u);
}
}  // namespace

TEST(ProcNull, EveryCallCompletesAtOnceDoingNothing) {
  run([](cairn::world& w) {
    std::vector<double> buf(100, 1.5);
    const std::vector<double> untouched = buf;
    w.send(buf, proc_null, 3);
    w.send(buf.data(), 100, proc_null);
    auto s = w.isend(buf, proc_null, 4);
    EXPECT_TRUE(s.complete());
    EXPECT_EQ(s.wait().source, proc_null);
    expect_null_status(w.recv(buf, proc_null, 5));
    expect_null_status(w.recv(buf.data(), 100, proc_null, cairn::any_tag));
    auto r = w.irecv(buf, proc_null, 6);
    EXPECT_TRUE(r.test());
    expect_null_status(r.wait());
    auto probed = w.iprobe(proc_null, 7);
    ASSERT_TRUE(probed.has_value());
    expect_null_status(*probed);
    expect_null_status(w.probe(proc_null));
    expect_null_status(w.sendrecv(buf, proc_null, 1, buf, proc_null, 1));
    expect_null_status(w.sendrecv_replace(buf, proc_null, 1, proc_null, 1));
    auto ps = w.send_init(buf, proc_null, 2);
    auto pr = w.recv_init(buf, proc_null, 2);
    for (int i = 0; i < 3; ++i) {
      ps.start();
      pr.start();
      EXPECT_TRUE(ps.test());
      expect_null_status(pr.wait());
    }
    EXPECT_EQ(buf, untouched);
    // Tags are still checked; other negative ranks are still errors.
    const std::string me = "rank " + std::to_string(w.rank());
    expect_error([&] { w.send(buf, proc_null, -1); }, {"cairn::send: " + me, "tag -1 is outside"});
    expect_error([&] { w.send(buf, -3, 0); },
                 {"cairn::send: " + me, "destination rank -3 is outside the world"});
    expect_error([&] { w.recv(buf, -3, 0); },
                 {"cairn::recv: " + me, "source rank -3 is outside the world"});
    w.send(std::span<double>(buf).first(0), proc_null);  // an empty message to nobody
  });
}

// A non-periodic chain exchanges halos of width h with sendrecv (proc_null at the ends), then
// applies a (2h+1)-point sum; the result equals the sum over the global array, computed here
// sequentially from every rank's seeded data (zero outside the chain).
TEST(SendRecv, ChainHaloAgainstSequentialStencil) {
  run([](cairn::world& w) {
    const int n = w.size(), me = w.rank();
    for (std::size_t h : {std::size_t{1}, std::size_t{100}, std::size_t{3000}}) {
      auto local_size = [&](int r) { return 2 * h + static_cast<std::size_t>(r % 3); };
      const std::size_t len = local_size(me);
      // u = [left halo | interior | right halo]; halos stay 0 at the chain's ends.
      std::vector<double> u(len + 2 * h, 0.0);
      const auto mine = random_values<double>(len, seed, static_cast<unsigned>(me) + 100 * h);
      std::copy(mine.begin(), mine.end(), u.begin() + static_cast<std::ptrdiff_t>(h));
      std::span<double> all(u);
      // Rightward: my last h interior values to the right, the left's into my left halo.
      auto st = w.sendrecv(all.subspan(len, h), chain_right(w), 1, all.first(h), chain_left(w), 1);
      if (me == 0)
        EXPECT_EQ(st.source, proc_null);
      else
        EXPECT_EQ(st.count<double>(), h);
      // Leftward.
      st = w.sendrecv(all.subspan(h, h), chain_left(w), 2, all.last(h), chain_right(w), 2);
      EXPECT_EQ(st.source, chain_right(w));
      // The stencil on this rank's part.
      std::vector<double> got(len);
      for (std::size_t i = 0; i < len; ++i) {
        double sum = 0;
        for (std::size_t k = 0; k <= 2 * h; ++k) sum += u[i + k];
        got[i] = sum;
      }
      // Sequential reference on the global array.
      std::vector<double> global;
      std::size_t offset = 0;
      for (int r = 0; r < n; ++r) {
        if (r == me) offset = global.size();
        const auto part =
            random_values<double>(local_size(r), seed, static_cast<unsigned>(r) + 100 * h);
        global.insert(global.end(), part.begin(), part.end());
      }
      std::vector<double> padded(h, 0.0);
      padded.insert(padded.end(), global.begin(), global.end());
      padded.insert(padded.end(), h, 0.0);
      std::vector<double> want(len);
      for (std::size_t i = 0; i < len; ++i) {
        double sum = 0;
        for (std::size_t k = 0; k <= 2 * h; ++k) sum += padded[offset + i + k];
        want[i] = sum;
      }
      EXPECT_EQ(got, want) << "halo width " << h;
    }
  });
}

// A periodic ring (1 rank: a send to itself; 2 ranks: both neighbours are the same rank), with
// messages of different sizes into larger receive buffers, wildcards, and the pointer form.
TEST(SendRecv, RingOfAnySize) {
  run([](cairn::world& w) {
    const int me = w.rank(), right = right_of(w), left = left_of(w);
    auto size_of = [](int r, int round) -> std::size_t {
      const std::size_t sizes[] = {0, 1, 7, 512, 4097, 30000};
      return sizes[static_cast<std::size_t>(r * 5 + round) % std::size(sizes)];
    };
    for (int round = 0; round < 6; ++round) {
      const auto out = random_values<std::int32_t>(size_of(me, round), seed + 1,
                                                   static_cast<unsigned>(me * 10 + round));
      std::vector<std::int32_t> in(30001, -1);  // one past the largest
      const cairn::status st =
          round % 2 == 0 ? w.sendrecv(out, right, round, in, left, round)
                         : w.sendrecv(out.data(), static_cast<std::int64_t>(out.size()), right,
                                      round, in.data(), static_cast<std::int64_t>(in.size()),
                                      cairn::any_source, cairn::any_tag);
      const auto want = random_values<std::int32_t>(size_of(left, round), seed + 1,
                                                    static_cast<unsigned>(left * 10 + round));
      EXPECT_EQ(st.source, left);
      EXPECT_EQ(st.tag, round);
      ASSERT_EQ(st.count<std::int32_t>(), want.size());
      EXPECT_TRUE(std::equal(want.begin(), want.end(), in.begin()));
      EXPECT_EQ(in[want.size()], -1);  // nothing past the message
    }
    // Explicitly to itself.
    const auto own = random_values<double>(5000, seed + 2, static_cast<unsigned>(me));
    std::vector<double> back(5000);
    const auto st = w.sendrecv(own, me, 9, back, me, 9);
    EXPECT_EQ(st.source, me);
    EXPECT_EQ(back, own);
  });
}

// sendrecv_replace: each round shifts every rank's buffer one step around the ring; the message
// received is exactly as large as the buffer (short and long protocols).
TEST(SendRecvReplace, RingShiftsEveryRound) {
  run([](cairn::world& w) {
    const int n = w.size(), me = w.rank(), right = right_of(w), left = left_of(w);
    for (std::size_t len : {std::size_t{0}, std::size_t{3}, std::size_t{64}, std::size_t{20000}}) {
      auto buf = random_values<double>(len, seed + 3, static_cast<unsigned>(me));
      for (int round = 1; round <= 4; ++round) {
        const auto st = round % 2 ? w.sendrecv_replace(buf, right, round, left, round)
                                  : w.sendrecv_replace(buf.data(), static_cast<std::int64_t>(len),
                                                       right, round, left, cairn::any_tag);
        EXPECT_EQ(st.source, left);
        EXPECT_EQ(st.count<double>(), len);
        const int origin = ((me - round) % n + n) % n;
        EXPECT_EQ(buf, random_values<double>(len, seed + 3, static_cast<unsigned>(origin)))
            << "length " << len << ", round " << round;
      }
    }
  });
}

// On a chain: rank 0 receives nothing (keeps its data), the last rank sends nothing; receives
// smaller than the buffer leave its tail alone.
TEST(SendRecvReplace, ChainWithProcNullAndShorterMessages) {
  run([](cairn::world& w) {
    const int me = w.rank();
    auto len_of = [](int r) { return static_cast<std::size_t>(1000 + 3000 * r); };  // grows
    const auto mine = random_values<std::int64_t>(len_of(me), seed + 4, static_cast<unsigned>(me));
    auto buf = mine;
    const auto st = w.sendrecv_replace(buf, chain_right(w), 8, chain_left(w), 8);
    if (me == 0) {
      expect_null_status(st);
      EXPECT_EQ(buf, mine);
    } else {
      const auto from_left =
          random_values<std::int64_t>(len_of(me - 1), seed + 4, static_cast<unsigned>(me - 1));
      ASSERT_EQ(st.count<std::int64_t>(), from_left.size());
      EXPECT_TRUE(std::equal(from_left.begin(), from_left.end(), buf.begin()));
      EXPECT_TRUE(std::equal(mine.begin() + static_cast<std::ptrdiff_t>(from_left.size()),
                             mine.end(),
                             buf.begin() + static_cast<std::ptrdiff_t>(from_left.size())));
    }
  });
}

// Persistent send and receive around the ring, started 10 times with new data each time,
// waited for with wait(), test() loops and wait_all; mixed with ordinary calls on the peer.
TEST(Persistent, RingRepeatedWithNewData) {
  run([](cairn::world& w) {
    const int me = w.rank(), right = right_of(w), left = left_of(w);
    for (std::size_t len : {std::size_t{1}, std::size_t{1000}, std::size_t{20000}}) {
      std::vector<float> out(len), in(len);
      auto send = w.send_init(out, right, 7);
      auto recv = w.recv_init(in, left, 7);
      EXPECT_TRUE(send.is_send());
      EXPECT_FALSE(recv.is_send());
      for (int it = 0; it < 10; ++it) {
        const auto data = random_values<float>(len, seed + 5, static_cast<unsigned>(me * 100 + it));
        std::copy(data.begin(), data.end(), out.begin());
        recv.start();
        EXPECT_TRUE(recv.active());
        send.start();
        if (it % 3 == 0) {
          while (!recv.test()) {
          }
          send.wait();
        } else if (it % 3 == 1) {
          std::vector<cairn::persistent_p2p> both;  // wait_all over handles moved in and back
          both.push_back(std::move(send));
          both.push_back(std::move(recv));
          cairn::wait_all(both);
          send = std::move(both[0]);
          recv = std::move(both[1]);
        } else {
          send.wait();
          recv.wait();
        }
        EXPECT_FALSE(recv.active());
        EXPECT_EQ(recv.last_status().source, left);
        EXPECT_EQ(recv.last_status().count<float>(), len);
        EXPECT_EQ(in, random_values<float>(len, seed + 5, static_cast<unsigned>(left * 100 + it)))
            << "length " << len << ", iteration " << it;
      }
    }
    // Persistent receive matched by ordinary sends, pointer forms, start_all.
    std::vector<std::uint16_t> a(300), b(300);
    std::vector<cairn::persistent_p2p> ops;
    ops.push_back(w.recv_init(b.data(), 300, left, 11));
    ops.push_back(w.send_init(a.data(), 300, right, 12));
    for (int it = 0; it < 10; ++it) {
      const auto data =
          random_values<std::uint16_t>(300, seed + 6, static_cast<unsigned>(me * 100 + it));
      std::copy(data.begin(), data.end(), a.begin());
      cairn::start_all(ops);
      w.send(a, right, 11);
      std::vector<std::uint16_t> c(300);
      w.recv(c, left, 12);
      cairn::wait_all(ops);
      const auto want =
          random_values<std::uint16_t>(300, seed + 6, static_cast<unsigned>(left * 100 + it));
      EXPECT_EQ(b, want);
      EXPECT_EQ(c, want);
    }
  });
}

// A non-periodic chain of persistent halo exchanges (proc_null at the ends), 10 times.
TEST(Persistent, ChainWithProcNull) {
  run([](cairn::world& w) {
    const int me = w.rank();
    std::vector<std::int32_t> edge(50), halo(50, -7);
    std::vector<cairn::persistent_p2p> ops;
    ops.push_back(w.recv_init(halo, chain_left(w), 1));
    ops.push_back(w.send_init(edge, chain_right(w), 1));
    for (int it = 0; it < 10; ++it) {
      const auto data =
          random_values<std::int32_t>(50, seed + 7, static_cast<unsigned>(me * 10 + it));
      std::copy(data.begin(), data.end(), edge.begin());
      cairn::start_all(ops);
      cairn::wait_all(ops);
      if (me == 0) {
        EXPECT_EQ(halo, std::vector<std::int32_t>(50, -7));
        EXPECT_EQ(ops[0].last_status().source, proc_null);
      } else {
        EXPECT_EQ(halo, random_values<std::int32_t>(50, seed + 7,
                                                    static_cast<unsigned>((me - 1) * 10 + it)));
      }
    }
  });
}

TEST(Errors, BadPeersNameTheCallRankAndValue) {
  run([](cairn::world& w) {
    const std::string me = "rank " + std::to_string(w.rank());
    const std::string n = std::to_string(w.size());
    std::vector<int> a(4), b(4);
    expect_error(
        [&] { w.sendrecv(a, w.size(), 0, b, 0, 0); },
        {"cairn::sendrecv: " + me, "destination rank " + n + " is outside the world of " + n});
    expect_error([&] { w.sendrecv(a, 0, 0, b, -7, 0); },
                 {"cairn::sendrecv: " + me, "source rank -7 is outside the world of " + n});
    expect_error([&] { w.sendrecv(a, 0, -4, b, 0, 0); }, {"cairn::sendrecv: " + me, "tag -4"});
    expect_error([&] { w.sendrecv(a.data(), -1, 0, 0, b.data(), 4, 0, 0); },
                 {"cairn::sendrecv: " + me, "negative count -1"});
    expect_error([&] { w.sendrecv_replace(a, -5, 0, 0, 0); },
                 {"cairn::sendrecv_replace: " + me, "destination rank -5"});
    expect_error([&] { w.sendrecv_replace(a, 0, 0, w.size() + 2, 0); },
                 {"cairn::sendrecv_replace: " + me, "source rank " + std::to_string(w.size() + 2)});
    expect_error([&] { (void)w.send_init(a, w.size(), 0); },
                 {"cairn::send_init: " + me, "destination rank " + n});
    expect_error([&] { (void)w.recv_init(b, -3, 0); },
                 {"cairn::recv_init: " + me, "source rank -3"});
    // (Not tag_ub() + 1: the threads engine's tag_ub is INT_MAX.)
    expect_error([&] { (void)w.recv_init(b, 0, -7); }, {"cairn::recv_init: " + me, "tag -7"});
    expect_error([&] { (void)w.isend(a, -3, 0); }, {"cairn::isend: " + me, "destination rank -3"});
    expect_error([&] { (void)w.irecv(b, -3, 0); }, {"cairn::irecv: " + me, "source rank -3"});
    cairn::persistent_p2p empty;
    expect_error([&] { empty.start(); }, {"cairn::persistent_p2p::start: empty handle"});
    EXPECT_TRUE(empty.test());
    // Nothing was sent by the failed calls: the run ends with no unreceived message.
  });
}

TEST(Errors, SendRecvIntoTooSmallBuffers) {
  run([](cairn::world& w) {
    const int me = w.rank(), right = right_of(w), left = left_of(w);
    const std::string rank = "rank " + std::to_string(me);
    for (std::size_t len : {std::size_t{100}, std::size_t{50000}}) {  // short and long protocol
      std::vector<std::int32_t> out(len, 7), in(10, -1);
      expect_error([&] { w.sendrecv(out, right, 2, in, left, 2); },
                   {"cairn::sendrecv: " + rank, "message of " + std::to_string(len * 4) +
                                                    " bytes from rank " + std::to_string(left) +
                                                    " (tag 2) does not fit the receive buffer of "
                                                    "40 bytes"});
      EXPECT_EQ(in, std::vector<std::int32_t>(10, -1));  // nothing written
    }
    // sendrecv_replace: buffers grow with the rank, so only rank 0 (receiving from the last
    // rank) gets a message larger than its buffer.
    std::vector<std::int32_t> buf(10 + static_cast<std::size_t>(me), me);
    if (me == 0 && w.size() > 1) {
      expect_error(
          [&] { w.sendrecv_replace(buf, right, 3, left, 3); },
          {"cairn::sendrecv_replace: " + rank, "message of " + std::to_string((10 + left) * 4) +
                                                   " bytes from rank " + std::to_string(left)});
    } else {
      const auto st = w.sendrecv_replace(buf, right, 3, left, 3);
      EXPECT_EQ(st.count<std::int32_t>(), 10u + static_cast<std::size_t>(left));
    }
    // A persistent receive started twice; then completed.
    std::vector<int> x(3, me), y(3);
    auto r = w.recv_init(y, left, 4);
    r.start();
    expect_error([&] { r.start(); },
                 {"cairn::recv_init: " + rank, "start() while the previous start"});
    w.send(x, right, 4);
    r.wait();
    EXPECT_EQ(y, std::vector<int>(3, left));
    // Persistent receive too small: the error comes from wait(), and the handle can start again.
    std::vector<int> big(8, me), small(2, -1);
    auto rs = w.recv_init(small, left, 5);
    for (int it = 0; it < 2; ++it) {
      rs.start();
      w.send(big, right, 5);
      expect_error([&] { rs.wait(); },
                   {"cairn::recv_init: " + rank, "32 bytes", "receive buffer of 8 bytes"});
      EXPECT_FALSE(rs.active());
    }
  });
}
