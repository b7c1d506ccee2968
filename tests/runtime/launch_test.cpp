// launch: engine choice, rank counts, the end of a run when a rank fails, the watchdog, and
// cancellation of pending operations while a rank unwinds. The failing runs here use the
// threads engine inside the test process (on every registration, MPI included); the same
// failures ending a whole process or MPI job are checked by the failure tests.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace {
int launch_threads(int ranks, const std::function<void(cairn::world&)>& fn,
                   std::optional<double> watchdog = std::nullopt) {
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  o.ranks = ranks;
  o.nodes = 1;  // one node, whatever CAIRN_NODES the test program runs under
  o.watchdog_s = watchdog;
  return cairn::launch(cairn::test::argc, cairn::test::argv, o, fn);
}

// Sets an environment variable for the scope.
struct scoped_env {
  std::string name;
  std::optional<std::string> old;
  scoped_env(const char* n, const char* v) : name(n) {
    if (const char* o = std::getenv(n)) old = o;
    if (v)
      setenv(n, v, 1);
    else
      unsetenv(n);
  }
  ~scoped_env() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};
}  // namespace

TEST(Launch, RanksFromCommandLine) {
  char prog[] = "prog", flag[] = "--cairn-ranks=5";
  char* args[] = {prog, flag, nullptr};
  std::atomic<int> seen{0};
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  EXPECT_EQ(cairn::launch(2, args, o,
                          [&](cairn::world& w) {
                            EXPECT_EQ(w.size(), 5);
                            EXPECT_EQ(w.engine(), cairn::engine::threads);
                            seen.fetch_add(1);
                          }),
            0);
  EXPECT_EQ(seen.load(), 5);
  char bad[] = "--cairn-ranks=zero";
  char* bad_args[] = {prog, bad, nullptr};
  testing::internal::CaptureStderr();
  EXPECT_EQ(cairn::launch(2, bad_args, o, [&](cairn::world&) { seen.fetch_add(1); }), 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cairn: --cairn-ranks=zero is not an integer in [1, 4096]"), std::string::npos)
      << err;
  EXPECT_EQ(seen.load(), 5);       // no rank ran
  EXPECT_STREQ(bad_args[1], bad);  // a constant argc: argv is left as it is
}

TEST(Launch, EngineChoice) {
  {
    scoped_env e("CAIRN_ENGINE", "threads");
    EXPECT_EQ(cairn::detect_engine(cairn::test::argc, cairn::test::argv), cairn::engine::threads);
  }
  {
    scoped_env e("CAIRN_ENGINE", "mpi");
    EXPECT_EQ(cairn::detect_engine(cairn::test::argc, cairn::test::argv), cairn::engine::mpi);
  }
  {
    scoped_env e("CAIRN_ENGINE", "carrier-pigeon");
    EXPECT_THROW(cairn::detect_engine(cairn::test::argc, cairn::test::argv), cairn::error);
  }
  {
    scoped_env e("CAIRN_ENGINE", nullptr);
    scoped_env a("OMPI_COMM_WORLD_SIZE", nullptr), b("PMI_RANK", nullptr), c("PMI_SIZE", nullptr),
        d("PMIX_RANK", nullptr), f("MPI_LOCALNRANKS", nullptr), g("SLURM_STEP_NUM_TASKS", nullptr);
    EXPECT_EQ(cairn::detect_engine(cairn::test::argc, cairn::test::argv), cairn::engine::threads);
    scoped_env h("PMI_RANK", "0");
    EXPECT_EQ(cairn::detect_engine(cairn::test::argc, cairn::test::argv), cairn::engine::mpi);
  }
  {
    char prog[] = "prog", flag[] = "--cairn-engine", value[] = "mpi";
    char* args[] = {prog, flag, value, nullptr};
    scoped_env e("CAIRN_ENGINE", "threads");
    EXPECT_EQ(cairn::detect_engine(3, args), cairn::engine::mpi);  // the flag wins
  }
  {
    scoped_env e("CAIRN_RANKS", "-2");
    cairn::launch_options o;
    o.engine = cairn::engine::threads;
    testing::internal::CaptureStderr();
    EXPECT_EQ(cairn::launch(0, nullptr, o, [](cairn::world&) {}), 2);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("cairn: CAIRN_RANKS=-2 is not an integer in [1, 4096]"), std::string::npos)
        << err;
  }
  if (!cairn::mpi_available()) {
    cairn::launch_options o;
    o.engine = cairn::engine::mpi;
    testing::internal::CaptureStderr();
    EXPECT_EQ(cairn::launch(0, nullptr, o, [](cairn::world&) {}), 2);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("this build of cairn has no MPI"), std::string::npos) << err;
  }
}

