// What launch hands a program, for the command-line tests: rank 0 prints the world's size and
// world::args() (without argv[0]); afterwards every process prints main's argv as launch left
// it ("argv after launch: ...", which also checks that argv[argc] is null). Exits with what
// launch returned.
#include <cstdio>
#include <string>

#include "cairn/cairn.hpp"

int main(int argc, char** argv) {
  const int rc = cairn::launch(argc, argv, [](cairn::world& w) {
    if (w.rank() != 0) return;
    std::string text = "size " + std::to_string(w.size()) + "\nargs:";
    for (std::size_t i = 1; i < w.args().size(); ++i) text += " " + w.args()[i];
    std::puts(text.c_str());
  });
  if (argv[argc] != nullptr) return 3;
  std::string after = "argv after launch:";
  for (int i = 1; i < argc; ++i) after += std::string(" ") + argv[i];
  std::puts(after.c_str());
  return rc;
}
