// cairn beside an application's own MPI calls. The first argument picks the check; each prints
// "<mode> ok" on the first process when it passed, and exits non-zero otherwise.
// - ok: MPI_Init (single) by the program, a run with an allreduce, MPI_Finalize; also prints
//   the level ("interop ok, level single").
// - progress-thread: the same with the progress thread, which needs MPI_THREAD_MULTIPLE:
//   launch prints "cairn: the progress thread ..." and returns 2, which the program returns.
// - group-comm: MPI_Allreduce on mpi_comm(g) of the odd ranks (and on mpi_comm(w)) against
//   cairn's allreduce on g (and w) of the same random values, interleaved with cairn's calls.
// - split: MPI_Comm_split into halves, each running a cairn world of its own at once.
// - threads-engine: mpi_comm on the threads engine raises cairn::error naming the call and
//   the rank (MPI is never initialized).
// - session: a cairn::mpi_session on MPI_COMM_WORLD between the program's own MPI calls
//   (collectives on the world and a group against MPI's, a ring of sends), closed, its world
//   refused afterwards; then a session on each half of an MPI_Comm_split at once.
// - session-bad: MPI_COMM_NULL and a bad CAIRN_PROGRESS raise cairn::error naming the cause
//   before any communication, on every process.
// - session-throw: an exception leaves an open session's scope on the last process while the
//   others wait for it in a receive: the job ends non-zero naming that rank.
// - session-exit: the last process calls exit(3) with a session open (after a launch inside
//   it ended) while the others wait for it: the job ends with exit code 3.
#include "cairn/runtime/mpi.hpp"

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"

namespace {
// Throws when `ok` is false, naming the check (the run then fails with it).
void check(bool ok, const std::string& what) {
  if (!ok) throw cairn::error("check failed: " + what);
}

std::vector<std::int64_t> random_values(int rank, std::size_t n) {
  std::mt19937_64 gen(0x5eed + static_cast<std::uint64_t>(rank));
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = static_cast<std::int64_t>(gen() % 2000001) - 1000000;
  return v;
}

// MPI's allreduce of `in` on `comm` equals cairn's on `on` (the world or a group).
template <class G>
void same_sums(G& on, MPI_Comm comm, const std::vector<std::int64_t>& in, const char* what) {
  std::vector<std::int64_t> by_mpi(in.size()), by_cairn(in.size());
  MPI_Allreduce(in.data(), by_mpi.data(), static_cast<int>(in.size()), MPI_INT64_T, MPI_SUM, comm);
  on.allreduce(in, by_cairn, cairn::plus{});
  check(by_mpi == by_cairn, std::string("MPI_Allreduce equals cairn's allreduce on ") + what);
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int group_comm(int argc, char** argv) {
  cairn::launch_options o;
  o.engine = cairn::engine::mpi;
  return cairn::launch(argc, argv, o, [](cairn::world& w) {
    const MPI_Comm wc = cairn::mpi_comm(w);
    int size = 0, rank = -1;
    MPI_Comm_size(wc, &size);
    MPI_Comm_rank(wc, &rank);
    check(size == w.size() && rank == w.rank(), "mpi_comm(world) is ranked as the world");
    check(cairn::mpi_comm(w) == wc, "mpi_comm(world) is the same communicator each time");
    for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{70000}}) {
      const auto in = random_values(w.rank(), n);
      same_sums(w, wc, in, "the world");

      cairn::group odd = w.group(cairn::ranks{1, w.size(), 2});
      cairn::group even = w.group(cairn::ranks{0, w.size(), 2});
      const MPI_Comm oc = cairn::mpi_comm(odd);
      const MPI_Comm ec = cairn::mpi_comm(even);
      if (odd.rank() < 0) {
        check(oc == MPI_COMM_NULL, "mpi_comm of a group this rank is not in is MPI_COMM_NULL");
      } else {
        MPI_Comm_size(oc, &size);
        MPI_Comm_rank(oc, &rank);
        check(size == odd.size() && rank == odd.rank(), "mpi_comm(odd) is ranked as the group");
        same_sums(odd, oc, in, "the odd ranks");
        // A group with the same members (made anew) has the same communicator.
        check(cairn::mpi_comm(w.group(cairn::ranks{1, w.size(), 2})) == oc,
              "mpi_comm is cached per members");
      }
      if (even.rank() >= 0) {
        MPI_Comm_size(ec, &size);
        check(size == even.size(), "mpi_comm(even) has the group's size");
        same_sums(even, ec, in, "the even ranks");
      }
      // cairn's and the application's messages on the same ranks do not mix.
      std::int64_t token = w.rank() == 0 ? 42 : 0;
      MPI_Bcast(&token, 1, MPI_INT64_T, 0, wc);
      std::int64_t mine = w.rank(), total = 0;
      w.allreduce(std::span(&mine, 1), std::span(&total, 1), cairn::plus{});
      check(token == 42 && total == std::int64_t{w.size()} * (w.size() - 1) / 2,
            "MPI_Bcast then cairn's allreduce");
    }
    if (w.rank() == 0) std::puts("group-comm ok");
  });
}

