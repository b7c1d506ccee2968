// A wait that fails withdraws its operation: a peer that takes the message later gets the data
// as it was when it was sent, even though the sender has since written over its buffer.
//
// Group {0, 1, last} broadcasts 1 MiB from rank 0 by the binomial tree, whose root sends to both
// others at once. The last rank has returned, so the root's wait fails ("rank ... has
// returned"). The root then overwrites its buffer and only after that lets rank 1 join the
// broadcast: rank 1 must receive the original bytes (from the copy the withdrawal left), not
// the new ones. Threads engine only: on MPI a withdrawn long send goes to MPI_Request_free and
// its buffer must outlive the error (include/cairn/runtime/request.hpp).
#include <string>
#include <vector>

#include "harness.hpp"

using cairn::test::random_values;
using cairn::test::run;

TEST(Withdrawn, FailedWaitLeavesTheSentBytesForLaterReceivers) {
  run([](cairn::world& w) {
    const int p = w.size(), me = w.rank(), last = p - 1;
    if (p < 3) return;  // registered with 3 ranks and more
    cairn::group g = w.group(std::vector<int>{0, 1, last});
    if (g.rank() < 0) return;
    // The group's first collective by messages starts with the count check, which needs every
    // member: the bcast below must be a later one, whose data goes out at once.
    EXPECT_EQ(g.allreduce(1, cairn::plus{}, cairn::allreduce_algorithm::recursive_doubling), 3);
    if (me == last) return;
    constexpr std::size_t n = std::size_t{1} << 17;  // 1 MiB of int64: a long (rendezvous) send
    const auto sent = random_values<std::int64_t>(n, 11, 0);
    int go = 1;
    if (me == 0) {
      std::vector<std::int64_t> buf = sent;
      std::string what;
      try {
        g.bcast(buf, 0, cairn::bcast_algorithm::binomial);
      } catch (const cairn::error& e) {
        what = e.what();
      }
      EXPECT_NE(what.find("rank " + std::to_string(last) + "'s function has returned"),
                std::string::npos)
          << what;
      std::fill(buf.begin(), buf.end(), std::int64_t{-1});  // the buffer is the caller's again
      w.send(&go, 1, 1, 5);
      w.recv(&go, 1, 1, 6);  // rank 1 has its copy
      return;
    }
    w.recv(&go, 1, 0, 5);
    std::vector<std::int64_t> got(n, 0);
    g.bcast(got, 0, cairn::bcast_algorithm::binomial);
    EXPECT_EQ(got, sent);
    w.send(&go, 1, 0, 6);
  });
}
