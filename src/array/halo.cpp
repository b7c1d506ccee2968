// Halo exchange as redistribution plans built by hand: each face a rank sends is one plan entry
// whose runs (one per dimension) address the sender's and the receiver's padded local parts,
// so the transfer executor runs a halo exchange as it runs a redistribution with source =
// destination = the padded storage: straight copies from the neighbour's memory on the threads
// engine, packed faces (or faces sent from place when contiguous) through messages on MPI.
// With corners, one phase (stage) per dimension, each face spanning the ghosts earlier phases
// filled; without, every face in one phase (faces and ghosts of different dimensions are then
// disjoint). Planning touches O(dimensions x neighbours) values, never elements.
#include "cairn/array/halo.hpp"

#include <algorithm>
#include <ostream>
#include <span>
#include <string>
#include <utility>

#include "array/array_exec.hpp"
#include "array/plan_cache.hpp"
#include "cairn/runtime/error.hpp"
#include "runtime/group_members.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  a ^= b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2);
  return a * 0xBF58476D1CE4E5B9ull;
}

// Per rank: how many halo exchanges it made on each group, so that exchanges of different
// arrays (or of one array started as separate one-shot calls) in flight together use
// different tags. Ranks of a group make them in the same order.
struct halo_rank {
  explicit halo_rank(rank_context&) {}
  std::vector<std::pair<std::uint64_t, std::uint64_t>> made;  // (group id, exchanges made)
  std::uint64_t next(std::uint64_t group_id) {
    for (auto& [id, n] : made)
      if (id == group_id) return n++;
    made.emplace_back(group_id, 1);
    return 0;
  }
};

using extents = std::array<std::int64_t, max_dims>;

// Everything the plan of one rank is made of.
struct halo_geometry {
  const layout_desc& l;
  const std::vector<int>& members;
  const int* ghosts;
  const bool* periodic;

  // Grid extent along d for neighbours: a replicated dimension is whole on every rank.
  [[nodiscard]] int grid(int d) const {
    const dim_map& m = l.dims[static_cast<std::size_t>(d)];
    return m.rep ? 1 : m.g;
  }
  // True when ghosts along d are filled from someone (the width is nonzero and some coordinate
  // has a neighbour).
  [[nodiscard]] bool exchanged(int d) const {
    return ghosts[d] > 0 && (periodic[d] || grid(d) > 1);
  }
  // Coordinate of the neighbour of coordinate c along d on side s (-1, +1), or -1.
  [[nodiscard]] int neighbour(int d, int c, int s) const {
    if (ghosts[d] == 0) return -1;
    const int g = grid(d);
    if (g == 1) return periodic[d] ? c : -1;
    const int n = c + s;
    if (n >= 0 && n < g) return n;
    return periodic[d] ? (n + g) % g : -1;
  }
  void interior(const int* c, std::int64_t* ext) const { l.extents_at(c, ext); }
  void strides(const int* c, std::int64_t* str) const {
    extents ext{};
    interior(c, ext.data());
    std::int64_t s = 1;
    for (int d = l.ndim - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      str[du] = s;
      s *= ext[du] + 2 * ghosts[d];
    }
  }
  [[nodiscard]] int world_rank_at(const int* c) const {
    int r = 0;
    for (int d = 0; d < l.ndim; ++d) r = r * l.dims[static_cast<std::size_t>(d)].g + c[d];
    return members[static_cast<std::size_t>(r)];
  }
};

// True when the entry's indices are one block of a padded local part with extents `ext` (the
// inner dimensions whole, one interval at the first that is not, single indices above).
bool contiguous(const redistribution_plan& p, const plan_peer& pe, const std::int64_t* ext,
                bool src_side) {
  auto one = [&](int k) {
    const auto ku = static_cast<std::size_t>(k);
    return (src_side ? p.dims[ku].src_one : p.dims[ku].dst_one)[pe.pair[ku]] != 0;
  };
  auto total = [&](int k) {
    return p.dims[static_cast<std::size_t>(k)].total[pe.pair[static_cast<std::size_t>(k)]];
  };
  int d = p.src.ndim - 1;
  while (d > 0 && one(d) && total(d) == ext[d]) --d;
  if (!one(d)) return false;
  for (int k = 0; k < d; ++k)
    if (total(k) != 1) return false;
  return true;
}