// Every bad value of a variable cairn reads ends launch with exit code 2 and one line naming
// the variable, its value and what is accepted; no rank runs, nothing is thrown.
TEST(Launch, BadEnvironmentValuesReturnTwo) {
  const struct {
    const char* variable;
    const char* value;
    const char* message;
  } cases[] = {
      {"CAIRN_ENGINE", "foo", "cairn: CAIRN_ENGINE=foo is none of threads, mpi"},
      {"CAIRN_RANKS", "abc", "cairn: CAIRN_RANKS=abc is not an integer in [1, 4096]"},
      {"CAIRN_RANKS", "4097", "cairn: CAIRN_RANKS=4097 is not an integer in [1, 4096]"},
      {"CAIRN_THREADS_NODES", "0", "cairn: CAIRN_THREADS_NODES=0 is not an integer in [1, 4096]"},
      {"CAIRN_WATCHDOG_S", "-1", "cairn: CAIRN_WATCHDOG_S=-1 is not a number of seconds"},
      {"CAIRN_WATCHDOG_S", "5s", "cairn: CAIRN_WATCHDOG_S=5s is not a number of seconds"},
      {"CAIRN_PROGRESS", "fast", "cairn: CAIRN_PROGRESS=fast is none of calls, peers, thread"},
      {"CAIRN_PROGRESS_INTERVAL_US", "2e6",
       "cairn: CAIRN_PROGRESS_INTERVAL_US=2e6 is not a number of microseconds in [0, 1e6]"},
      {"CAIRN_MPI_THREAD_LEVEL", "many",
       "cairn: CAIRN_MPI_THREAD_LEVEL=many is none of single, funneled, serialized, multiple"},
      {"CAIRN_BIND", "yes", "cairn: CAIRN_BIND=yes is none of cores, none"},
      {"CAIRN_CMA", "2", "cairn: CAIRN_CMA=2 is none of 0, 1"},
      {"CAIRN_COLL_CHECK", "on", "cairn: CAIRN_COLL_CHECK=on is none of 0, 1"},
      {"CAIRN_STATS", "0", "cairn: CAIRN_STATS=0 is not accepted: set it to 1, or unset it"},
  };
  for (const auto& c : cases) {
    scoped_env e(c.variable, c.value);
    std::atomic<int> ran{0};
    testing::internal::CaptureStderr();
    const int rc = launch_threads(2, [&](cairn::world&) { ran.fetch_add(1); });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 2) << c.variable;
    EXPECT_EQ(ran.load(), 0) << c.variable;
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
  }
}