int split(int argc, char** argv) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int half = me < n / 2 ? 0 : 1;
  const int first = half == 0 ? 0 : n / 2;  // world rank of the half's first process
  const int half_size = half == 0 ? n / 2 : n - n / 2;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, half, me, &comm);
  const int rc = cairn::launch(comm, argc, argv, [&](cairn::world& w) {
    check(w.engine() == cairn::engine::mpi, "the MPI engine");
    check(w.size() == half_size, "the half's size: " + std::to_string(w.size()));
    check(w.rank() == me - first, "the half's rank: " + std::to_string(w.rank()));
    std::int64_t mine = me, total = 0;
    w.allreduce(std::span(&mine, 1), std::span(&total, 1), cairn::plus{});
    std::int64_t expect = 0;
    for (int r = first; r < first + half_size; ++r) expect += r;
    check(total == expect, "the allreduce of world ranks in half " + std::to_string(half));
    int size = 0;
    MPI_Comm_size(cairn::mpi_comm(w), &size);
    check(size == half_size, "mpi_comm(world) is the half");
    check(w.args().size() == 2 && w.args()[1] == "split", "world::args()");
  });
  MPI_Comm_free(&comm);
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst == 0 && me == 0) std::puts("split ok");
  return rc;
}

// Expects `fn` to throw cairn::error with a message starting with `start`.
template <class F>
void expect_error(F fn, const std::string& start) {
  try {
    fn();
  } catch (const cairn::error& e) {
    check(std::string(e.what()).rfind(start, 0) == 0,
          "message '" + std::string(e.what()) + "' starts with '" + start + "'");
    return;
  }
  check(false, "no cairn::error for '" + start + "'");
}

int session() {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  cairn::world kept;  // a copy of the session's world, used after close()
  {
    cairn::mpi_session s(MPI_COMM_WORLD);
    check(s.is_open(), "an opened session is open");
    cairn::world& w = s.world();
    check(w.engine() == cairn::engine::mpi && w.rank() == me && w.size() == n,
          "the session's world is MPI_COMM_WORLD's ranks");
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{70000}}) {
      const auto in = random_values(me, count);
      same_sums(w, MPI_COMM_WORLD, in, "the session's world");  // the program's own communicator
      cairn::group odd = w.group(cairn::ranks{1, n, 2});
      if (odd.rank() >= 0) same_sums(odd, cairn::mpi_comm(odd), in, "the session's odd ranks");
      // A ring: each rank sends its first value to the next and gets the previous one's.
      std::int64_t got = 0;
      const int next = (me + 1) % n, prev = (me + n - 1) % n;
      cairn::request r = w.irecv(std::span(&got, 1), prev, 7);
      w.send(std::span(&in[0], 1), next, 7);
      r.wait();
      check(got == random_values(prev, count)[0],
            "the ring's value from rank " + std::to_string(prev));
    }
    kept = w;
    s.close();
    check(!s.is_open(), "a closed session is not open");
    expect_error([&] { (void)s.world(); }, "cairn::mpi_session::world: the session was closed");
    s.close();  // closing again does nothing
  }
  std::int64_t one = 1, sum = 0;
  expect_error([&] { kept.allreduce(std::span(&one, 1), std::span(&sum, 1), cairn::plus{}); },
               "cairn::allreduce: rank " + std::to_string(me) + ": use after the run ended");

  // A session on each half of a split, at once; closed by its destructor.
  const int half = me < n / 2 ? 0 : 1;
  const int first = half == 0 ? 0 : n / 2;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, half, me, &comm);
  {
    cairn::mpi_session s(comm);
    cairn::world& w = s.world();
    check(w.rank() == me - first, "the half's rank");
    std::int64_t mine = me, total = 0;
    w.allreduce(std::span(&mine, 1), std::span(&total, 1), cairn::plus{});
    std::int64_t expect = 0;
    for (int r = first; r < first + w.size(); ++r) expect += r;
    check(total == expect, "the allreduce of world ranks in half " + std::to_string(half));
    check(w.args().empty(), "a session has no arguments");
  }
  MPI_Comm_free(&comm);

  // cairn's flags from a command line: read up to "--", the rest kept as the world's args.
  {
    std::string a0 = "prog", a1 = "--cairn-nodes=" + std::to_string(n), a2 = "input.txt", a3 = "--",
                a4 = "--cairn-ranks=3";
    char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), nullptr};
    cairn::mpi_session s(MPI_COMM_WORLD, 5, argv);
    cairn::world& w = s.world();
    check(w.node_count() == n, "--cairn-nodes=" + std::to_string(n) + " makes one node per rank");
    check(w.args() == std::vector<std::string>{"prog", "input.txt", "--", "--cairn-ranks=3"},
          "the session's args are the program's own");
    check(std::string(argv[1]) == a1, "argv is left as it is");
    std::int64_t mine = me, total = 0;
    w.allreduce(std::span(&mine, 1), std::span(&total, 1), cairn::plus{});
    check(total == std::int64_t{n} * (n - 1) / 2, "the allreduce over emulated nodes");
  }
  if (me == 0) std::puts("session ok");
  return 0;
}

