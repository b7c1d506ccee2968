#include <cairn/cairn.hpp>

#include <atomic>
#include <cstdio>

int main(int argc, char** argv) {
  std::atomic<int> sum{0};
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  o.ranks = 3;
  const int rc = cairn::launch(argc, argv, o, [&](cairn::world& w) {
    int v = w.rank() + 1, got = 0;
    auto r = w.irecv(&got, 1, (w.rank() + w.size() - 1) % w.size());
    w.send(&v, 1, (w.rank() + 1) % w.size());
    r.wait();
    sum += got;
  });
  std::printf("consumer: sum %d\n", sum.load());
  return rc != 0 || sum != 6;
}
