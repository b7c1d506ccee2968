// Bad input raises cairn::error naming the call, the rank and the values, before anything is
// sent; a too-small receive buffer is an error, never a silent truncation.
#include <climits>

#include "harness.hpp"

using cairn::test::run;

namespace {
// Runs `f` and checks that it throws cairn::error whose message contains the pieces of
// `pattern` separated by "*", in that order.
template <class F>
void expect_error(F&& f, const std::string& pattern) {
  try {
    f();
    ADD_FAILURE() << "no cairn::error thrown; expected '" << pattern << "'";
  } catch (const cairn::error& e) {
    const std::string what = e.what();
    std::size_t at = 0, from = 0;
    bool ok = true;
    while (ok && from <= pattern.size()) {
      const std::size_t star = std::min(pattern.find('*', from), pattern.size());
      const std::string piece = pattern.substr(from, star - from);
      const std::size_t found = what.find(piece, at);
      ok = found != std::string::npos;
      at = found + piece.size();
      from = star + 1;
    }
    EXPECT_TRUE(ok) << "message: " << what << "\npattern: " << pattern;
  }
}
}  // namespace

TEST(Errors, RankOutOfRange) {
  run([](cairn::world& w) {
    const std::string me = "rank " + std::to_string(w.rank());
    const std::string n = std::to_string(w.size());
    int v = 0;
    expect_error(
        [&] { w.isend(&v, 1, w.size(), 0); },
        "cairn::isend: " + me + ": destination rank " + n + " is outside the world of " + n);
    expect_error([&] { w.send(&v, 1, -1, 0); }, "cairn::send: " + me + ": destination rank -1");
    expect_error([&] { w.irecv(&v, 1, w.size() + 3, 0); },
                 "cairn::irecv: " + me + ": source rank " + std::to_string(w.size() + 3));
    expect_error([&] { w.recv(&v, 1, -7, 0); }, "cairn::recv: " + me + ": source rank -7");
    expect_error([&] { (void)w.node_of(w.size()); }, "cairn::node_of: " + me + ": rank " + n);
    expect_error([&] { (void)w.iprobe(w.size(), 0); }, "cairn::iprobe: " + me);
  });
}

TEST(Errors, BadTags) {
  run([](cairn::world& w) {
    int v = 0;
    expect_error([&] { w.isend(&v, 1, 0, -3); }, "cairn::isend: rank *: tag -3 is outside");
    expect_error([&] { w.isend(&v, 1, 0, cairn::any_tag); }, "tag -1 is outside");
    if (w.tag_ub() < INT_MAX)
      expect_error([&] { w.isend(&v, 1, 0, w.tag_ub() + 1); }, "is outside [0, ");
    expect_error([&] { w.irecv(&v, 1, 0, -5); }, "cairn::irecv: rank *: tag -5");
  });
}

TEST(Errors, NegativeAndOverflowingCounts) {
  run([](cairn::world& w) {
    double d = 0;
    expect_error([&] { w.isend(&d, -1, 0, 0); }, "cairn::isend: rank *: negative count -1");
    expect_error([&] { w.recv(&d, std::int64_t{-42}, 0, 0); },
                 "cairn::recv: rank *: negative count -42");
    expect_error([&] { w.send(&d, std::numeric_limits<std::int64_t>::max(), 0, 0); },
                 "cairn::send: rank *: count 9223372036854775807 of 8-byte elements overflows");
    std::span<double> huge(&d, std::numeric_limits<std::size_t>::max() / 4);
    expect_error([&] { w.irecv(huge, 0, 0); }, "cairn::irecv: rank *: count * of 8-byte");
    // Nothing was sent by any of the failed calls: a clean exchange still works and nothing
    // stray arrives (the run's end would report unreceived messages).
    int v = w.rank(), got = -1;
    auto r = w.irecv(&got, 1, (w.rank() + w.size() - 1) % w.size(), 1);
    w.send(&v, 1, (w.rank() + 1) % w.size(), 1);
    r.wait();
    EXPECT_EQ(got, (w.rank() + w.size() - 1) % w.size());
    EXPECT_FALSE(w.iprobe().has_value());
  });
}

TEST(Errors, ReceiveBufferTooSmall) {
  run([](cairn::world& w) {
    const int right = (w.rank() + 1) % w.size(), left = (w.rank() + w.size() - 1) % w.size();
    for (std::size_t n : {std::size_t{100}, std::size_t{50000}}) {  // short and long protocol
      std::vector<std::int32_t> out(n, 7), in(10, -1);
      auto r = w.irecv(in, left, 2);
      auto s = w.isend(out, right, 2);
      const std::string need = std::to_string(n * 4);
      expect_error([&] { r.wait(); }, "cairn::irecv: rank " + std::to_string(w.rank()) +
                                          ": message of " + need + " bytes from rank " +
                                          std::to_string(left) +
                                          " (tag 2) does not fit the receive buffer of 40 bytes");
      s.wait();                                          // the sender completes normally
      EXPECT_EQ(in, std::vector<std::int32_t>(10, -1));  // nothing written
    }
    // Blocking form.
    std::vector<char> out(64, 'a'), in(8);
    auto s = w.isend(out, right, 3);
    expect_error([&] { w.recv(in, left, 3); }, "cairn::recv: rank *: *receive buffer of 8 bytes");
    s.wait();
  });
}

TEST(Errors, UseAfterTheRunEnded) {
  cairn::world saved;
  cairn::request pending_never;  // a null request stays usable
  run([&](cairn::world& w) {
    // On the MPI engine every process keeps its own rank's handle.
    if (w.rank() == 0 || w.engine() == cairn::engine::mpi) saved = w;
  });
  int v = 0;
  expect_error([&] { saved.isend(&v, 1, 0, 0); }, "cairn::isend: rank *: use after the run ended");
  expect_error([&] { saved.recv(&v, 1, 0, 0); }, "cairn::recv: rank *: use after the run ended");
  expect_error([&] { saved.progress(); }, "use after the run ended");
  expect_error([&] { (void)saved.node_count(); }, "use after the run ended");
  cairn::world none;
  expect_error([&] { none.send(&v, 1, 0, 0); }, "cairn::send: this world belongs to no run");
  EXPECT_TRUE(pending_never.test());
}
