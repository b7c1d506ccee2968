// `cairn-bench flow-stream`: a producer -> filter -> consumer pipeline of 64-byte items over all
// ranks, as a cairn::flow graph and written by hand with cairn channels. Rank r's producer
// makes `--items` items (origin r, sequence numbers 0..N-1, a payload of six words computed
// from both) and sends them to the filter on rank r + 1; the filter drops the items whose
// sequence number hashes to 0 mod 4 (about a quarter, deterministically) and forwards the rest,
// their hop count raised, to the consumer on rank r + 2 (ranks modulo the world's size); the
// consumer counts them and sums a checksum of their fields.
//
// cairn::flow (`flow-stream`): module vectors prod, filt, cons of one instance per rank, placed
// prod[i] on rank i, filt[i] on rank i + 1, cons[i] on rank i + 2, flows prod -> filt -> cons
// one to one. The producer yields to its rank's other instances every `--batch` items; the
// filter and consumer dequeue item by item. Timed: one g.run() from a barrier to its return
// (the run makes the instances and the graph's channel and ends collectively once every item
// arrived); items travel on a lane per output queue (a typed channel: each vector has one
// instance per rank), as in the baseline but for the graph's queues. Flow control:
// the graph's window (graph_options::window_bytes, 1 MiB unless `--window`) holds a
// producer at its yield while its rank is that far ahead of the filter's rank.
// Baseline `channels`: two cairn channels of items made once, untimed (make_channel, direct
// route, default buffers): the filter is the first channel's handler, which sends on the
// second with send_to, whose handler is the consumer. Timed: the producer's loop of send_to
// from a barrier to the end of w.quiesce() (every item delivered). The figure is items
// produced per second over all ranks (ranks x items / the slowest rank's time; higher is
// better), median over samples alternating between the two sides.
//
// Verified, both sides, after every run: each consumer received exactly the items its
// producer's stream keeps (their count and checksum, computed untimed from the same
// functions), each with one hop; the mismatches over all ranks must be 0 or the benchmark
// throws.
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"
#include "cairn/flow/graph.hpp"
#include "flow_common.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

namespace flow = cairn::flow;

struct item {
  std::uint64_t seq = 0;
  std::uint32_t origin = 0, hops = 0;
  std::array<std::uint64_t, 6> payload{};
};
static_assert(sizeof(item) == 64);

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

item make_item(std::uint32_t origin, std::uint64_t seq) {
  item x;
  x.seq = seq;
  x.origin = origin;
  for (std::size_t j = 0; j < x.payload.size(); ++j)
    x.payload[j] = seq * (j + 1) + (static_cast<std::uint64_t>(origin) << 40);
  return x;
}
bool keep(const item& x) {
  return mix(x.seq ^ (static_cast<std::uint64_t>(x.origin) << 48)) % 4 != 0;
}
std::uint64_t check_of(const item& x) {
  return x.seq ^ x.payload[0] ^ (x.payload[5] << 1) ^ (static_cast<std::uint64_t>(x.origin) << 32);
}

// What a consumer should see, and what it saw.
struct tally {
  std::uint64_t count = 0, sum = 0, bad_hops = 0;
  void add(const item& x) {
    ++count;
    sum += check_of(x);
    bad_hops += x.hops != 1;
  }
};
tally expected(std::uint32_t origin, std::uint64_t items) {
  tally t;
  for (std::uint64_t s = 0; s < items; ++s) {
    item x = make_item(origin, s);
    if (!keep(x)) continue;
    x.hops = 1;
    t.add(x);
  }
  return t;
}

struct producer {
  static constexpr flow::output<item> out{};
  std::uint64_t items = 0;
  int batch = 256;
  flow::task run(flow::context& ctx) {
    const auto origin = static_cast<std::uint32_t>(ctx.index());
    for (std::uint64_t s = 0; s < items; ++s) {
      ctx.send(out, make_item(origin, s));
      if (s % static_cast<std::uint64_t>(batch) == static_cast<std::uint64_t>(batch) - 1)
        co_await ctx.yield();
    }
  }
};
struct filter {
  static constexpr flow::input<item> in{};
  static constexpr flow::output<item> out{};
  std::uint64_t items = 0;
  flow::task run(flow::context& ctx) {
    for (std::uint64_t s = 0; s < items; ++s) {
      item x = co_await ctx.dequeue(in);
      if (!keep(x)) continue;
      ++x.hops;
      ctx.send(out, x);
    }
  }
};
struct consumer {
  static constexpr flow::input<item> in{};
  std::uint64_t items = 0;  // kept items to expect
  tally* got = nullptr;
  flow::task run(flow::context& ctx) {
    for (std::uint64_t k = 0; k < items; ++k) got->add(co_await ctx.dequeue(in));
  }
};

