// `cairn-bench halo`: the halo exchange of a 3-D 7-point stencil (faces only, periodic in every
// dimension) on a ghosted array of doubles with B^3 points per rank (B = 64 and 256; --quick:
// 64), ghost widths 1 and 2; the process grid is cairn's balanced grid (2 ranks: 2x1x1, so each
// rank has one neighbour on both sides of dimension 0 and wraps onto itself in the others).
// cairn: a persistent halo_exchange (start + wait; metric exchange_us_gW) and the one-shot
// exchange_halos (exchange_us_gW_oneshot). Baselines in the same run, on the same padded
// layout and grid (MPI_Cart_create, periodic): the hand-written exchange with MPI_Isend /
// MPI_Irecv of MPI_Type_create_subarray faces ("mpi-isend-subarray") and one
// MPI_Neighbor_alltoallw of the same datatypes ("mpi-neighbor-alltoallw"); under mpirun inline,
// sampled in turn with cairn's (each on its own array), in a threads run in a child
// `mpirun -np P` of this program. The figure is the time of one exchange (slowest rank, median
// of many short samples: a rank that loses its core to another process loses a scheduler slice,
// which the median skips). Both sides' ghosts are checked against the global index before and
// after timing. --block=B,... and --ghosts=W,... choose the configurations.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

using grid3 = cairn::ghosted_darray<double, 3>;

struct config {
  std::int64_t block;  // local points per dimension
  int ghosts;          // ghost width in every dimension
  [[nodiscard]] std::size_t size() const {
    return static_cast<std::size_t>(block * block * block * 8);
  }
  [[nodiscard]] std::string metric() const { return "exchange_us_g" + std::to_string(ghosts); }
};

std::vector<config> configs(const options& o) {
  std::vector<std::uint64_t> def{64};
  if (!o.quick) def.push_back(256);
  std::vector<config> c;
  for (const auto b : count_list_param(o, "block", def, 2, 1024))
    for (const auto g : count_list_param(o, "ghosts", {1, 2}, 1, 8))
      c.push_back({static_cast<std::int64_t>(b), static_cast<int>(g)});
  return c;
}

double value_at(const std::array<std::int64_t, 3>& g) {
  return static_cast<double>((g[0] * 4096 + g[1]) * 4096 + g[2]);
}

// The array: B^3 per rank on cairn's balanced grid of the world, periodic everywhere.
grid3 make_array(cairn::world& w, const config& c) {
  const cairn::group all = w.group(cairn::ranks{0, w.size()});
  const cairn::layout<3> probe(all, {1 << 20, 1 << 20, 1 << 20},
                               {dist::block, dist::block, dist::block});
  const auto g = probe.grid();
  const cairn::layout<3> l(all, {g[0] * c.block, g[1] * c.block, g[2] * c.block},
                           {dist::block, dist::block, dist::block}, g);
  grid3 a(l, {c.ghosts, c.ghosts, c.ghosts}, {true, true, true});
  std::fill(a.padded().begin(), a.padded().end(), -1.0);
  a.fill(value_at);
  return a;
}

// Every face ghost holds the value at its wrapped global index (diagonal ghosts are not
// exchanged); throws otherwise.
void check(const grid3& a, const char* who) {
  const auto& l = a.get_layout();
  const auto n = a.interior_shape();
  const auto shape = l.shape();
  const auto first = l.to_global({0, 0, 0});
  const std::int64_t g = a.ghosts()[0];
  std::int64_t bad = 0;
  for (int d = 0; d < 3; ++d) {
    const auto du = static_cast<std::size_t>(d);
    for (const int side : {-1, 1}) {
      std::array<std::int64_t, 3> lo{0, 0, 0}, hi = n;
      lo[du] = side < 0 ? -g : n[du];
      hi[du] = side < 0 ? 0 : n[du] + g;
      for (std::int64_t i = lo[0]; i < hi[0]; ++i)
        for (std::int64_t j = lo[1]; j < hi[1]; ++j)
          for (std::int64_t k = lo[2]; k < hi[2]; ++k) {
            std::array<std::int64_t, 3> gi{first[0] + i, first[1] + j, first[2] + k};
            for (std::size_t e = 0; e < 3; ++e) gi[e] = (gi[e] + shape[e]) % shape[e];
            bad += a(i, j, k) != value_at(gi);
          }
    }
  }
  if (bad)
    throw std::runtime_error(std::string("halo (") + who + "): " + std::to_string(bad) +
                             " wrong ghosts");
}

