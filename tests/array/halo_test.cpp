// Halo exchange on both engines: random 1-D, 2-D and 3-D arrays (sizes not divisible by the
// grid, random grids, ghost widths 0-3, periodicity, corners on and off, direct copies and
// messages, the world or a shuffled subgroup), every padded element checked against a
// sequential reference: interior untouched, ghosts hold the value at the (wrapped) global
// index, ghosts past non-periodic boundaries and (without corners) diagonal ghosts keep their
// sentinel. Also: a rank that is its own neighbour and both neighbours one rank, persistent
// exchanges restarted with new data, exchanges of two arrays in flight together, copies
// to and from darray, the printed plan, and bad input.
#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <type_traits>

#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::run;

namespace {

template <std::size_t N>
double value(const std::array<std::int64_t, N>& gi, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull;
  for (auto i : gi) x = (x ^ static_cast<std::uint64_t>(i)) * 0xBF58476D1CE4E5B9ull + 7;
  return static_cast<double>(x >> 11);
}

// Distinct per rank: a ghost that got another rank's untouched ghost would show.
double sentinel(int world_rank) { return -1.0 - world_rank; }

template <int N>
std::array<int, N> random_grid(std::mt19937_64& g, int p) {
  std::array<int, N> grid{};
  if (g() % 4 == 0) return grid;  // balanced default grid
  grid.fill(1);
  for (int f = 2; p > 1;) {
    if (p % f == 0) {
      grid[g() % N] *= f;
      p /= f;
    } else {
      ++f;
    }
  }
  return grid;
}

// True when the exchange must refuse the array: a ghost width above the interior extent of a
// coordinate some rank's ghosts come from.
template <int N>
bool too_wide(const cairn::layout<N>& l, const std::type_identity_t<std::array<int, N>>& ghosts,
              const std::type_identity_t<std::array<bool, N>>& periodic) {
  for (int d = 0; d < N; ++d) {
    const auto& m = l.desc().dims[static_cast<std::size_t>(d)];
    const int g = m.rep ? 1 : m.g;
    if (ghosts[d] == 0 || (g == 1 && !periodic[d])) continue;
    for (int c = 0; c < g; ++c)
      if (m.extent(c) < ghosts[d]) return true;
  }
  return false;
}

// Checks every padded element of `a` after an exchange of interior values `seed`; returns the
// number of wrong elements (printing the first few).
template <int N>
int check(cairn::ghosted_darray<double, N>& a, std::uint64_t seed, bool corners, int me) {
  using index = typename cairn::layout<N>::index;
  const auto& l = a.get_layout();
  if (l.group().rank() < 0) return a.padded_size() == 0 ? 0 : 1;
  const index n = a.interior_shape();
  const index shape = l.shape();
  std::int64_t total = 1;
  for (int d = 0; d < N; ++d) total *= a.padded_shape()[static_cast<std::size_t>(d)];
  int bad = 0;
  index first{};  // global index of local index 0 (per dimension)
  for (int d = 0; d < N; ++d) {
    const auto du = static_cast<std::size_t>(d);
    const auto& m = l.desc().dims[du];
    first[du] = m.rep ? 0 : m.global(0, l.coords(l.group().rank())[du]);
  }
  for (std::int64_t k = 0; k < total; ++k) {
    index li{}, gi{};
    std::int64_t rest = k;
    int outside = 0;
    bool filled = true;
    for (int d = N - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      li[du] = rest % a.padded_shape()[du] - a.ghosts()[du];
      rest /= a.padded_shape()[du];
      gi[du] = first[du] + li[du];
      if (li[du] < 0 || li[du] >= n[du]) {
        ++outside;
        if (gi[du] < 0 || gi[du] >= shape[du]) {
          if (a.periodic()[du])
            gi[du] = (gi[du] % shape[du] + shape[du]) % shape[du];
          else
            filled = false;
        }
      }
    }
    if (!corners && outside >= 2) filled = false;
    const double want = filled ? value(gi, seed) : sentinel(me);
    const double got = a[li];
    if (got != want && ++bad <= 3) {
      std::ostringstream os;
      for (int d = 0; d < N; ++d) os << (d ? "," : "") << li[static_cast<std::size_t>(d)];
      ADD_FAILURE() << "rank " << me << " local (" << os.str() << "): got " << got << ", want "
                    << want << (filled ? "" : " (sentinel)");
    }
  }
  return bad;
}

template <int N>
void prepare(cairn::ghosted_darray<double, N>& a, std::uint64_t seed, int me) {
  std::fill(a.padded().begin(), a.padded().end(), sentinel(me));
  a.fill([&](const auto& gi) { return value(gi, seed); });
}

template <int N>
void halo_case(cairn::world& w, std::mt19937_64& g, std::uint64_t seed) {
  // The world, or a shuffled subgroup (ranks outside hold nothing and call anyway).
  std::vector<int> members(static_cast<std::size_t>(w.size()));
  std::iota(members.begin(), members.end(), 0);
  if (g() % 3 == 0) {
    std::shuffle(members.begin(), members.end(), g);
    members.resize(1 + g() % members.size());
  }
  const cairn::group grp = w.group(members);
  typename cairn::layout<N>::index shape{};
  std::array<cairn::dim_dist, N> dists{};
  std::array<int, N> ghosts{};
  std::array<bool, N> periodic{};
  for (int d = 0; d < N; ++d) {
    const auto du = static_cast<std::size_t>(d);
    // Mostly wide enough for the grid, sometimes not (then the exchange must refuse).
    const int p = grp.size();
    const int limit = N == 1 ? 3 * p + 8 : (N == 2 ? p + 12 : 9);
    shape[du] = 1 + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(limit));
    dists[du] = g() % 6 == 0 ? cairn::dist::replicated : cairn::dist::block;
    ghosts[du] = static_cast<int>(g() % 4);
    if (g() % 3 == 0) ghosts[du] = std::min<int>(ghosts[du], 1);
    periodic[du] = g() % 2 == 0;
  }
  const cairn::halo_options o{.corners = g() % 2 == 0, .direct = g() % 3 != 0};
  const cairn::layout<N> l(grp, shape, dists, random_grid<N>(g, grp.size()));
  cairn::ghosted_darray<double, N> a(l, ghosts, periodic);
  if (too_wide(l, ghosts, periodic)) {
    const std::string m = message_of([&] { exchange_halos(a, o).wait(); });
    EXPECT_TRUE(has_text(m, "exchange_halos") && has_text(m, "ghost width") &&
                has_text(m, "interior extent"))
        << m;
    if (grp.rank() >= 0) {
      EXPECT_TRUE(has_text(m, "rank " + std::to_string(w.rank()))) << m;
    }
    return;
  }
  prepare(a, seed, w.rank());
  exchange_halos(a, o).wait();
  const int bad = check(a, seed, o.corners, w.rank());
  EXPECT_EQ(bad, 0) << "case " << seed << ": " << l << ", ghosts " << ghosts[0]
                    << (N > 1 ? "," + std::to_string(ghosts[N > 1 ? 1 : 0]) : "")
                    << (N > 2 ? "," + std::to_string(ghosts[N > 2 ? 2 : 0]) : "") << ", corners "
                    << o.corners << ", direct " << o.direct;
}

