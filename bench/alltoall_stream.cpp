// `cairn-bench alltoall-stream`: TRAM's fine-grained all-to-all (TRAM thesis ch. 5/7): every
// rank streams M items of 32 bytes, each to a uniformly random other rank. The figure is items
// delivered per second over all ranks (M · P / slowest rank's seconds; higher is better).
//
// cairn (`alltoall-stream`, `-grid`, `-hypercube`): one channel of 32-byte items, default
// buffer size, send_to(dest, item) per item, then w.quiesce().
//
// Baseline (`isend-per-item`, same run, both engines): the same items, one world.isend per
// item (a window of 64 outstanding sends), and the receiver keeps 64 irecv(any_source) posted
// and reposts each as it completes, never more than the items it expects (counted by an
// untimed alltoall of per-destination counts). On the MPI engine these are MPI_Isend/Irecv
// underneath; on the threads engine cairn's own point-to-point.
//
// Verified for every run: each receiver checks that the item names it as its destination and
// counts items and a checksum of their contents; the sums over all ranks must equal what was
// sent (count and checksum), and no item may arrive at the wrong rank.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

constexpr std::string_view metric = "items_per_s";
constexpr std::string_view better = "higher";
constexpr std::string_view baseline_name = "isend-per-item";
constexpr int window = 64;  // outstanding isends and posted irecvs of the baseline
constexpr int stream_tag = 41;

struct item {
  std::uint64_t id;    // source << 40 | sequence number
  std::uint64_t dest;  // the rank it is sent to (checked on arrival)
  std::uint64_t a, b;  // payload
};
static_assert(sizeof(item) == 32);

__extension__ typedef unsigned __int128 u128;

inline std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Checksum of one item (order-independent when summed).
inline std::uint64_t digest(const item& x) noexcept {
  return mix(x.id ^ mix(x.dest ^ mix(x.a + 3 * x.b)));
}

// What a rank received.
struct tally {
  std::uint64_t count = 0, sum = 0, misrouted = 0;
  void take(const item& x, int me) noexcept {
    ++count;
    sum += digest(x);
    misrouted += x.dest != static_cast<std::uint64_t>(me);
  }
};

// The items a rank sends (generated before timing, the same for every kernel).
struct workload {
  std::vector<item> items;
  std::vector<int> dest;
  std::uint64_t sent_sum = 0;
  std::uint64_t expect = 0;  // items this rank will receive

  workload(cairn::world& w, std::uint64_t m) : items(m), dest(m) {
    const int me = w.rank(), p = w.size();
    std::uint64_t s = mix(0x5EED + static_cast<std::uint64_t>(me));
    std::vector<std::size_t> counts(static_cast<std::size_t>(p), 0),
        incoming(static_cast<std::size_t>(p), 0);
    for (std::uint64_t i = 0; i < m; ++i) {
      s = mix(s + i);
      int d = me;
      if (p > 1) {  // a uniformly random other rank
        d = static_cast<int>((static_cast<u128>(s) * static_cast<unsigned>(p - 1)) >> 64);
        if (d >= me) ++d;
      }
      dest[i] = d;
      items[i] =
          item{(static_cast<std::uint64_t>(me) << 40) | i, static_cast<std::uint64_t>(d), s, ~s};
      sent_sum += digest(items[i]);
      ++counts[static_cast<std::size_t>(d)];
    }
    w.alltoall(counts, incoming);
    for (auto c : incoming) expect += c;
  }
};

// Throws unless the received tallies of all ranks match everything sent.
void check(cairn::world& w, const workload& wl, const tally& got, const std::string& who) {
  std::array<std::uint64_t, 5> mine{wl.items.size(), wl.sent_sum, got.count, got.sum,
                                    got.misrouted},
      all{};
  w.allreduce(std::span(mine), std::span(all), cairn::plus{});
  if (all[0] != all[2] || all[1] != all[3] || all[4] != 0)
    throw std::runtime_error("alltoall-stream (" + who + "): sent " + std::to_string(all[0]) +
                             " items, received " + std::to_string(all[2]) + ", checksum " +
                             (all[1] == all[3] ? "equal" : "different") + ", " +
                             std::to_string(all[4]) + " at the wrong rank");
  if (got.count != wl.expect)
    throw std::runtime_error("alltoall-stream (" + who + "): rank " + std::to_string(w.rank()) +
                             " received " + std::to_string(got.count) + " items, expected " +
                             std::to_string(wl.expect));
}