void clear_ghosts(grid3& a) {
  std::fill(a.padded().begin(), a.padded().end(), -1.0);
  a.fill(value_at);
}

// Short samples, many of them: on a shared 2-core machine a rank that loses its core loses a
// scheduler slice (about 4 ms here), and the median of many short samples skips those.
sampling sampling_for(const config& c, bool) { return sampling{1, 1, c.block >= 128 ? 1 : 10}; }
int samples_for(const config& c, bool quick) {
  if (c.block >= 128) return quick ? 7 : 15;
  return quick ? 11 : 21;
}

#if CAIRN_BENCH_HAVE_MPI
// The hand-written MPI exchanges on the padded storage of `a`: subarray datatypes for the
// faces (interior extents in the other dimensions) and ghosts, neighbours from a periodic
// Cartesian communicator with cairn's grid.
class mpi_halo {
 public:
  explicit mpi_halo(grid3& a) : a_(a) {
    const auto gr = a.get_layout().grid();
    int dims[3] = {gr[0], gr[1], gr[2]}, periods[3] = {1, 1, 1};
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart_);
    int sizes[3], sub[3], start[3];
    const int g = a.ghosts()[0];
    for (int d = 0; d < 3; ++d) sizes[d] = static_cast<int>(a.padded_shape()[d]);
    for (int d = 0; d < 3; ++d) {
      MPI_Cart_shift(cart_, d, 1, &nb_[2 * d], &nb_[2 * d + 1]);  // low, high neighbour
      for (int side = 0; side < 2; ++side) {
        for (int e = 0; e < 3; ++e) {
          sub[e] = static_cast<int>(a.interior_shape()[e]);
          start[e] = g;
        }
        const int n = static_cast<int>(a.interior_shape()[d]);
        sub[d] = g;
        start[d] = side == 0 ? g : n;  // the face sent toward that side
        MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE,
                                 &send_[2 * d + side]);
        start[d] = side == 0 ? 0 : n + g;  // the ghosts filled from that side
        MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE,
                                 &recv_[2 * d + side]);
        MPI_Type_commit(&send_[2 * d + side]);
        MPI_Type_commit(&recv_[2 * d + side]);
      }
    }
  }
  mpi_halo(const mpi_halo&) = delete;
  mpi_halo& operator=(const mpi_halo&) = delete;
  ~mpi_halo() {
    for (int i = 0; i < 6; ++i) {
      MPI_Type_free(&send_[i]);
      MPI_Type_free(&recv_[i]);
    }
    MPI_Comm_free(&cart_);
  }

  // Isend/Irecv: the face toward side s travels with tag 2d + s and fills the receiver's
  // ghosts on the other side, so both neighbours being one rank needs no care.
  void isend_irecv() {
    MPI_Request r[12];
    double* p = a_.data();
    for (int d = 0; d < 3; ++d)
      for (int s = 0; s < 2; ++s)
        MPI_Irecv(p, 1, recv_[2 * d + s], nb_[2 * d + s], 2 * d + (1 - s), cart_, &r[2 * d + s]);
    for (int d = 0; d < 3; ++d)
      for (int s = 0; s < 2; ++s)
        MPI_Isend(p, 1, send_[2 * d + s], nb_[2 * d + s], 2 * d + s, cart_, &r[6 + 2 * d + s]);
    MPI_Waitall(12, r, MPI_STATUSES_IGNORE);
  }

  // One neighbourhood collective: neighbour 2d is the low one, 2d + 1 the high one.
  void neighbor_alltoallw() {
    static const int counts[6] = {1, 1, 1, 1, 1, 1};
    static const MPI_Aint displs[6] = {0, 0, 0, 0, 0, 0};
    MPI_Neighbor_alltoallw(a_.data(), counts, displs, send_, a_.data(), counts, displs, recv_,
                           cart_);
  }

 private:
  grid3& a_;
  MPI_Comm cart_ = MPI_COMM_NULL;
  int nb_[6] = {};
  MPI_Datatype send_[6] = {}, recv_[6] = {};
};