TEST(Halo, RandomArrays) {
  run([](cairn::world& w) {
    std::mt19937_64 g(2718);  // same sequence on every rank
    for (int iter = 0; iter < 240; ++iter) {
      const auto seed = static_cast<std::uint64_t>(iter);
      switch (iter % 3) {
        case 0: halo_case<1>(w, g, seed); break;
        case 1: halo_case<2>(w, g, seed); break;
        default: halo_case<3>(w, g, seed); break;
      }
    }
  });
}

// Periodic grids of extent 1 (each rank its own neighbour) and 2 (both neighbours one rank),
// ghost widths up to the interior extent, corners on and off, both paths.
TEST(Halo, OwnNeighbourAndOneRankBothSides) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const int p = w.size();
    std::uint64_t seed = 100;
    for (const bool corners : {true, false}) {
      for (const bool direct : {true, false}) {
        const cairn::halo_options o{.corners = corners, .direct = direct};
        // 2-D: grid p x 1 with periodic columns (extent 1: each rank wraps onto itself).
        for (const int gw : {1, 2, 3}) {
          cairn::layout<2> l(all, {3 * p, 5}, {cairn::dist::block, cairn::dist::block}, {p, 1});
          cairn::ghosted_darray<double, 2> a(l, {gw, gw}, {true, true});
          prepare(a, ++seed, w.rank());
          exchange_halos(a, o).wait();
          EXPECT_EQ(check(a, seed, corners, w.rank()), 0) << "p x 1, ghosts " << gw;
        }
        // 3-D: grid 2 x (p/2) x 1 when p is even: both neighbours along dimension 0 are one rank.
        if (p % 2 == 0) {
          cairn::layout<3> l(all, {4, 2 * p, 3},
                             {cairn::dist::block, cairn::dist::block, cairn::dist::block},
                             {2, p / 2, 1});
          cairn::ghosted_darray<double, 3> a(l, {2, 1, 2}, {true, false, true});
          prepare(a, ++seed, w.rank());
          exchange_halos(a, o).wait();
          EXPECT_EQ(check(a, seed, corners, w.rank()), 0) << "2 x p/2 x 1";
        }
      }
    }
  });
}