// Builds the plan of one phase: dimension `dim`, or every exchanged dimension when -1.
halo_plan::phase build_phase(const halo_geometry& h, int world_rank, std::size_t elem_size,
                             const int* me, int dim, bool corners) {
  const int n = h.l.ndim;
  auto p = std::make_shared<redistribution_plan>();
  p->rank = world_rank;
  p->elem_size = elem_size;
  p->src = p->dst = h.l;
  p->src_members = p->dst_members = h.members;
  p->groups_id = hash_ranks(h.members, 0x4A10ull);
  p->dims.resize(static_cast<std::size_t>(n));
  for (dim_plan& dp : p->dims) dp.first.push_back(0);

  halo_plan::phase ph;
  ph.dim = dim;
  extents my_ext{};
  h.interior(me, my_ext.data());

  // The index range of dimension e (padded coordinates) every face of dimension d spans; the
  // sender and the receiver agree, as they share their coordinate along e.
  auto span_of = [&](int e, int d) -> std::pair<std::int64_t, std::int64_t> {
    const auto eu = static_cast<std::size_t>(e);
    const std::int64_t g = h.ghosts[e];
    if (corners && e < d) {
      const std::int64_t lo = h.neighbour(e, me[e], -1) >= 0 ? 0 : g;
      const std::int64_t hi = g + my_ext[eu] + (h.neighbour(e, me[e], +1) >= 0 ? g : 0);
      return {lo, hi - lo};
    }
    return {g, my_ext[eu]};
  };

  // One entry: `from` sends its faces on the sides `sides` of dimension d to `to`, which fills
  // its ghosts on the opposite sides. Two sides (both neighbours one rank) make one entry of
  // two runs along d, in the order of the sender's sides: one message (or one pass over the
  // rows, which the two faces share when d is the last dimension) instead of two.
  auto add = [&](std::vector<plan_peer>& list, std::vector<halo_plan::face>& faces, int d,
                 std::span<const int> sides, const int* from, const int* to, int face_side) {
    plan_peer pe;
    extents fext{}, text{}, fpad{}, tpad{};
    h.interior(from, fext.data());
    h.interior(to, text.data());
    for (int e = 0; e < n; ++e) {
      const auto eu = static_cast<std::size_t>(e);
      fpad[eu] = fext[eu] + 2 * h.ghosts[e];
      tpad[eu] = text[eu] + 2 * h.ghosts[e];
    }
    h.strides(from, pe.src_strides.data());
    h.strides(to, pe.dst_strides.data());
    std::array<dim_run, max_dims> runs{};
    pe.elements = 1;
    for (int e = 0; e < n; ++e) {
      const auto eu = static_cast<std::size_t>(e);
      if (e == d) {
        pe.elements *= h.ghosts[e] * static_cast<std::int64_t>(sides.size());
      } else {
        const auto [lo, len] = span_of(e, d);
        runs[eu] = {lo, lo, len};
        pe.elements *= len;
      }
    }
    if (pe.elements == 0) return;  // the neighbour computes the same
    for (int e = 0; e < n; ++e) {
      const auto eu = static_cast<std::size_t>(e);
      dim_plan& dp = p->dims[eu];
      pe.pair[eu] = static_cast<std::uint32_t>(dp.total.size());
      if (e == d) {
        const std::int64_t g = h.ghosts[e];
        for (const int s : sides)
          dp.runs.push_back({s < 0 ? g : fext[eu], s > 0 ? 0 : g + text[eu], g});
        dp.total.push_back(g * static_cast<std::int64_t>(sides.size()));
      } else {
        dp.runs.push_back(runs[eu]);
        dp.total.push_back(runs[eu].len);
      }
      dp.first.push_back(static_cast<std::uint32_t>(dp.runs.size()));
      const std::uint8_t one = e != d || sides.size() == 1;
      dp.src_one.push_back(one);
      dp.dst_one.push_back(one);
      const dim_run& r0 = dp.of(pe.pair[eu]).front();
      pe.src_first += r0.src * pe.src_strides[eu];
      pe.dst_first += r0.dst * pe.dst_strides[eu];
    }
    pe.world_rank = h.world_rank_at(&list == &p->sends ? to : from);
    pe.src_contiguous = contiguous(*p, pe, fpad.data(), true);
    pe.dst_contiguous = contiguous(*p, pe, tpad.data(), false);
    list.push_back(pe);
    faces.push_back({d, face_side});
  };

  // Sends in (dimension, side) order; receives in the same order of the senders' sides, so
  // that entries between one pair of ranks match in order.
  static constexpr int low[] = {-1}, high[] = {+1}, both[] = {-1, +1};
  std::array<int, max_dims> other{};
  auto at = [&](int d, int c) {
    std::copy(me, me + n, other.begin());
    other[static_cast<std::size_t>(d)] = c;
    return other.data();
  };
  for (int d = 0; d < n; ++d) {
    if ((dim >= 0 && d != dim) || !h.exchanged(d)) continue;
    const int lo = h.neighbour(d, me[d], -1), hi = h.neighbour(d, me[d], +1);
    if (lo >= 0 && lo == hi) {  // one rank on both sides (perhaps this one)
      add(p->sends, ph.send_faces, d, both, me, at(d, lo), 0);
      if (h.world_rank_at(at(d, lo)) != world_rank)
        add(p->recvs, ph.recv_faces, d, both, at(d, lo), me, 0);
      continue;
    }
    if (lo >= 0) add(p->sends, ph.send_faces, d, low, me, at(d, lo), -1);
    if (hi >= 0) add(p->sends, ph.send_faces, d, high, me, at(d, hi), +1);
    // The sender's side s fills this rank's side -s: from the high neighbour first.
    if (hi >= 0) add(p->recvs, ph.recv_faces, d, low, at(d, hi), me, +1);
    if (lo >= 0) add(p->recvs, ph.recv_faces, d, high, at(d, lo), me, -1);
  }
  for (dim_plan& dp : p->dims) dp.gs = dp.gd = 1;
  ph.plan = std::move(p);
  return ph;
}