int run_flow_stream(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is cairn channels, measured in the run
  const bool quick = inv.opts.quick;
  const std::uint64_t items =
      count_param(inv.opts, "items", quick ? 200'000 : 2'000'000, 1, std::uint64_t{1} << 34);
  const int batch = static_cast<int>(count_param(inv.opts, "batch", 256, 1, 1 << 20));
  const int samples = static_cast<int>(count_param(inv.opts, "samples", quick ? 3 : 7, 1, 1001));
  flow::graph_options gopts;
  gopts.window_bytes = count_param(inv.opts, "window", gopts.window_bytes, 0, std::size_t{1} << 40);
  return flowb::run_probed(inv, {}, [&](cairn::world& w, std::vector<row>& rows) {
    const int p = w.size(), me = w.rank();
    const int next = (me + 1) % p;
    const auto from = static_cast<std::uint32_t>((me + 2 * p - 2) % p);  // my consumer's producer
    const tally want = expected(from, items);

    // The flow graph.
    tally got_flow;
    flow::graph g(w, gopts);
    auto prod = g.add<producer>("prod", p, [&](int) { return producer{items, batch}; });
    auto filt = g.add<filter>("filt", p, [&](int) { return filter{items}; });
    auto cons = g.add<consumer>("cons", p, [&](int) { return consumer{want.count, &got_flow}; });
    std::vector<int> at0, at1, at2;
    for (int i = 0; i < p; ++i) {
      at0.push_back(i);
      at1.push_back((i + 1) % p);
      at2.push_back((i + 2) % p);
    }
    g.place(prod, at0);
    g.place(filt, at1);
    g.place(cons, at2);
    g.flow(prod, filt);
    g.flow(filt, cons);

    // The same pipeline by hand: the consumer's channel, then the filter's.
    tally got_ch;
    const cairn::block_distribution dist(static_cast<std::uint64_t>(p), p);
    auto to_consumer = cairn::make_channel<item>(
        w, dist, [&](const item& x) { got_ch.add(x); },
        cairn::channel_options{.name = "flow-stream consumer"});
    auto to_filter = cairn::make_channel<item>(
        w, dist,
        [&](const item& x) {
          if (!keep(x)) return;
          item y = x;
          ++y.hops;
          to_consumer.send_to(next, y);
        },
        cairn::channel_options{.name = "flow-stream filter"});

    std::uint64_t wrong = 0;
    const auto verify = [&](tally& t) {
      wrong += t.count != want.count || t.sum != want.sum || t.bad_hops != 0;
      t = tally{};
    };
    const auto flow_side = [&] {
      g.run();
      verify(got_flow);
      return static_cast<double>(items);
    };
    const auto channel_side = [&] {
      const auto origin = static_cast<std::uint32_t>(me);
      for (std::uint64_t s = 0; s < items; ++s) to_filter.send_to(next, make_item(origin, s));
      w.quiesce();
      verify(got_ch);
      return static_cast<double>(items);
    };
    flow_side();
    channel_side();
    const std::vector<double> t = flowb::time_sides(w, samples, {flow_side, channel_side});
    const std::uint64_t all = w.allreduce(wrong, cairn::plus{});
    if (all != 0)
      throw std::runtime_error("flow-stream: " + std::to_string(all) +
                               " runs delivered a wrong count or checksum of items");
    if (me != 0) return;
    // t: seconds per item of one rank's stream; the rate counts every rank's items.
    row r{"flow-stream",
          std::string(cairn::to_string(w.engine())),
          p,
          sizeof(item),
          "items_per_s",
          "higher",
          p / t[0],
          "channels",
          p / t[1]};
    r.set("items_per_rank", std::to_string(items));
    r.set("kept_items_per_rank", std::to_string(want.count));
    r.set("batch", std::to_string(batch));
    r.set("window_bytes", std::to_string(gopts.window_bytes));
    r.set("samples", std::to_string(samples));
    rows.push_back(std::move(r));
  });
}

const param_registrar params{
    "flow-stream",
    {{"items", "items each producer makes", "2000000, 200000 with --quick"},
     {"batch", "items a flow producer sends between yields", "256"},
     {"window", "bytes of the graph's flow-control window (graph_options::window_bytes; 0: none)",
      "1 MiB"},
     {"samples", "timed runs per side, alternating (the median is reported)",
      "7, 3 with --quick"}}};

const registrar reg{{"flow-stream",
                     "producer -> filter -> consumer of 64 B items across ranks, flow graph vs "
                     "hand-written cairn channels (items/s, all ranks)",
                     run_flow_stream}};

}  // namespace

}  // namespace cairn::bench
