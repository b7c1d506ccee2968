// A rank whose function returned does not stop the others: they go on among themselves —
// collectives on a group without it, receives from named ranks and from any source, while
// their waits park long enough to look at who has ended — and nothing fails. (The waits that
// do need an ended rank fail: tests/runtime/failure_program.cpp.)
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "harness.hpp"

using cairn::test::random_values;
using cairn::test::run;

TEST(Ended, OthersGoOnWithoutTheLastRank) {
  run([](cairn::world& w) {
    const int p = w.size(), last = p - 1, me = w.rank();
    if (p > 1 && me == last) return;
    const int alive = p > 1 ? p - 1 : 1;
    std::vector<int> members(static_cast<std::size_t>(alive));
    std::iota(members.begin(), members.end(), 0);
    cairn::group g = w.group(members);
    for (unsigned seed = 1; seed <= 3; ++seed) {
      // Rank 0 holds the others back for longer than a wait's grace for an ended rank, so
      // that every wait below parks and looks.
      if (me == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const auto in = random_values<std::int64_t>(1000, seed, static_cast<unsigned>(me));
      std::vector<std::int64_t> out(in.size()), sum(in.size(), 0);
      g.allreduce(in, out, cairn::plus{});
      for (int r = 0; r < alive; ++r) {
        const auto x = random_values<std::int64_t>(1000, seed, static_cast<unsigned>(r));
        for (std::size_t i = 0; i < x.size(); ++i) sum[i] += x[i];
      }
      EXPECT_EQ(out, sum);
      // A ring among the ranks still running, received by name and from any source.
      const int right = (me + 1) % alive, left = (me + alive - 1) % alive;
      if (me == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      int got = -1;
      cairn::request r = w.irecv(&got, 1, left, 11);
      w.send(&me, 1, right, 11);
      r.wait();
      EXPECT_EQ(got, left);
      if (me == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      w.send(&me, 1, right, 12);
      const cairn::status st = w.recv(&got, 1, cairn::any_source, 12);
      EXPECT_EQ(st.source, left);
      EXPECT_EQ(got, left);
      g.barrier();
    }
  });
}

// A send that its receiver took before returning is complete, even while the sender has not
// looked at it yet: here rank 0 waits for a late message from rank 2 first, long after rank 1
// received rank 0's 1 MiB and returned.
TEST(Ended, ASendTakenBeforeTheReceiverReturnedIsComplete) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    if (p < 3) return;
    const auto sent = random_values<std::int64_t>(std::size_t{1} << 17, 5, 0);
    if (me == 0) {
      int late = -1;
      std::vector<cairn::request> reqs;
      reqs.push_back(w.irecv(&late, 1, 2, 5));
      reqs.push_back(w.isend(sent, 1, 6));
      cairn::wait_all(reqs);  // the receive first: its wait parks and looks at ended ranks
      EXPECT_EQ(late, 2);
    } else if (me == 1) {
      std::vector<std::int64_t> got(sent.size());
      w.recv(got, 0, 6);
      EXPECT_EQ(got, sent);
    } else if (me == 2) {
      // Longer than a wait's grace for an ended rank.
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      w.send(&me, 1, 0, 5);
    }
  });
}
