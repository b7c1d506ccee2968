// A rank's redistribution plan from the per-dimension sweeps: its peers (only pairs that
// exchange data), their element counts and contiguity; printing; the per-thread plan cache.
#include <algorithm>
#include <cstring>
#include <ostream>
#include <sstream>
#include <string>

#include "array/plan_cache.hpp"
#include "cairn/array/plan.hpp"
#include "cairn/runtime/error.hpp"
#include "runtime/group_members.hpp"

namespace cairn::detail {

namespace {

using strides_t = std::array<std::int64_t, max_dims>;

// Local extents and row-major strides of grid coordinates c.
void local_geometry(const layout_desc& l, const int* c, std::int64_t* ext, std::int64_t* str) {
  std::int64_t s = 1;
  for (int d = l.ndim - 1; d >= 0; --d) {
    const auto du = static_cast<std::size_t>(d);
    ext[d] = l.dims[du].extent(c[d]);
    str[d] = s;
    s *= ext[d];
  }
}

// True when the pair's indices on one side are one block of that side's local part (row-major):
// the inner dimensions complete, one interval at the first incomplete one, single indices above.
bool contiguous(const redistribution_plan& p, const plan_peer& pe, const std::int64_t* ext,
                bool src_side) {
  int d = p.src.ndim - 1;
  auto one = [&](int k) {
    const auto ku = static_cast<std::size_t>(k);
    return (src_side ? p.dims[ku].src_one : p.dims[ku].dst_one)[pe.pair[ku]] != 0;
  };
  auto total = [&](int k) {
    return p.dims[static_cast<std::size_t>(k)].total[pe.pair[static_cast<std::size_t>(k)]];
  };
  while (d > 0 && one(d) && total(d) == ext[d]) --d;
  if (!one(d)) return false;
  for (int k = 0; k < d; ++k)
    if (total(k) != 1) return false;
  return true;
}

// Fills elements, contiguity and first offsets of a peer whose pair indices are set; false if
// the pair exchanges nothing.
bool finish_peer(const redistribution_plan& p, plan_peer& pe, const std::int64_t* src_ext,
                 const std::int64_t* dst_ext) {
  pe.elements = 1;
  for (int d = 0; d < p.src.ndim; ++d) {
    const auto du = static_cast<std::size_t>(d);
    pe.elements *= p.dims[du].total[pe.pair[du]];
    if (pe.elements == 0) return false;
  }
  pe.src_contiguous = contiguous(p, pe, src_ext, true);
  pe.dst_contiguous = contiguous(p, pe, dst_ext, false);
  pe.src_first = pe.dst_first = 0;
  for (int d = 0; d < p.src.ndim; ++d) {
    const auto du = static_cast<std::size_t>(d);
    const dim_run& r = p.dims[du].of(pe.pair[du]).front();
    pe.src_first += r.src * pe.src_strides[du];
    pe.dst_first += r.dst * pe.dst_strides[du];
  }
  return true;
}

std::string shape_text(const layout_desc& l) {
  std::ostringstream s;
  s << '[';
  for (std::size_t d = 0; d < static_cast<std::size_t>(l.ndim); ++d)
    s << (d ? " x " : "") << l.dims[d].n;
  s << ']';
  return s.str();
}

}  // namespace

namespace {
// What every rank of a transfer passes alike, as plan-key bytes: the cache key without the
// rank, and the input of the plan's agreement hash.
plan_key shared_inputs(std::size_t elem_size, int chunks, const layout_desc& src,
                       const std::vector<int>& src_members, const layout_desc& dst,
                       const std::vector<int>& dst_members) {
  plan_key key;
  key.put(elem_size);
  key.put(chunks);
  for (const layout_desc* l : {&src, &dst}) {
    key.put(l->ndim);
    for (std::size_t d = 0; d < static_cast<std::size_t>(l->ndim); ++d) key.put_dim(l->dims[d]);
  }
  key.put_ranks(src_members);
  key.put_ranks(dst_members);
  return key;
}
}  // namespace

std::shared_ptr<const redistribution_plan> compute_plan(
    const char* call, int world_rank, std::size_t elem_size, const layout_desc& src,
    const std::vector<int>& src_members, const layout_desc& dst,
    const std::vector<int>& dst_members, int chunks) {
  check_chunks(call, world_rank, chunks);
  bool same_shape = src.ndim == dst.ndim;
  for (std::size_t d = 0; same_shape && d < static_cast<std::size_t>(src.ndim); ++d)
    same_shape = src.dims[d].n == dst.dims[d].n;
  if (!same_shape)
    fail(call, world_rank, "shape mismatch: source ", shape_text(src), ", destination ",
         shape_text(dst));
  if (src.grid_size() != static_cast<int>(src_members.size()) ||
      dst.grid_size() != static_cast<int>(dst_members.size()))
    fail(call, world_rank, "layout grid does not match its group (", src.grid_size(), " vs ",
         src_members.size(), ", ", dst.grid_size(), " vs ", dst_members.size(), ")");

  auto p = std::make_shared<redistribution_plan>();
  p->rank = world_rank;
  p->elem_size = elem_size;
  p->chunks = chunks;
  p->src = src;
  p->dst = dst;
  p->src_members = src_members;
  p->dst_members = dst_members;
  p->groups_id = hash_ranks(dst_members, hash_ranks(src_members));
  // FNV-1a over the inputs every rank shares (the plan key without its rank), never 0.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : shared_inputs(elem_size, chunks, src, src_members, dst, dst_members).bytes)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  p->agreement = h | 1;
  const int n = src.ndim;
  p->dims.reserve(static_cast<std::size_t>(n));
  for (std::size_t d = 0; d < static_cast<std::size_t>(n); ++d)
    p->dims.push_back(sweep_dimension(src.dims[d], dst.dims[d]));

  const auto find = [&](const std::vector<int>& m) {
    const auto it = std::find(m.begin(), m.end(), world_rank);
    return it == m.end() ? -1 : static_cast<int>(it - m.begin());
  };
  const int rs = find(src_members), rd = find(dst_members);
  int cs[max_dims] = {}, cd[max_dims] = {};
  std::int64_t se[max_dims] = {}, de[max_dims] = {};
  plan_peer pe;
  if (rs >= 0) {
    src.coords_of(rs, cs);
    local_geometry(src, cs, se, pe.src_strides.data());
    for (std::size_t q = 0; q < dst_members.size(); ++q) {
      dst.coords_of(static_cast<int>(q), cd);
      local_geometry(dst, cd, de, pe.dst_strides.data());
      for (std::size_t d = 0; d < static_cast<std::size_t>(n); ++d)
        pe.pair[d] = static_cast<std::uint32_t>(cs[d] * dst.dims[d].g + cd[d]);
      pe.world_rank = dst_members[q];
      if (finish_peer(*p, pe, se, de)) p->sends.push_back(pe);
    }
  }
  if (rd >= 0) {
    dst.coords_of(rd, cd);
    local_geometry(dst, cd, de, pe.dst_strides.data());
    for (std::size_t q = 0; q < src_members.size(); ++q) {
      if (src_members[q] == world_rank) continue;  // the copy to itself is a send entry
      src.coords_of(static_cast<int>(q), cs);
      local_geometry(src, cs, se, pe.src_strides.data());
      for (std::size_t d = 0; d < static_cast<std::size_t>(n); ++d)
        pe.pair[d] = static_cast<std::uint32_t>(cs[d] * dst.dims[d].g + cd[d]);
      pe.world_rank = src_members[q];
      if (finish_peer(*p, pe, se, de)) p->recvs.push_back(pe);
    }
  }
  return p;
}

std::shared_ptr<const redistribution_plan> cached_plan(
    const char* call, int world_rank, std::size_t elem_size, const layout_desc& src,
    const std::vector<int>& src_members, const layout_desc& dst,
    const std::vector<int>& dst_members, int chunks) {
  check_chunks(call, world_rank, chunks);
  // Key: everything the plan depends on, as bytes (layout descriptions are plain values).
  plan_key key = shared_inputs(elem_size, chunks, src, src_members, dst, dst_members);
  key.put(world_rank);
  return cached<redistribution_plan, 32>(std::move(key), [&] {
    return compute_plan(call, world_rank, elem_size, src, src_members, dst, dst_members, chunks);
  });
}

void check_chunks(const char* call, int rank, int chunks) {
  if (chunks < 1) fail(call, rank, "chunks = ", chunks, " (must be >= 1)");
}

}  // namespace cairn::detail