std::shared_ptr<const halo_plan> compute_halo_plan(const char* call, int world_rank,
                                                   std::size_t elem_size, const layout_desc& l,
                                                   const std::vector<int>& members, int me,
                                                   const int* ghosts, const bool* periodic,
                                                   bool corners) {
  check_ghosts(call, world_rank, l, ghosts);
  const halo_geometry h{l, members, ghosts, periodic};
  // Every rank checks every coordinate, so all of them fail together, before anything is sent.
  for (int d = 0; d < l.ndim; ++d) {
    if (!h.exchanged(d)) continue;
    const dim_map& m = l.dims[static_cast<std::size_t>(d)];
    for (int c = 0; c < h.grid(d); ++c) {
      const std::int64_t ext = m.extent(c);
      if (ext < ghosts[d])
        fail(call, world_rank, "ghost width ", ghosts[d], " in dimension ", d,
             " is larger than the interior extent ", ext, " of the ranks at grid coordinate ", c,
             " of that dimension (", m.n, " indices over ", m.g,
             " coordinates): a rank's ghosts must come from its neighbour's interior");
    }
  }
  auto p = std::make_shared<halo_plan>();
  p->rank = world_rank;
  p->elem_size = elem_size;
  p->layout = l;
  p->members = members;
  p->corners = corners;
  for (std::size_t d = 0; d < static_cast<std::size_t>(l.ndim); ++d) {
    p->ghosts[d] = ghosts[d];
    p->periodic[d] = periodic[d];
  }
  if (me < 0) return p;  // outside the group: nothing to exchange
  int c[max_dims] = {};
  l.coords_of(me, c);
  h.interior(c, p->interior.data());
  for (std::size_t d = 0; d < static_cast<std::size_t>(l.ndim); ++d)
    p->padded[d] = p->interior[d] + 2 * ghosts[d];
  if (corners) {
    for (int d = 0; d < l.ndim; ++d)
      if (h.exchanged(d)) p->phases.push_back(build_phase(h, world_rank, elem_size, c, d, true));
  } else {
    bool any = false;
    for (int d = 0; d < l.ndim; ++d) any = any || h.exchanged(d);
    if (any) p->phases.push_back(build_phase(h, world_rank, elem_size, c, -1, false));
  }
  return p;
}

std::unique_ptr<array_exec> prepare(rank_context& ctx, const char* call,
                                    const std::shared_ptr<const halo_plan>& plan, void* data,
                                    const halo_options& o, std::uint64_t group_id) {
  auto e = std::make_unique<array_exec>();
  e->ctx = &ctx;
  e->call = call;
  e->direct = o.direct && ctx.reaches_peer_memory();
  const std::uint64_t seq = ctx.layer<halo_rank>().next(group_id);
  auto* bytes = static_cast<std::byte*>(data);
  for (const halo_plan::phase& ph : plan->phases) {
    const std::uint64_t key =
        mix(mix(group_id ^ 0x4A105EEDull, seq), static_cast<std::uint64_t>(ph.dim + 2));
    stage st{ph.plan, bytes, bytes, array_match{key, 0}, array_match{key, 1}};
    // Cross-memory reads walk the sender's pages per run, and faces are short runs (or rows of
    // one phase's mixed lengths, on which ranks might decide differently): messages.
    st.cross_memory = false;
    e->stages.push_back(std::move(st));
  }
  return e;
}

}  // namespace

void check_ghosts(const char* call, int rank, const layout_desc& l, const int* ghosts) {
  for (int d = 0; d < l.ndim; ++d) {
    const dim_map& m = l.dims[static_cast<std::size_t>(d)];
    if (ghosts[d] < 0) fail(call, rank, "negative ghost width ", ghosts[d], " in dimension ", d);
    if (ghosts[d] > 0 && m.d.k != dim_dist::kind::block && m.d.k != dim_dist::kind::replicated)
      fail(call, rank, "ghost width ", ghosts[d], " in dimension ", d, ", which is ",
           m.d.k == dim_dist::kind::cyclic ? "cyclic" : "block_cyclic",
           ": ghosts need a BLOCK (or replicated) dimension");
  }
}