// Bad explicit options: the same exit code 2 and message, naming the field.
TEST(Launch, BadOptionsReturnTwo) {
  const auto rc_and_message = [](const cairn::launch_options& o) {
    testing::internal::CaptureStderr();
    const int rc = cairn::launch(0, nullptr, o, [](cairn::world&) { FAIL() << "a rank ran"; });
    return std::make_pair(rc, testing::internal::GetCapturedStderr());
  };
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  o.ranks = 0;
  auto [rc, err] = rc_and_message(o);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("cairn: launch_options::ranks = 0 is outside [1, 4096]"), std::string::npos)
      << err;
  o.ranks = 2;
  o.threads_nodes = 0;
  std::tie(rc, err) = rc_and_message(o);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("cairn: launch_options::threads_nodes = 0 is outside [1, 4096]"),
            std::string::npos)
      << err;
  o.threads_nodes = std::nullopt;
  o.progress_interval_us = -1;
  std::tie(rc, err) = rc_and_message(o);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("cairn: launch_options::progress_interval_us = -1"), std::string::npos) << err;
  o.progress_interval_us = std::nullopt;
  o.engine = cairn::engine::mpi;  // refused before MPI is touched
  o.progress = cairn::progress_mode::peers;
  std::tie(rc, err) = rc_and_message(o);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("cairn: progress mode 'peers' needs the threads engine"), std::string::npos)
      << err;
}

// Flags: both forms, unknown ones and missing values refused, read up to "--", removed from a
// modifiable argc/argv; the rank function sees the rest as world::args().
TEST(Launch, FlagsAreReadAndRemoved) {
  char prog[] = "prog", a[] = "alpha", f1[] = "--cairn-ranks", v1[] = "3",
       f2[] = "--cairn-progress=calls", b[] = "beta", dashes[] = "--", after[] = "--cairn-bogus";
  char* args[] = {prog, a, f1, v1, f2, b, dashes, after, nullptr};
  int argc = 8;
  std::atomic<int> seen{0};
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  const std::vector<std::string> expect = {"prog", "alpha", "beta", "--", "--cairn-bogus"};
  EXPECT_EQ(cairn::launch(argc, args, o,
                          [&](cairn::world& w) {
                            EXPECT_EQ(w.size(), 3);
                            EXPECT_EQ(w.args(), expect);
                            seen.fetch_add(1);
                          }),
            0);
  EXPECT_EQ(seen.load(), 3);
  ASSERT_EQ(argc, 5);
  for (int i = 0; i < argc; ++i) EXPECT_EQ(args[i], expect[static_cast<std::size_t>(i)]);
  EXPECT_EQ(args[5], nullptr);

  // launch_options win over a flag, a flag over its variable.
  {
    char flag[] = "--cairn-ranks=5";
    char* more[] = {prog, flag, nullptr};
    scoped_env e("CAIRN_RANKS", "3");
    o.ranks = 2;
    EXPECT_EQ(cairn::launch(2, more, o, [](cairn::world& w) { EXPECT_EQ(w.size(), 2); }), 0);
    o.ranks = std::nullopt;
    EXPECT_EQ(cairn::launch(2, more, o, [](cairn::world& w) { EXPECT_EQ(w.size(), 5); }), 0);
    EXPECT_EQ(cairn::launch(1, more, o, [](cairn::world& w) { EXPECT_EQ(w.size(), 3); }), 0);
  }
  const struct {
    std::vector<std::string> args;
    const char* message;
  } bad[] = {
      {{"--cairn-rank=3"},
       "cairn: unknown flag --cairn-rank=3; cairn's flags are --cairn-help, "
       "--cairn-engine, --cairn-ranks,"},
      {{"--cairn-bogus"}, "cairn: unknown flag --cairn-bogus;"},
      {{"x", "--cairn-ranks"}, "cairn: --cairn-ranks needs a value (N)"},
      {{"--cairn-help=yes"}, "cairn: --cairn-help takes no value"},
      {{"--cairn-ranks", "many"}, "cairn: --cairn-ranks=many is not an integer in [1, 4096]"},
      {{"--cairn-engine=quantum"}, "cairn: --cairn-engine=quantum is none of threads, mpi"},
      {{"--cairn-watchdog-s=soon"}, "cairn: --cairn-watchdog-s=soon is not a number of seconds"},
  };
  for (const auto& c : bad) {
    std::vector<std::string> text = {"prog"};
    text.insert(text.end(), c.args.begin(), c.args.end());
    std::vector<char*> ptrs;
    for (auto& t : text) ptrs.push_back(t.data());
    ptrs.push_back(nullptr);
    int n = static_cast<int>(text.size());
    testing::internal::CaptureStderr();
    const int rc = cairn::launch(n, ptrs.data(), o, [](cairn::world&) { FAIL() << "a rank ran"; });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 2) << c.message;
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
  }
}