namespace cairn {

std::int64_t redistribution_plan::send_elements() const noexcept {
  std::int64_t s = 0;
  for (const plan_peer& p : sends) s += p.elements;
  return s;
}

std::int64_t redistribution_plan::recv_elements() const noexcept {
  std::int64_t s = 0;
  for (const plan_peer& p : recvs) s += p.elements;
  return s;
}

std::ostream& operator<<(std::ostream& os, const redistribution_plan& p) {
  auto members = [&](const std::vector<int>& m) {
    os << '{';
    for (std::size_t i = 0; i < m.size() && i < 16; ++i) os << (i ? "," : "") << m[i];
    if (m.size() > 16) os << ",...";
    os << '}';
  };
  os << "redistribution plan of world rank " << p.rank << " (" << p.elem_size << "-byte elements)\n"
     << "  from " << p.src << " on ranks ";
  members(p.src_members);
  os << "\n  to   " << p.dst << " on ranks ";
  members(p.dst_members);
  os << "\n  chunks: " << p.chunks << " (slabs per peer, at most)";
  os << "\n  per dimension: ";
  for (std::size_t d = 0; d < p.dims.size(); ++d)
    os << (d ? ", " : "") << p.dims[d].runs.size() << " runs";
  auto peers = [&](const char* what, const std::vector<plan_peer>& v) {
    os << "\n  " << what << ": " << v.size() << " peers";
    for (const plan_peer& e : v) {
      std::int64_t runs = 0;
      p.for_each_run(e, [&](std::int64_t, std::int64_t, std::int64_t) { ++runs; });
      os << "\n    rank " << e.world_rank << ": " << e.elements << " elements, "
         << e.elements * static_cast<std::int64_t>(p.elem_size) << " bytes, " << runs
         << " runs, source " << (e.src_contiguous ? "contiguous" : "strided") << ", destination "
         << (e.dst_contiguous ? "contiguous" : "strided") << ", " << p.slabs(e)
         << (p.slabs(e) == 1 ? " slab" : " slabs");
    }
  };
  peers("sends", p.sends);
  peers("receives", p.recvs);
  return os << '\n';
}

}  // namespace cairn