// The MPI side of one configuration: its array and exchanges, checked once.
struct mpi_side {
  grid3 a;
  mpi_halo m;
  mpi_side(cairn::world& w, const config& c) : a(make_array(w, c)), m(a) {
    m.isend_irecv();
    check(a, "MPI_Isend/MPI_Irecv");
    clear_ghosts(a);
    m.neighbor_alltoallw();
    check(a, "MPI_Neighbor_alltoallw");
  }
};
#endif

// The cairn side of one configuration: its array and persistent exchange, checked once.
struct cairn_side {
  grid3 a;
  cairn::halo_exchange h;
  cairn_side(cairn::world& w, const config& c) : a(make_array(w, c)), h(a, {.corners = false}) {
    h.start();
    h.wait();
    check(a, "cairn halo_exchange");
    clear_ghosts(a);
    exchange_halos(a, false).wait();
    check(a, "cairn exchange_halos");
  }
};

// One timed variant: `body(n)` runs n exchanges, `sync` lines the ranks up before a sample.
struct variant {
  std::function<void(int)> body;
  std::function<void()> sync;
};

// Median seconds per exchange of each variant on this rank, sampled in turn (sample s of every
// variant before sample s + 1 of any), so that noise from the machine hits all alike.
std::vector<double> interleaved(const std::vector<variant>& vs, const config& c, bool quick) {
  std::vector<std::vector<double>> per(vs.size());
  const sampling one = sampling_for(c, quick);
  for (int s = 0; s < samples_for(c, quick); ++s)
    for (std::size_t v = 0; v < vs.size(); ++v)
      per[v].push_back(median_seconds_per_iter(one, vs[v].sync, vs[v].body));
  std::vector<double> out;
  for (auto& x : per) out.push_back(median(std::move(x)));
  return out;
}

constexpr const char* isend_name = "mpi-isend-subarray";
constexpr const char* neighbor_name = "mpi-neighbor-alltoallw";

