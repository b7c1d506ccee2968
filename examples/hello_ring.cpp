// The minimal cairn program from the README: every rank passes a token around a ring.
//   ./hello_ring --cairn-ranks=4          (threads engine, 4 ranks in one process)
//   mpirun -np 4 ./hello_ring             (MPI engine, 4 processes)
#include <cairn/cairn.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const int right = (w.rank() + 1) % w.size();
    const int left = (w.rank() + w.size() - 1) % w.size();

    std::vector<double> token(1000, w.rank());
    std::vector<double> from_left(1000);
    cairn::request r = w.irecv(from_left, left, /*tag=*/0);  // non-blocking receive
    w.send(token, right, /*tag=*/0);                         // blocking send
    cairn::status st = r.wait();

    std::printf("rank %d of %d (%s engine, node %d): got %zu doubles from rank %d, value %g\n",
                w.rank(), w.size(), std::string(cairn::to_string(w.engine())).c_str(), w.node(),
                st.count<double>(), st.source, from_left[0]);
  });
}
