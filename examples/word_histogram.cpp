// A distributed histogram with aggregated messages: every rank draws keys, each key is counted
// by the rank that owns it, and quiesce() ends the phase. Then the same keys again with
// combining on the way (items for the same key merge in their buffer), over a 2-D grid route.
//
//   build/examples/word_histogram --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/word_histogram
#include <cairn/cairn.hpp>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const std::uint64_t per_rank = 1000, n = per_rank * static_cast<std::uint64_t>(w.size());
    const cairn::block_distribution dist(n, w.size());
    std::vector<std::uint64_t> table(dist.local_size(w.rank()), 0);
    std::mt19937_64 gen(42 + static_cast<std::uint64_t>(w.rank()));

    // Plain: one 8-byte item per update, handled where the key lives.
    auto upd = cairn::make_channel<std::uint64_t>(
        w, dist, [&](std::uint64_t k) { ++table[dist.local_index(k)]; });
    for (int i = 0; i < 100000; ++i) upd.send(gen() % n);
    w.quiesce();

    // Combined: (key, count) items; repeats of a key still waiting in a buffer add up there,
    // at the source and at the grid's intermediate hop.
    struct count {
      std::uint64_t key;
      std::uint64_t n;
    };
    auto key = [](const count& c) { return c.key; };
    auto cnt = cairn::make_channel<count>(
        w, dist.of(key), [&](const count& c) { table[dist.local_index(c.key)] += c.n; },
        cairn::route::grid{},
        cairn::combine::sum(
            key, [](auto& c) -> auto& { return c.n; }, 1024));
    for (int i = 0; i < 100000; ++i) cnt.send(count{gen() % n, 1});
    w.quiesce();

    std::uint64_t mine = 0, total = 0;
    for (auto c : table) mine += c;
    w.allreduce(std::span(&mine, 1), std::span(&total, 1), cairn::plus{});
    if (w.rank() == 0)
      std::printf(
          "%d ranks (%s engine): %llu updates counted (expected %llu); route %s merged "
          "%llu items on rank 0\n",
          w.size(), cairn::to_string(w.engine()).data(), static_cast<unsigned long long>(total),
          static_cast<unsigned long long>(200000ull * static_cast<unsigned>(w.size())),
          cnt.router().describe().c_str(),
          static_cast<unsigned long long>(cnt.stats().combined_source + cnt.stats().combined_hops));
    if (total != 200000ull * static_cast<unsigned>(w.size()))
      throw cairn::error("word_histogram: updates were lost or counted twice");
  });
}