// --cairn-help lists every flag and variable, runs no rank and returns 0.
TEST(Launch, HelpListsFlagsAndVariables) {
  // As a process outside an MPI job (rank 0 of one prints).
  scoped_env a("OMPI_COMM_WORLD_RANK", nullptr), b("PMI_RANK", nullptr), c("PMIX_RANK", nullptr),
      d("SLURM_PROCID", nullptr);
  char prog[] = "prog", help[] = "--cairn-help", keep[] = "mine";
  char* args[] = {prog, help, keep, nullptr};
  int argc = 3;
  testing::internal::CaptureStdout();
  const int rc = cairn::launch(argc, args, [](cairn::world&) { FAIL() << "a rank ran"; });
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(argc, 2);
  EXPECT_STREQ(args[1], "mine");
  for (const char* part :
       {"--cairn-help", "--cairn-engine=threads|mpi, CAIRN_ENGINE=threads|mpi",
        "--cairn-ranks=N, CAIRN_RANKS=N", "--cairn-threads-nodes=K, CAIRN_THREADS_NODES=K",
        "--cairn-watchdog-s=S, CAIRN_WATCHDOG_S=S", "CAIRN_PROGRESS=calls|peers|thread",
        "CAIRN_PROGRESS_INTERVAL_US=U", "CAIRN_MPI_THREAD_LEVEL=", "CAIRN_BIND=cores|none",
        "CAIRN_CMA=0|1", "CAIRN_COLL=RULES", "CAIRN_COLL_CHECK=0|1", "CAIRN_STATS=1"})
    EXPECT_NE(out.find(part), std::string::npos) << part << "\n" << out;
}

TEST(Launch, ExceptionOnOneRankEndsTheRun) {
  for (int n : {1, 2, 4, 7}) {
    testing::internal::CaptureStderr();
    const int rc = launch_threads(n, [&](cairn::world& w) {
      if (w.rank() == n - 1) throw std::runtime_error("boom on the last rank");
      int v;
      w.recv(&v, 1, cairn::any_source, 0);  // never satisfied: released by the failure
    });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 1);
    EXPECT_NE(err.find("cairn: rank " + std::to_string(n - 1) + " failed: boom on the last rank"),
              std::string::npos)
        << err;
  }
}

