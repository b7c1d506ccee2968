// Runs that must end the whole run (process or MPI job) with a message and non-zero status:
//   failure_program throw     the last rank throws while the others wait for messages
//   failure_program watchdog  rank 0 waits for a message nobody sends (set CAIRN_WATCHDOG_S)
#include <cstring>
#include <stdexcept>

#include "cairn/cairn.hpp"

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  return cairn::launch(argc, argv, [&](cairn::world& w) {
    int v = 0;
    if (std::strcmp(mode, "throw") == 0) {
      if (w.rank() == w.size() - 1) throw std::runtime_error("boom from the last rank");
      w.recv(&v, 1, cairn::any_source, 0);
    } else if (std::strcmp(mode, "watchdog") == 0) {
      if (w.rank() == 0) w.recv(&v, 1, cairn::any_source, 123);
    } else {
      throw std::invalid_argument(std::string("unknown mode '") + mode + "'");
    }
  });
}