int session_bad() {
  expect_error([] { cairn::mpi_session s(MPI_COMM_NULL); },
               "cairn::mpi_session: the session was given MPI_COMM_NULL");
  setenv("CAIRN_PROGRESS", "bogus", 1);
  expect_error([] { cairn::mpi_session s(MPI_COMM_WORLD); },
               "cairn::mpi_session: CAIRN_PROGRESS=bogus");
  unsetenv("CAIRN_PROGRESS");
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  expect_error([&] { cairn::mpi_session s(MPI_COMM_WORLD, o); },
               "cairn::mpi_session: launch_options::engine = threads");
  std::string a0 = "prog", a1 = "--cairn-bogus=1", a2 = "--cairn-progress";
  char* unknown[] = {a0.data(), a1.data(), nullptr};
  expect_error([&] { cairn::mpi_session s(MPI_COMM_WORLD, 2, unknown); },
               "cairn::mpi_session: unknown flag --cairn-bogus=1");
  char* no_value[] = {a0.data(), a2.data(), nullptr};
  expect_error([&] { cairn::mpi_session s(MPI_COMM_WORLD, 2, no_value); },
               "cairn::mpi_session: --cairn-progress needs a value");
  if (world_rank() == 0) std::puts("session-bad ok");
  return 0;
}

void session_throw() {
  cairn::mpi_session s(MPI_COMM_WORLD);
  cairn::world& w = s.world();
  if (w.rank() == w.size() - 1) throw std::runtime_error("the program gave up");
  std::int64_t v = 0;
  w.recv(std::span(&v, 1), w.size() - 1, 3);  // never sent: the job must end instead
}

void session_exit(int argc, char** argv) {
  cairn::mpi_session s(MPI_COMM_WORLD);
  cairn::world& w = s.world();
  // A launch inside the open session ends first: exit() must still end the job afterwards.
  cairn::launch_options o;
  o.engine = cairn::engine::mpi;
  check(cairn::launch(MPI_COMM_WORLD, argc, argv, o, [](cairn::world&) {}) == 0, "inner launch");
  if (w.rank() == w.size() - 1) std::exit(3);
  std::int64_t v = 0;
  w.recv(std::span(&v, 1), w.size() - 1, 3);  // never sent: the job must end instead
}

int threads_engine(int argc, char** argv) {
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  o.ranks = 2;
  std::atomic<int> right{0};
  const int rc = cairn::launch(argc, argv, o, [&](cairn::world& w) {
    const std::string rank = "cairn::mpi_comm: rank " + std::to_string(w.rank()) + ": ";
    for (int on_group : {0, 1}) {
      try {
        if (on_group)
          (void)cairn::mpi_comm(w.group(cairn::ranks{0, w.size()}));
        else
          (void)cairn::mpi_comm(w);
      } catch (const cairn::error& e) {
        const std::string what = e.what();
        if (what.find(rank + "an MPI communicator needs the MPI engine; this run uses the "
                             "threads engine") == 0)
          right.fetch_add(1);
        else
          std::fprintf(stderr, "unexpected message: %s\n", e.what());
      }
    }
  });
  if (rc == 0 && right.load() == 4) std::puts("threads-engine ok");
  return rc == 0 && right.load() == 4 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  if (mode == "threads-engine") return threads_engine(argc, argv);
  MPI_Init(&argc, &argv);
  int rc = 0;
  if (mode == "ok" || mode == "progress-thread") {
    cairn::launch_options o;
    o.engine = cairn::engine::mpi;
    o.progress =
        mode == "progress-thread" ? cairn::progress_mode::thread : cairn::progress_mode::calls;
    rc = cairn::launch(argc, argv, o, [](cairn::world& w) {
      int one = 1, sum = 0;
      w.allreduce(std::span(&one, 1), std::span(&sum, 1), cairn::plus{});
      check(sum == w.size(), "allreduce gave the number of ranks");
      const auto level = cairn::mpi_thread_level_provided();
      if (w.rank() == 0 && level) std::printf("interop ok, level %s\n", cairn::to_string(*level));
    });
  } else if (mode == "group-comm") {
    rc = group_comm(argc, argv);
  } else if (mode == "split") {
    rc = split(argc, argv);
  } else if (mode == "session") {
    rc = session();
  } else if (mode == "session-bad") {
    rc = session_bad();
  } else if (mode == "session-exit") {
    session_exit(argc, argv);
    rc = 4;  // not reached
  } else if (mode == "session-throw") {
    try {
      session_throw();
    } catch (const std::runtime_error&) {
      rc = 3;  // not reached: the session's destructor ended the job
    }
  } else {
    if (world_rank() == 0) std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
