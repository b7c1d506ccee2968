// The MPI engine asks MPI for the thread level its run needs and no more: single where the
// rank's own thread is the only one calling MPI, multiple with the progress thread, or what
// CAIRN_MPI_THREAD_LEVEL asks for. Registered with and without CAIRN_PROGRESS=thread and with
// a requested level; each run checks what MPI_Query_thread reports inside the run.
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness.hpp"

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// What this registration expects, from its environment alone (not from cairn's parsing).
cairn::thread_level expected_level() {
  const char* progress = env("CAIRN_PROGRESS");
  if (progress && std::strcmp(progress, "thread") == 0) return cairn::thread_level::multiple;
  const char* asked = env("CAIRN_MPI_THREAD_LEVEL");
  if (!asked) return cairn::thread_level::single;
  if (std::strcmp(asked, "funneled") == 0) return cairn::thread_level::funneled;
  if (std::strcmp(asked, "serialized") == 0) return cairn::thread_level::serialized;
  if (std::strcmp(asked, "multiple") == 0) return cairn::thread_level::multiple;
  return cairn::thread_level::single;
}

}  // namespace

TEST(ThreadLevel, RequestedIsWhatTheRunNeeds) {
  EXPECT_EQ(cairn::mpi_thread_level_requested({}), expected_level());
  cairn::launch_options o;
  o.progress = cairn::progress_mode::calls;
  o.mpi_thread_level = cairn::thread_level::serialized;
  EXPECT_EQ(cairn::mpi_thread_level_requested(o), cairn::thread_level::serialized);
  o.progress = cairn::progress_mode::thread;
  o.mpi_thread_level = cairn::thread_level::single;
  EXPECT_EQ(cairn::mpi_thread_level_requested(o), cairn::thread_level::multiple);
}

TEST(ThreadLevel, MpiProvidesTheRequestedLevelInsideTheRun) {
  const cairn::thread_level expected = expected_level();
  cairn::test::run([&](cairn::world& w) {
    const auto provided = cairn::mpi_thread_level_provided();
    if (w.engine() == cairn::engine::threads) {
      EXPECT_FALSE(provided.has_value()) << "the threads engine initialized MPI";
      return;
    }
    ASSERT_TRUE(provided.has_value());
    if (expected == cairn::thread_level::single)
      EXPECT_EQ(*provided, cairn::thread_level::single) << cairn::to_string(*provided);
    else  // an MPI may give more than asked, never less
      EXPECT_GE(static_cast<int>(*provided), static_cast<int>(expected))
          << cairn::to_string(*provided);
    // Messages still flow at that level.
    int v = w.rank(), sum = 0;
    w.allreduce(std::span(&v, 1), std::span(&sum, 1), cairn::plus{});
    EXPECT_EQ(sum, w.size() * (w.size() - 1) / 2);
  });
}

TEST(ThreadLevel, AnUnknownLevelIsAnError) {
  const char* old = env("CAIRN_MPI_THREAD_LEVEL");
  const std::string saved = old ? old : "";
  setenv("CAIRN_MPI_THREAD_LEVEL", "several", 1);
  const std::string msg = cairn::test::message_of([] {
    cairn::launch_options o;
    o.progress = cairn::progress_mode::calls;
    (void)cairn::mpi_thread_level_requested(o);
  });
  if (old)
    setenv("CAIRN_MPI_THREAD_LEVEL", saved.c_str(), 1);
  else
    unsetenv("CAIRN_MPI_THREAD_LEVEL");
  EXPECT_TRUE(cairn::test::has_text(
      msg, "CAIRN_MPI_THREAD_LEVEL=several is none of single, funneled, serialized, multiple"))
      << msg;
}
