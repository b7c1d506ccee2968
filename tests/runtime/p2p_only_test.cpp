// A point-to-point-only program: includes cairn/runtime/p2p.hpp and nothing else of cairn, and
// runs a ping-pong (typed ranges and pointers, blocking and non-blocking, probe) on either engine.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cairn/runtime/p2p.hpp"

namespace cairn::test {
// Set by the test main.
extern int argc;
extern char** argv;
}  // namespace cairn::test

namespace {

int run(void (*body)(cairn::world&)) {
  return cairn::launch(cairn::test::argc, cairn::test::argv, body);
}

// Rank 0 plays ping-pong with every other rank in turn: a count goes out and comes back
// incremented, `rounds` times per partner.
void ping_pong(cairn::world& w) {
  constexpr int rounds = 20;
  constexpr int tag = 7;
  if (w.rank() == 0) {
    for (int peer = 1; peer < w.size(); ++peer) {
      std::int64_t ball = 0;
      for (int i = 0; i < rounds; ++i) {
        w.send(&ball, 1, peer, tag);
        const cairn::status st = w.recv(&ball, 1, peer, tag);
        if (st.source != peer || st.tag != tag || st.count<std::int64_t>() != 1)
          throw cairn::error("ping-pong: wrong status");
        if (ball != 2 * i + 1) throw cairn::error("ping-pong: wrong ball");
        ++ball;
      }
    }
  } else {
    std::int64_t ball = -1;
    for (int i = 0; i < rounds; ++i) {
      w.recv(&ball, 1, 0, tag);
      ++ball;
      w.send(&ball, 1, 0, tag);
    }
  }
}

// Non-blocking ping-pong of vectors between neighbours, with a probe for the size.
void vector_ping_pong(cairn::world& w) {
  if (w.size() < 2) return;
  const int peer = w.rank() ^ 1;
  if (peer >= w.size()) return;  // the last rank of an odd world sits out
  std::vector<double> out(1000 + static_cast<std::size_t>(w.rank())), in;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(w.rank()) + 0.5 * i;
  for (int round = 0; round < 4; ++round) {
    cairn::request s = w.isend(out, peer, round);
    const cairn::status probed = w.probe(peer, round);
    in.assign(probed.count<double>(), 0.0);
    cairn::request r = w.irecv(in, peer, round);
    r.wait();
    s.wait();
    if (in.size() != 1000 + static_cast<std::size_t>(peer))
      throw cairn::error("vector ping-pong: wrong size");
    for (std::size_t i = 0; i < in.size(); ++i)
      if (in[i] != static_cast<double>(peer) + 0.5 * i)
        throw cairn::error("vector ping-pong: wrong data");
  }
}

}  // namespace

TEST(P2POnly, PingPong) { EXPECT_EQ(run(ping_pong), 0); }

TEST(P2POnly, VectorPingPongWithProbe) { EXPECT_EQ(run(vector_ping_pong), 0); }
