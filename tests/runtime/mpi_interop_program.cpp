// A program that initializes MPI itself before cairn::launch (the MPI engine then keeps the
// thread level MPI provided). `ok`: MPI_Init (single), a run with an allreduce, MPI_Finalize;
// prints "interop ok, level single". `progress-thread`: the same with the progress thread,
// which needs MPI_THREAD_MULTIPLE: launch refuses, and the program prints the error and exits 1.
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "cairn/cairn.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  MPI_Init(&argc, &argv);
  cairn::launch_options o;
  o.engine = cairn::engine::mpi;
  o.progress = std::strcmp(argv[1], "progress-thread") == 0 ? cairn::progress_mode::thread
                                                            : cairn::progress_mode::calls;
  int rc = 0;
  try {
    rc = cairn::launch(argc, argv, o, [](cairn::world& w) {
      int one = 1, sum = 0;
      w.allreduce(std::span(&one, 1), std::span(&sum, 1), cairn::plus{});
      if (sum != w.size()) throw cairn::error("allreduce gave a wrong sum");
      const auto level = cairn::mpi_thread_level_provided();
      if (w.rank() == 0 && level) std::printf("interop ok, level %s\n", cairn::to_string(*level));
    });
  } catch (const cairn::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
