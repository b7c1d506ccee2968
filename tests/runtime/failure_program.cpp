// Runs that must end the whole run (process or MPI job) with a message and non-zero status:
//   failure_program throw           the last rank throws while the others wait for messages
//   failure_program watchdog        every rank waits for a message nobody sends (set
//                                   CAIRN_WATCHDOG_S)
//   failure_program return-recv     the last rank returns; the others receive from it
//   failure_program return-any      every rank but 0 returns; rank 0 receives from any source
//   failure_program return-send     the last rank returns; the others send it 1 MiB (a send
//                                   that waits for its receiver)
//   failure_program return-allreduce  the last rank returns; the others call allreduce
//   failure_program return-alltoall   as return-allreduce, with alltoall (messages)
//   failure_program return-group      as return-allreduce, on a group of every rank in
//                                     reverse order (the board's group slots)
//   failure_program exit            the last rank calls exit(3) while the others receive from it
//   failure_program deadlock        every rank receives from its right neighbour; none sends
//   failure_program algorithms      even ranks call allgather by recursive doubling, odd ones
//                                   by a ring (the world's second collective by messages: no
//                                   count check before it)
//   failure_program algorithms-first  the same as the world's first collective by messages
//   failure_program counts          allreduce by recursive doubling twice; in the second the
//                                   last rank passes two elements, the others one
//   failure_program roots           bcast by a binomial tree twice; in the second rank 0
//                                   passes root 0, the others root 1 (on 2 ranks both send and
//                                   neither receives)
//   failure_program group-collective  allreduce by recursive doubling: rank 0 on a group of
//                                   every rank in reverse order, the others on the world
//   failure_program layouts         rank 0 redistributes into a cyclic layout, the others into
//                                   a block-cyclic one
//   failure_program same-sizes      as layouts with cyclic against block_cyclic(16): on 2 ranks
//                                   every message has the size the other plan expects
//   failure_program slow            no failure: the last rank computes for 4 s (longer than a
//                                   deadlock takes to be found) while the others wait for it
//                                   in a receive and in allreduce; prints the sum
//   failure_program window          rank 0 starts 4097 non-blocking bcasts by messages, more
//                                   than a group's tags tell apart, before it sends the others
//                                   the message they wait for before starting theirs
//   failure_program groups          rank 0 redistributes into a group of every rank in reverse
//                                   order, the others into one in rank order
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cairn/cairn.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  return cairn::launch(argc, argv, [&](cairn::world& w) {
    const int last = w.size() - 1;
    int v = 0;
    if (mode == "throw") {
      if (w.rank() == last) throw std::runtime_error("boom from the last rank");
      w.recv(&v, 1, cairn::any_source, 0);
    } else if (mode == "watchdog") {
      w.recv(&v, 1, cairn::any_source, 123);
    } else if (mode == "return-recv") {
      if (w.rank() != last) w.recv(&v, 1, last, 7);
    } else if (mode == "return-any") {
      if (w.rank() == 0) w.recv(&v, 1, cairn::any_source, 7);
    } else if (mode == "return-send") {
      std::vector<char> big(1 << 20, 'x');
      if (w.rank() != last) w.send(big.data(), big.size(), last, 7);
    } else if (mode == "return-allreduce") {
      std::vector<int> in{w.rank()}, out(1);
      if (w.rank() != last) w.allreduce(in, out, cairn::plus{});
    } else if (mode == "return-group") {
      std::vector<int> members(static_cast<std::size_t>(w.size()));
      for (int r = 0; r < w.size(); ++r) members[static_cast<std::size_t>(r)] = w.size() - 1 - r;
      cairn::group g = w.group(members);
      std::vector<int> in{w.rank()}, out(1);
      if (w.rank() != last) g.allreduce(in, out, cairn::plus{});
    } else if (mode == "return-alltoall") {
      std::vector<int> out(static_cast<std::size_t>(w.size()) * 1000, 1), in(out.size());
      if (w.rank() != last) w.alltoall(out, in);
    } else if (mode == "exit") {
      if (w.rank() == last) std::exit(3);
      w.recv(&v, 1, last, 7);
    } else if (mode == "deadlock") {
      w.recv(&v, 1, (w.rank() + 1) % w.size(), 7);
    } else if (mode == "window") {
      std::vector<int> values(4097);
      std::vector<cairn::request> bcasts;
      if (w.rank() != 0) w.recv(&v, 1, 0, 7);
      for (int& x : values)
        bcasts.push_back(w.ibcast(std::span(&x, 1), 0, cairn::bcast_algorithm::binomial));
      if (w.rank() == 0)
        for (int r = 1; r < w.size(); ++r) w.send(&v, 1, r, 7);
      cairn::wait_all(bcasts);
    } else if (mode == "algorithms" || mode == "algorithms-first") {
      std::vector<int> mine(64, w.rank()), all(static_cast<std::size_t>(w.size()) * 64);
      if (mode == "algorithms") w.allgather(mine, all, cairn::allgather_algorithm::ring);
      w.allgather(mine, all,
                  w.rank() % 2 ? cairn::allgather_algorithm::ring
                               : cairn::allgather_algorithm::recursive_doubling);
    } else if (mode == "counts") {
      std::vector<int> in(2, 1), out(2);
      const auto rd = cairn::allreduce_algorithm::recursive_doubling;
      w.allreduce(std::span(in).first(1), std::span(out).first(1), cairn::plus{}, rd);
      const std::size_t n = w.rank() == last ? 2 : 1;
      w.allreduce(std::span(in).first(n), std::span(out).first(n), cairn::plus{}, rd);
    } else if (mode == "roots") {
      int x = w.rank();
      w.bcast(std::span(&x, 1), 0, cairn::bcast_algorithm::binomial);
      w.bcast(std::span(&x, 1), w.rank() == 0 ? 0 : 1, cairn::bcast_algorithm::binomial);
    } else if (mode == "group-collective") {
      std::vector<int> members(static_cast<std::size_t>(w.size()));
      for (int r = 0; r < w.size(); ++r) members[static_cast<std::size_t>(r)] = w.size() - 1 - r;
      cairn::group reversed = w.group(members);
      const auto rd = cairn::allreduce_algorithm::recursive_doubling;
      v = w.rank() == 0 ? reversed.allreduce(1, cairn::plus{}, rd)
                        : w.allreduce(1, cairn::plus{}, rd);
    } else if (mode == "layouts" || mode == "same-sizes") {
      const cairn::group all = w.group(cairn::ranks{0, w.size()});
      const cairn::layout<1> src(all, {64}, {cairn::dist::block});
      const cairn::layout<1> dst(all, {64},
                                 {w.rank() == 0       ? cairn::dist::cyclic
                                  : mode == "layouts" ? cairn::dist::block_cyclic(3)
                                                      : cairn::dist::block_cyclic(16)});
      cairn::darray<double, 1> a(src), b(dst);
      cairn::redistribute(a, b);
    } else if (mode == "slow") {
      if (w.rank() == last) {
        std::this_thread::sleep_for(std::chrono::seconds(4));
        if (last > 0) w.send(&last, 1, 0, 7);
      }
      if (w.rank() == 0 && last > 0) w.recv(&v, 1, last, 7);
      const int sum = w.allreduce(w.rank() + v, cairn::plus{});
      if (w.rank() == 0) std::printf("slow: sum %d\n", sum);
    } else if (mode == "groups") {
      std::vector<int> members(static_cast<std::size_t>(w.size()));
      for (int r = 0; r < w.size(); ++r)
        members[static_cast<std::size_t>(r)] = w.rank() == 0 ? w.size() - 1 - r : r;
      const cairn::layout<1> src(w.group(cairn::ranks{0, w.size()}), {64}, {cairn::dist::block});
      const cairn::layout<1> dst(w.group(members), {64}, {cairn::dist::block});
      cairn::darray<double, 1> a(src), b(dst);
      cairn::redistribute(a, b);
    } else {
      throw std::invalid_argument("unknown mode '" + mode + "'");
    }
  });
}
