// Channel runs that must end the whole run with a message and a non-zero status:
//   msg_failure_program handler   a handler throws on the rank that owns item 1234
//   msg_failure_program unsent    a channel goes out of scope with items never sent
//   msg_failure_program uncounted a counting_set goes out of scope with counts still cached
//   msg_failure_program quiesce_in_for_all
//                                 a counting_set's for_all calls w.quiesce() on every rank
//   msg_failure_program key <block|cyclic> <n|-1>
//                                 the last rank sends a key outside the distribution's domain
//                                 [0, 1000) after valid ones, while the others quiesce
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cairn/cairn.hpp"
#include "cairn/containers/counting_set.hpp"

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  return cairn::launch(argc, argv, [&](cairn::world& w) {
    const cairn::block_distribution dist(10000, w.size());
    if (std::strcmp(mode, "handler") == 0) {
      auto ch = cairn::make_channel<std::uint64_t>(w, dist, [](std::uint64_t k) {
        if (k == 1234) throw std::runtime_error("handler refused item 1234");
      });
      for (std::uint64_t k = 0; k < 10000; ++k)
        if (k % static_cast<std::uint64_t>(w.size()) == static_cast<std::uint64_t>(w.rank()))
          ch.send(k);
      w.quiesce();
    } else if (std::strcmp(mode, "unsent") == 0) {
      auto ch = cairn::make_channel<std::uint64_t>(
          w, dist, [](std::uint64_t) {}, cairn::channel_options{.name = "leaky"});
      if (w.rank() == 0 && w.size() > 1) ch.send(9999);  // owned by the last rank: buffered
      // no quiesce: the item is still in rank 0's buffer when the channel is destroyed
    } else if (std::strcmp(mode, "uncounted") == 0) {
      cairn::containers::counting_set<std::string> words(w);
      if (w.rank() == 0)
        for (const char* s : {"a", "b", "a", "c"}) words.async_insert(s);
      // no quiesce: the four counts still wait in rank 0 (staged before the cache) when the set
      // is destroyed
    } else if (std::strcmp(mode, "quiesce_in_for_all") == 0) {
      cairn::containers::counting_set<std::uint64_t> keys(w);
      for (std::uint64_t k = 0; k < 100; ++k) keys.async_insert(k);  // some on every rank
      w.quiesce();
      keys.for_all([&](std::uint64_t, std::uint64_t) { w.quiesce(); });  // refused
    } else if (std::strcmp(mode, "key") == 0 && argc > 3) {
      const bool cyclic = std::strcmp(argv[2], "cyclic") == 0;
      const std::int64_t bad = std::strcmp(argv[3], "n") == 0 ? 1000 : std::stoll(argv[3]);
      std::int64_t got = 0;
      auto send_all = [&](auto d) {
        auto ch = cairn::make_channel<std::int64_t>(
            w, d, [&](std::int64_t) { ++got; }, cairn::route::grid{});
        for (std::int64_t k = 0; k < 1000; k += 7) ch.send(k);
        if (w.rank() == w.size() - 1) ch.send(bad);  // refused here: nothing is sent
        w.quiesce();
      };
      if (cyclic)
        send_all(cairn::cyclic_distribution(1000, w.size()));
      else
        send_all(cairn::block_distribution(1000, w.size()));
    } else {
      throw std::invalid_argument(std::string("unknown mode '") + mode + "'");
    }
  });
}