std::shared_ptr<const halo_plan> cached_halo_plan(const char* call, int world_rank,
                                                  std::size_t elem_size, const layout_desc& l,
                                                  const std::vector<int>& members, int me,
                                                  const int* ghosts, const bool* periodic,
                                                  bool corners) {
  plan_key key;
  key.put(world_rank);
  key.put(me);
  key.put(elem_size);
  key.put(corners);
  key.put(l.ndim);
  for (std::size_t d = 0; d < static_cast<std::size_t>(l.ndim); ++d) {
    key.put_dim(l.dims[d]);
    key.put(l.dims[d].d.k);
    key.put(ghosts[d]);
    key.put(periodic[d]);
  }
  key.put_ranks(members);
  return cached<halo_plan, 16>(std::move(key), [&] {
    return compute_halo_plan(call, world_rank, elem_size, l, members, me, ghosts, periodic,
                             corners);
  });
}

request start_halo(const cairn::group& g, const char* call, std::shared_ptr<const halo_plan> plan,
                   void* data, const halo_options& o) {
  if (g.rank() < 0) return {};
  rank_context& ctx = g.context(call);
  ctx.check_alive(call);
  return start_request(prepare(ctx, call, plan, data, o, g.id()));
}

persistent_transfer halo_init(const cairn::group& g, const char* call,
                              std::shared_ptr<const halo_plan> plan, void* data,
                              const halo_options& o) {
  if (g.rank() < 0) return {};
  rank_context& ctx = g.context(call);
  ctx.check_alive(call);
  return persistent_transfer(prepare(ctx, call, plan, data, o, g.id()));
}

}  // namespace cairn::detail

namespace cairn {

std::int64_t halo_plan::send_elements() const noexcept {
  std::int64_t s = 0;
  for (const phase& ph : phases) s += ph.plan->send_elements();
  return s;
}

std::int64_t halo_plan::recv_elements() const noexcept {
  std::int64_t s = 0;
  for (const phase& ph : phases) s += ph.plan->recv_elements();
  return s;
}

std::ostream& operator<<(std::ostream& os, const halo_plan& p) {
  const auto n = static_cast<std::size_t>(p.layout.ndim);
  auto extents = [&](const auto& v) {
    for (std::size_t d = 0; d < n; ++d) os << (d ? "x" : "") << v[d];
  };
  os << "halo plan of world rank " << p.rank << " (" << p.elem_size << "-byte elements)\n  array "
     << p.layout << " over " << p.members.size() << " ranks\n  ghosts ";
  extents(p.ghosts);
  os << ", periodic ";
  for (std::size_t d = 0; d < n; ++d) os << (d ? "," : "") << (p.periodic[d] ? "yes" : "no");
  os << (p.corners ? ", corners included" : ", faces only (no corners)") << "\n  interior ";
  extents(p.interior);
  os << ", padded ";
  extents(p.padded);
  os << "\n  phases: " << p.phases.size();
  for (std::size_t i = 0; i < p.phases.size(); ++i) {
    const halo_plan::phase& ph = p.phases[i];
    const redistribution_plan& rp = *ph.plan;
    os << "\n  phase " << i + 1 << " (";
    if (ph.dim >= 0)
      os << "dimension " << ph.dim;
    else
      os << "every dimension";
    os << "): " << rp.sends.size() << " sends, " << rp.recvs.size() << " receives";
    auto entries = [&](const char* what, const std::vector<plan_peer>& v,
                       const std::vector<halo_plan::face>& faces) {
      for (std::size_t k = 0; k < v.size(); ++k) {
        const plan_peer& e = v[k];
        std::int64_t runs = 0;
        rp.for_each_run(e, [&](std::int64_t, std::int64_t, std::int64_t) { ++runs; });
        const bool contiguous = what[0] == 's' ? e.src_contiguous : e.dst_contiguous;
        os << "\n    " << what << " rank " << e.world_rank
           << (e.world_rank == p.rank ? " (itself)" : "") << ": dimension " << faces[k].dim << ", "
           << (faces[k].side < 0 ? "low" : (faces[k].side > 0 ? "high" : "both"))
           << (what[0] == 's' ? (faces[k].side ? " face, " : " faces, ") : " ghosts, ")
           << e.elements << " elements, " << e.elements * static_cast<std::int64_t>(p.elem_size)
           << " bytes, " << runs << (runs == 1 ? " run, " : " runs, ")
           << (contiguous ? "contiguous" : "strided");
      }
    };
    entries("send to", rp.sends, ph.send_faces);
    entries("receive from", rp.recvs, ph.recv_faces);
  }
  return os << '\n';
}

}  // namespace cairn