TEST(Launch, WatchdogEndsAStuckWait) {
  testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = launch_threads(
      3,
      [](cairn::world& w) {
        std::vector<double> never(4);
        if (w.rank() == 1) {
          auto r = w.irecv(never, 2, 77);  // a second pending operation in the report
          w.recv(never, 0, 42);
        } else {
          // Still running when rank 1's watchdog fires: a wait on a rank whose function has
          // returned would fail at once instead.
          std::this_thread::sleep_for(std::chrono::seconds(2));
        }
      },
      0.5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 1);
  EXPECT_LT(took, 30.0);
  EXPECT_NE(err.find("cairn watchdog: rank 1 made no progress"), std::string::npos) << err;
  EXPECT_NE(err.find("recv from rank 0, tag 42, 32 bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("irecv from rank 2, tag 77, 32 bytes"), std::string::npos) << err;
}

// A rank that catches its own exception while a long send is pending must neither hang nor
// let the receiver read freed memory: the send leaves a copy behind.
TEST(Launch, PendingLongSendSurvivesUnwinding) {
  EXPECT_EQ(launch_threads(2,
                           [](cairn::world& w) {
                             const std::size_t n = 1 << 18;
                             if (w.rank() == 0) {
                               try {
                                 std::vector<std::uint32_t> big(n);
                                 for (std::size_t i = 0; i < n; ++i)
                                   big[i] = static_cast<std::uint32_t>(i * 3);
                                 auto r = w.isend(big, 1, 5);
                                 throw std::runtime_error("handled");
                               } catch (const std::runtime_error&) {
                               }
                               std::vector<std::uint32_t> scribble(
                                   n, 0xdeadbeef);  // likely reuses the memory
                               w.send(scribble, 1, 6);
                             } else {
                               std::this_thread::sleep_for(std::chrono::milliseconds(20));
                               std::vector<std::uint32_t> in(n);
                               w.recv(in, 0, 5);
                               for (std::size_t i = 0; i < n; ++i)
                                 ASSERT_EQ(in[i], static_cast<std::uint32_t>(i * 3));
                               w.recv(in, 0, 6);
                               EXPECT_EQ(in[0], 0xdeadbeefu);
                             }
                           }),
            0);
}

// A destroyed pending receive during unwinding is withdrawn: the message then goes to the next
// matching receive, not into freed memory.
TEST(Launch, PendingReceiveWithdrawnOnUnwinding) {
  EXPECT_EQ(launch_threads(2,
                           [](cairn::world& w) {
                             if (w.rank() == 1) {
                               try {
                                 std::vector<int> doomed(4);
                                 auto r = w.irecv(doomed, 0, 1);
                                 throw std::runtime_error("handled");
                               } catch (const std::runtime_error&) {
                               }
                               int go = 1;
                               w.send(&go, 1, 0, 2);
                               std::vector<int> in(4);
                               w.recv(in, 0, 1);
                               EXPECT_EQ(in, (std::vector<int>{1, 2, 3, 4}));
                             } else {
                               int go = 0;
                               w.recv(&go, 1, 1, 2);
                               w.send(std::vector<int>{1, 2, 3, 4}, 1, 1);
                             }
                           }),
            0);
}

// The run warns about messages that nobody received.
TEST(Launch, UnreceivedMessagesAreReported) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(launch_threads(2,
                           [](cairn::world& w) {
                             if (w.rank() == 0) w.send(std::vector<int>{1, 2, 3}, 1, 9);
                           }),
            0);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rank 1: warning: 1 message(s) sent to this rank were never received (first: "
                     "from rank 0, tag 9, 12 bytes"),
            std::string::npos)
      << err;
}

// A board collective whose part needs no other rank's data returns before the others' calls
// are visible (a bcast's root, a reduce's non-roots); if they disagree and no later collective
// reports it, the end of the rank's function does, and the run fails. Here nobody reads the
// other's data (rank 0's bcast from itself meets rank 1's reduce to rank 0), on the world's
// slots and on a group's keyed ones. Rank 1 calls first, so it learns of it at its end; rank
// 0, 50 ms later, from its call (which it ignores).
TEST(Launch, LateBoardDisagreementFailsTheRun) {
  for (bool on_group : {false, true}) {
    testing::internal::CaptureStderr();
    const int rc = launch_threads(2, [&](cairn::world& w) {
      std::vector<double> in(3, 1.0), out(3);
      auto g = w.group(std::vector<int>{1, 0});  // group rank 1 is world rank 0
      const int root = on_group ? 1 : 0;
      if (w.rank() == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        try {
          if (on_group)
            g.bcast(in, root);
          else
            w.bcast(in, root);
        } catch (const cairn::error&) {
        }
      } else {
        if (on_group)
          g.reduce(in, out, root);
        else
          w.reduce(in, out, root);
      }
    });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 1) << "on a group: " << on_group;
    // (On a loaded machine rank 1 may see rank 0's call already, and report from its own.)
    EXPECT_TRUE(err.find("cairn::launch: rank 1: ranks disagree on the call") !=
                    std::string::npos ||
                err.find("cairn::reduce: rank 1: ranks disagree on the call") != std::string::npos)
        << err;
    EXPECT_NE(err.find("had returned"), std::string::npos) << err;
    EXPECT_EQ(err.find("cairn::cairn::"), std::string::npos) << err;  // one prefix
  }
}
