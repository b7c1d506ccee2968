// Distributed containers: a word count with a counting_set of strings, vertex degrees with a
// map, connected components with a disjoint_set, and a remote call with async. Each rank
// inserts from its own data; world::quiesce() ends each phase; the results are checked against
// what every rank can compute on its own.
//
//   build/examples/distributed_containers --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/distributed_containers
#include <cairn/cairn.hpp>
#include <cairn/containers/counting_set.hpp>
#include <cairn/containers/disjoint_set.hpp>
#include <cairn/containers/map.hpp>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const int p = w.size(), me = w.rank();
    bool ok = true;

    // Word count: rank r says "cairn" r + 1 times and "hello" once; keys are strings, owned
    // by the rank their hash picks; repeats are counted at the source before they travel.
    cairn::containers::counting_set<std::string> words(w);
    for (int i = 0; i <= me; ++i) words.async_insert("cairn");
    words.async_insert("hello");
    w.quiesce();
    const auto top = words.topk(2);  // the same on every rank
    ok &= top.size() == 2 && top[0].first == "cairn" &&
          top[0].second == static_cast<std::uint64_t>(p) * (p + 1) / 2 &&
          words.count("hello") == static_cast<std::uint64_t>(p);

    // Degrees of a ring of 4p vertices: each rank adds its 4 edges; merge is a stateless
    // function object, so it travels as a registered function.
    cairn::containers::map<std::uint32_t, std::uint32_t> degree(w);
    const auto n = static_cast<std::uint32_t>(4 * p);
    for (std::uint32_t i = 0; i < 4; ++i) {
      const std::uint32_t u = static_cast<std::uint32_t>(4 * me) + i, v = (u + 1) % n;
      for (std::uint32_t x : {u, v})
        degree.async_reduce(x, 1, [](std::uint32_t a, std::uint32_t b) { return a + b; });
    }
    w.quiesce();
    for (const auto& [vertex, d] : degree.local()) ok &= d == 2 && degree.owner(vertex) == me;
    ok &= degree.size() == n;

    // Components: rank r links its 4 vertices into a chain; chains of ranks r and r + 1 are
    // joined when r is even, so there are ceil(p / 2) components.
    cairn::containers::disjoint_set<std::uint32_t> parts(w);
    for (std::uint32_t i = 0; i + 1 < 4; ++i)
      parts.async_union(static_cast<std::uint32_t>(4 * me) + i,
                        static_cast<std::uint32_t>(4 * me) + i + 1);
    if (me % 2 == 0 && me + 1 < p)
      parts.async_union(static_cast<std::uint32_t>(4 * me), static_cast<std::uint32_t>(4 * me + 4));
    parts.compress();
    ok &= parts.num_sets() == static_cast<std::uint64_t>((p + 1) / 2);
    for (const auto& [vertex, root] : parts.local()) ok &= root == vertex / 8 * 8;

    // A remote call: every rank asks the next one to add its rank to a per-rank total.
    struct total {
      std::uint64_t sum = 0;
    } mine;
    auto calls = cairn::make_async(w, mine);
    calls.async((me + 1) % p,
                [](auto& ctx, int from) { ctx.state().sum += static_cast<std::uint64_t>(from); },
                me);
    w.quiesce();
    ok &= mine.sum == static_cast<std::uint64_t>((me + p - 1) % p);

    if (me == 0)
      std::printf("containers: %s (%d ranks; \"cairn\" counted %llu times, %llu components)\n",
                  ok ? "ok" : "WRONG", p, static_cast<unsigned long long>(top[0].second),
                  static_cast<unsigned long long>((p + 1) / 2));
    if (!ok) throw std::runtime_error("containers: wrong result on rank " + std::to_string(me));
  });
}
