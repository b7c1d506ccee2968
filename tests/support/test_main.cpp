// GoogleTest main for cairn tests: keeps argc/argv for cairn::launch and, under an MPI launcher,
// prints full output only on the first process (the others report failures only).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "harness.hpp"

namespace cairn::test {
int argc = 0;
char** argv = nullptr;
}  // namespace cairn::test

int main(int argc, char** argv) {
  cairn::test::argc = argc;
  cairn::test::argv = argv;
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* v = std::getenv(var);
    if (v && std::strcmp(v, "0") != 0) GTEST_FLAG_SET(brief, true);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