TEST(Halo, PersistentRestartedWithNewData) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    for (int iter = 0; iter < 12; ++iter) {
      const bool corners = iter % 2 == 0;
      cairn::layout<3> l(all, {7 + iter % 3, 6, 5 + iter},
                         {cairn::dist::block, cairn::dist::block, cairn::dist::block});
      const std::array<bool, 3> periodic{iter % 3 == 0, iter % 4 < 2, true};
      std::array<int, 3> ghosts{1, iter % 2, 1};
      if (too_wide(l, ghosts, periodic)) ghosts = {0, 0, 1};
      if (too_wide(l, ghosts, periodic)) continue;
      cairn::ghosted_darray<double, 3> a(l, ghosts, periodic);
      cairn::halo_exchange h(a, {.corners = corners, .direct = iter % 3 != 2});
      for (int k = 0; k < 4; ++k) {
        const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(iter * 10 + k);
        prepare(a, seed, w.rank());
        h.start();
        if (k % 2 == 0) {
          while (!h.test()) {
          }
        } else {
          h.wait();
        }
        EXPECT_EQ(check(a, seed, corners, w.rank()), 0) << "iteration " << iter << ", start " << k;
      }
    }
  });
}

// Exchanges of two arrays (and of one array twice, in separate calls) in flight together,
// completed by one wait_all with a point-to-point request: none takes another's messages.
TEST(Halo, SeveralExchangesInFlight) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    for (int iter = 0; iter < 6; ++iter) {
      const bool corners = iter % 2 == 0;
      cairn::layout<2> la(all, {3 * w.size() + 1, 9}, {cairn::dist::block, cairn::dist::block});
      cairn::layout<2> lb(all, {2 * w.size(), 2 * w.size()},
                          {cairn::dist::block, cairn::dist::block});
      cairn::ghosted_darray<double, 2> a(la, {1, 1}, {true, true});
      cairn::ghosted_darray<double, 2> b(lb, {1, 2}, {true, false});
      if (too_wide(la, a.ghosts(), a.periodic()) || too_wide(lb, b.ghosts(), b.periodic()))
        continue;
      prepare(a, 7, w.rank());
      prepare(b, 8, w.rank());
      const cairn::halo_options o{.corners = corners, .direct = iter < 3};
      std::vector<int> token(1, w.rank()), got(1, -1);
      std::vector<cairn::request> rs;
      rs.push_back(exchange_halos(a, o));
      rs.push_back(exchange_halos(b, o));
      rs.push_back(w.irecv(got, (w.rank() + w.size() - 1) % w.size(), 5));
      w.send(token, (w.rank() + 1) % w.size(), 5);
      cairn::wait_all(rs);
      EXPECT_EQ(got[0], (w.rank() + w.size() - 1) % w.size());
      EXPECT_EQ(check(a, 7, corners, w.rank()), 0);
      EXPECT_EQ(check(b, 8, corners, w.rank()), 0);
    }
  });
}