int run_halo(const invocation& inv) {
  const auto cs = configs(inv.opts);
  const bool quick = inv.opts.quick;
  const bool under_mpi = cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::mpi;
  if (inv.opts.raw_mpi_only) {
    raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
    body = [&](cairn::world& w, report* rep) {
      for (const config& c : cs) {
        mpi_side x(w, c);
        const auto sync = [] { MPI_Barrier(MPI_COMM_WORLD); };
        const auto t = interleaved({{[&](int n) {
                                       for (int i = 0; i < n; ++i) x.m.isend_irecv();
                                     },
                                     sync},
                                    {[&](int n) {
                                       for (int i = 0; i < n; ++i) x.m.neighbor_alltoallw();
                                     },
                                     sync}},
                                   c, quick);
        check(x.a, "MPI, after timing");
        const double isend = mpi_slowest(t[0]), neighbor = mpi_slowest(t[1]);
        if (!rep) continue;
        rep->add(
            raw_mpi_row("halo", w.size(), c.size(), c.metric() + "_isend", "lower", isend * 1e6));
        rep->add(raw_mpi_row("halo", w.size(), c.size(), c.metric() + "_neighbor", "lower",
                             neighbor * 1e6));
      }
    };
#endif
    return run_raw_mpi_only(inv, body);
  }
  // A threads run spawns its MPI baseline first (as many processes as ranks).
  std::map<std::pair<std::string, std::size_t>, double> spawned;
  std::string why_missing;
  if (!under_mpi && inv.opts.baseline) {
    std::vector<std::string> rows;
    why_missing = spawn_raw_mpi_rows(inv, threads_run_ranks(inv), rows);
    for (const auto& line : rows) {
      const auto m = json_field(line, "metric"), s = json_field(line, "size"),
                 v = json_field(line, "baseline_value");
      if (m && s && v) spawned[{*m, std::stoull(*s)}] = std::stod(*v);
    }
  }
  return cairn::launch(inv.argc, inv.argv, [&](cairn::world& w) {
    std::optional<report> rep;
    if (w.rank() == 0) rep.emplace(inv.opts.json);
    if (w.rank() == 0 && !why_missing.empty()) note("halo: no mpi-raw baseline: " + why_missing);
    const std::string engine(to_string(w.engine()));
    for (const config& c : cs) {
      cairn_side x(w, c);
      const auto sync = [&] { w.barrier(); };
      std::vector<variant> vs{{[&](int n) {
                                 for (int i = 0; i < n; ++i) {
                                   x.h.start();
                                   x.h.wait();
                                 }
                               },
                               sync},
                              {[&](int n) {
                                 for (int i = 0; i < n; ++i) exchange_halos(x.a, false).wait();
                               },
                               sync}};
      std::optional<double> isend, neighbor;
#if CAIRN_BENCH_HAVE_MPI
      // Under mpirun the MPI exchanges are sampled in turn with cairn's.
      std::optional<mpi_side> y;
      const bool inline_mpi = under_mpi && inv.opts.baseline;
      if (inline_mpi) {
        y.emplace(w, c);
        const auto mpi_sync = [] { MPI_Barrier(MPI_COMM_WORLD); };
        vs.push_back({[&](int n) {
                        for (int i = 0; i < n; ++i) y->m.isend_irecv();
                      },
                      mpi_sync});
        vs.push_back({[&](int n) {
                        for (int i = 0; i < n; ++i) y->m.neighbor_alltoallw();
                      },
                      mpi_sync});
      }
#endif
      const auto t = interleaved(vs, c, quick);
      check(x.a, "cairn, after timing");
      const double persistent = slowest(w, t[0]), oneshot = slowest(w, t[1]);
#if CAIRN_BENCH_HAVE_MPI
      if (inline_mpi) {
        check(y->a, "MPI, after timing");
        isend = mpi_slowest(t[2]) * 1e6;
        neighbor = mpi_slowest(t[3]) * 1e6;
      }
#endif
      if (!under_mpi) {
        const auto find = [&](const std::string& m) -> std::optional<double> {
          const auto it = spawned.find({m, c.size()});
          if (it == spawned.end()) return std::nullopt;
          return it->second;
        };
        isend = find(c.metric() + "_isend");
        neighbor = find(c.metric() + "_neighbor");
      }
      if (!rep) continue;
      rep->add(row{"halo", engine, w.size(), c.size(), c.metric(), "lower", persistent * 1e6,
                   isend_name, isend});
      rep->add(row{"halo", engine, w.size(), c.size(), c.metric(), "lower", persistent * 1e6,
                   neighbor_name, neighbor});
      rep->add(row{"halo", engine, w.size(), c.size(), c.metric() + "_oneshot", "lower",
                   oneshot * 1e6, isend_name, isend});
    }
  });
}

const param_registrar params{
    "halo",
    {{"block", "points per dimension of each rank's block (comma-separated)",
      "64,256; 64 with --quick"},
     {"ghosts", "ghost widths (comma-separated)", "1,2"}}};

const registrar reg{{"halo",
                     "3-D 7-point halo exchange on a ghosted array vs MPI_Isend/Irecv of "
                     "subarray types and MPI_Neighbor_alltoallw",
                     run_halo}};

}  // namespace

}  // namespace cairn::bench