template <class Route>
double cairn_run(cairn::world& w, const workload& wl, Route route, const std::string& who) {
  tally got;
  const int me = w.rank();
  double seconds = 0;
  {
    auto ch = cairn::make_channel<item>(
        w, cairn::msg::distribution([](const item& x) { return static_cast<int>(x.dest); }),
        [&](const item& x) { got.take(x, me); }, route,
        cairn::channel_options{.name = "alltoall-stream"});
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t m = wl.items.size();
    for (std::size_t i = 0; i < m; ++i) ch.send_to(wl.dest[i], wl.items[i]);
    w.quiesce();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  check(w, wl, got, who);
  return slowest(w, seconds);
}

// One isend per item, windowed; receives with irecv(any_source) kept posted.
double isend_run(cairn::world& w, const workload& wl) {
  tally got;
  const int me = w.rank();
  std::array<item, window> rbuf{};
  std::array<cairn::request, window> rreq, sreq;
  std::uint64_t posted = 0, received = 0;
  std::size_t head = 0;  // the oldest posted receive: any_source receives match in posting order
  auto post = [&](std::size_t slot) {
    rreq[slot] = w.irecv(&rbuf[slot], 1, cairn::any_source, stream_tag);
    ++posted;
  };
  auto poll = [&] {
    while (received < posted && rreq[head].test()) {
      got.take(rbuf[head], me);
      ++received;
      if (posted < wl.expect) post(head);
      head = (head + 1) % window;
    }
  };
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t s = 0; s < window && posted < wl.expect; ++s) post(s);
  const std::size_t m = wl.items.size();
  for (std::size_t i = 0; i < m; ++i) {
    cairn::request& r = sreq[i % window];
    while (!r.test()) poll();
    r = w.isend(&wl.items[i], 1, wl.dest[i], stream_tag);
    poll();
  }
  while (received < wl.expect) poll();
  cairn::wait_all(std::span(sreq));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  check(w, wl, got, "isend-per-item");
  return slowest(w, seconds);
}

int run_stream(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline runs inline on both engines
  const std::uint64_t m =
      count_param(inv.opts, "items",
                  inv.opts.quick ? std::uint64_t{1} << 14 : std::uint64_t{1} << 18, 1, 1ULL << 34);
  const int rounds =
      static_cast<int>(count_param(inv.opts, "rounds", inv.opts.quick ? 1 : 3, 1, 1001));
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    const workload wl(w, m);
    std::vector<double> direct, grid, cube, base;
    for (int r = 0; r < rounds; ++r) {  // alternated, so drifting load hits all alike
      direct.push_back(cairn_run(w, wl, cairn::route::direct{}, "cairn direct"));
      if (w.size() > 1) {
        grid.push_back(cairn_run(w, wl, cairn::route::grid{}, "cairn grid"));
        cube.push_back(cairn_run(w, wl, cairn::route::hypercube{}, "cairn hypercube"));
      }
      if (inv.opts.baseline) base.push_back(isend_run(w, wl));
    }
    if (w.rank() != 0) return;
    const double total = static_cast<double>(m) * w.size();
    std::optional<double> base_rate;
    if (!base.empty())
      base_rate = total / median(base);
    else
      note(std::string(inv.name) + ": baseline " + std::string(baseline_name) +
           " skipped (--no-baseline)");
    report rep(inv.opts.json);
    const std::string engine(cairn::to_string(w.engine()));
    auto emit = [&](const std::string& bench, const std::vector<double>& runs) {
      if (runs.empty()) return;
      rep.add(row{bench, engine, w.size(), sizeof(item), std::string(metric), std::string(better),
                  total / median(runs), std::string(baseline_name), base_rate});
    };
    emit("alltoall-stream", direct);
    emit("alltoall-stream-grid", grid);
    emit("alltoall-stream-hypercube", cube);
  });
}

const param_registrar params{
    "alltoall-stream",
    {{"items", "M, items of 32 bytes every rank streams", "2^18, 2^14 with --quick"},
     {"rounds", "runs per figure (the median is reported)", "3, 1 with --quick"}}};

const registrar reg{
    {"alltoall-stream",
     "32-byte items to random ranks, aggregated (direct/grid/hypercube) vs one isend "
     "per item (items/s, all ranks)",
     run_stream}};

}  // namespace

}  // namespace cairn::bench