TEST(Halo, AccessorsCopiesAndPlan) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    cairn::layout<2> l(all, {3 * w.size(), 6}, {cairn::dist::block, cairn::dist::block},
                       {w.size(), 1});
    cairn::ghosted_darray<int, 2> a(l, {1, 2}, {false, true});
    const auto n = a.interior_shape();
    EXPECT_EQ(n, l.local_shape());
    EXPECT_EQ(a.padded_shape()[0], n[0] + 2);
    EXPECT_EQ(a.padded_shape()[1], n[1] + 4);
    EXPECT_EQ(a.padded_strides()[1], 1);
    EXPECT_EQ(a.padded_strides()[0], n[1] + 4);
    EXPECT_EQ(a.padded_size(), static_cast<std::size_t>((n[0] + 2) * (n[1] + 4)));
    EXPECT_EQ(&a(-1, -2), a.data());
    EXPECT_EQ(a.offset({0, 0}), n[1] + 4 + 2);
    cairn::darray<int, 2> d(l);
    d.fill([](const auto& gi) { return static_cast<int>(gi[0] * 10 + gi[1]); });
    a.copy_from(d);
    int bad = 0;
    a.for_each([&](const auto& gi, int& x) { bad += x != gi[0] * 10 + gi[1]; });
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(a(-1, 0), 0);  // ghosts untouched by copies
    cairn::darray<int, 2> back = a.to_darray();
    EXPECT_TRUE(std::equal(back.local().begin(), back.local().end(), d.local().begin()));
    cairn::layout<2> other(all, {2 * w.size() + 3, 7}, {cairn::dist::block, cairn::dist::block});
    cairn::darray<int, 2> wrong(other);
    EXPECT_TRUE(has_text(message_of([&] { a.copy_from(wrong); }), "ghosted_darray::copy_from"));
    EXPECT_TRUE(has_text(message_of([&] { a.copy_to(wrong); }), "layout differs"));
    // The plan prints its phases and faces; one phase per dimension with ghosts and neighbours.
    cairn::halo_exchange h(a, {.corners = true});
    std::ostringstream os;
    os << *h.plan();
    EXPECT_TRUE(has_text(os.str(), "halo plan of world rank " + std::to_string(w.rank())))
        << os.str();
    EXPECT_EQ(h.plan()->phases.size(), w.size() > 1 ? 2u : 1u) << os.str();
    EXPECT_TRUE(has_text(os.str(), "dimension 1")) << os.str();
    // Periodic dimension 1 on a grid of extent 1: both of its faces go to this rank itself.
    EXPECT_TRUE(has_text(os.str(), "(itself)")) << os.str();
    cairn::halo_exchange faces(a, {.corners = false});
    EXPECT_EQ(faces.plan()->phases.size(), 1u);
    h.start();
    h.wait();
    for (std::int64_t i = 0; i < n[0]; ++i) {
      const auto gi0 = l.to_global({i, 0})[0];
      EXPECT_EQ(a(i, -1), gi0 * 10 + 5);
      EXPECT_EQ(a(i, 6), gi0 * 10 + 0);
    }
  });
}

TEST(Halo, BadInputIsAnError) {
  run([](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    using L = cairn::layout<2>;
    // Ghosts need BLOCK (or replicated) dimensions.
    for (const auto d : {cairn::dist::cyclic, cairn::dist::block_cyclic(2)}) {
      const L l(all, {8, 8}, {d, cairn::dist::block});
      const std::string m = message_of([&] { cairn::ghosted_darray<double, 2> a(l, {1, 0}); });
      EXPECT_TRUE(has_text(m, "ghosted_darray") && has_text(m, "ghost width 1 in dimension 0") &&
                  has_text(m, d == cairn::dist::cyclic ? "cyclic" : "block_cyclic"))
          << m;
      cairn::ghosted_darray<double, 2> fine(l, {0, 1});  // no ghosts there: fine
      EXPECT_EQ(fine.ghosts()[1], 1);
    }
    EXPECT_TRUE(has_text(message_of([&] {
                           cairn::ghosted_darray<double, 2> a(
                               L(all, {8, 8}, {cairn::dist::block, cairn::dist::block}), {-1, 0});
                         }),
                         "negative ghost width -1"));
    // A ghost width wider than a neighbour's interior: every rank fails before anything is
    // sent, naming the call, itself and the values, and the next exchange works.
    const L l(all, {2 * w.size(), 4}, {cairn::dist::block, cairn::dist::block}, {w.size(), 1});
    cairn::ghosted_darray<double, 2> a(l, {3, 1}, {true, false});
    for (const char* call : {"exchange_halos", "halo_exchange"}) {
      const std::string m = message_of([&] {
        if (call[0] == 'e')
          exchange_halos(a).wait();
        else
          cairn::halo_exchange h(a);
      });
      EXPECT_TRUE(has_text(m, call) && has_text(m, "rank " + std::to_string(w.rank())) &&
                  has_text(m, "ghost width 3 in dimension 0") && has_text(m, "interior extent 2"))
          << m;
    }
    // An empty interior next to ghosts (more ranks than indices) is refused the same way.
    if (w.size() > 1) {
      const L e(all, {w.size() - 1, 3}, {cairn::dist::block, cairn::dist::block}, {w.size(), 1});
      cairn::ghosted_darray<double, 2> b(e, {1, 0});
      EXPECT_TRUE(has_text(message_of([&] { exchange_halos(b).wait(); }), "interior extent 0"));
      cairn::ghosted_darray<double, 2> c(e, {0, 1}, {false, true});  // fine along dimension 1
      prepare(c, 5, w.rank());
      exchange_halos(c).wait();
      EXPECT_EQ(check(c, 5, true, w.rank()), 0);
    }
    cairn::ghosted_darray<double, 2> ok(l, {2, 1}, {true, false});
    prepare(ok, 9, w.rank());
    exchange_halos(ok, false).wait();
    EXPECT_EQ(check(ok, 9, false, w.rank()), 0);
  });
}

}  // namespace
