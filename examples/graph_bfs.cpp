// Aggregated messages: breadth-first search over a random graph whose vertices are spread over
// the ranks in blocks. Edges travel on one channel to the owners of their endpoints, who build
// adjacency lists (and so count degrees); then each BFS level sends one "visit" item per edge
// out of the frontier on a second channel, and w.quiesce() ends the level. The degrees and the
// levels are checked against a sequential BFS over the same graph.
//
//   build/examples/graph_bfs --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/graph_bfs
#include <cairn/cairn.hpp>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr std::uint64_t vertices = 1 << 14;
constexpr std::uint64_t edges = 3 * vertices;  // average degree 6

// Edge e of the graph, the same on every rank whoever generates it (splitmix64 of e).
struct edge {
  std::uint64_t from;
  std::uint64_t to;
};
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
edge make_edge(std::uint64_t e) { return {mix(2 * e) % vertices, mix(2 * e + 1) % vertices}; }

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const auto p = static_cast<std::uint64_t>(w.size()), r = static_cast<std::uint64_t>(w.rank());
    const cairn::block_distribution dist(vertices, w.size());
    const std::uint64_t block = (vertices + p - 1) / p;  // owned: [r block, r block + local)
    const std::uint64_t local = dist.local_size(w.rank());

    // Phase 1: every rank generates its share of the edges and sends each to the owners of
    // both endpoints, who append it to their adjacency lists.
    std::vector<std::vector<std::uint64_t>> adj(local);
    {
      auto add = cairn::make_channel<edge>(
          w, dist.of([](const edge& e) { return e.from; }),
          [&](const edge& e) { adj[dist.local_index(e.from)].push_back(e.to); });
      for (std::uint64_t e = edges * r / p; e < edges * (r + 1) / p; ++e) {
        const edge x = make_edge(e);
        add.send(x);
        add.send(edge{x.to, x.from});
      }
      w.quiesce();
    }

    // Phase 2: level-synchronous BFS from vertex 0. A visit item names a vertex; its owner
    // gives it the next level if it has none yet. A visit that repeats one still in the
    // combining cache is dropped on the way (dedup: the handler is idempotent).
    std::vector<int> level(local, -1);
    std::vector<std::uint64_t> frontier, next;
    int depth = 0;
    auto visit = cairn::make_channel<std::uint64_t>(
        w, dist,
        [&](std::uint64_t v) {
          int& l = level[dist.local_index(v)];
          if (l < 0) {
            l = depth + 1;
            next.push_back(v);
          }
        },
        cairn::route::grid{}, cairn::combine::dedup(1024));
    if (dist.owner(std::uint64_t{0}) == w.rank()) {
      level[0] = 0;
      frontier.push_back(0);
    }
    for (;; ++depth) {
      for (std::uint64_t v : frontier)
        for (std::uint64_t u : adj[dist.local_index(v)]) visit.send(u);
      w.quiesce();  // every visit of this level has been handled
      frontier.swap(next);
      next.clear();
      std::uint64_t size = frontier.size();
      w.allreduce(cairn::in_place, std::span(&size, 1), cairn::plus{});
      if (size == 0) break;
    }

    // Check against a sequential BFS over the whole graph (every rank can generate it).
    std::vector<std::vector<std::uint64_t>> all(vertices);
    for (std::uint64_t e = 0; e < edges; ++e) {
      const edge x = make_edge(e);
      all[x.from].push_back(x.to);
      all[x.to].push_back(x.from);
    }
    std::vector<int> expected(vertices, -1);
    std::deque<std::uint64_t> queue{0};
    expected[0] = 0;
    while (!queue.empty()) {
      const std::uint64_t v = queue.front();
      queue.pop_front();
      for (std::uint64_t u : all[v])
        if (expected[u] < 0) {
          expected[u] = expected[v] + 1;
          queue.push_back(u);
        }
    }
    std::uint64_t wrong = 0, reached = 0;
    for (std::uint64_t i = 0; i < local; ++i) {
      const std::uint64_t v = r * block + i;
      if (adj[i].size() != all[v].size() || level[i] != expected[v]) ++wrong;
      if (level[i] >= 0) ++reached;
    }
    w.allreduce(cairn::in_place, std::span(&wrong, 1), cairn::plus{});
    w.allreduce(cairn::in_place, std::span(&reached, 1), cairn::plus{});
    if (w.rank() == 0)
      std::printf(
          "graph_bfs: %d ranks (%s engine), %llu vertices, %llu edges: %llu reached in "
          "%d levels, %llu wrong\n",
          w.size(), std::string(cairn::to_string(w.engine())).c_str(),
          static_cast<unsigned long long>(vertices), static_cast<unsigned long long>(edges),
          static_cast<unsigned long long>(reached), depth, static_cast<unsigned long long>(wrong));
    if (wrong != 0) throw cairn::error("graph_bfs: degrees or levels differ from a sequential BFS");
  });
}
