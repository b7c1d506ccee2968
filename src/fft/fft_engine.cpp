// Building and running one rank's FFT programs (fft_engine.hpp).

#include "fft_engine.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>

#include "cairn/array/detail/plan.hpp"
#include "cairn/array/detail/transfer.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/group.hpp"

namespace cairn::detail {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Bytes of a row's run in a tile of shared columns (fft_options::column_tile 0). In one
// address space, four cache lines: measured on 2 threads ranks (cairn-bench fft, double
// complex, tiles of 8, 16, 32 and 64 columns), 16 was fastest at 128^3 r2c (a tile of 32 KiB),
// at 1024^2 (256 KiB) and at 4096^2 (1 MiB); runs of one line (4 columns) were slower than the
// two transposes at 1024^2. Across processes (MPI engine) every run is an iovec of a
// cross-memory call: runs of 8 KiB (512 columns, a tile of 1 MiB at 128 rows) were fastest at
// 128^3 r2c on 2 ranks (0.87-0.90 of FFTW-MPI, against 0.85-1.08 for 16 KiB, 1.12 for 4 KiB,
// 1.23 for 1 KiB and 0.99-1.13 for the two transposes).
constexpr std::int64_t column_run_bytes_here = 256;
constexpr std::int64_t column_run_bytes_across = 8192;

// FFT redistributions in the array message context: apart from the user's transfers between
// the same groups only by this key (an FFT runs to completion inside its call).
constexpr std::uint64_t fft_tag_key = 0xF7F7'0001;

// Every rank holds the same global indices at the same local positions in both layouts.
bool same_placement(const layout_desc& a, const layout_desc& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    const dim_map& x = a.dims[static_cast<std::size_t>(d)];
    const dim_map& y = b.dims[static_cast<std::size_t>(d)];
    if (x.n != y.n || x.g != y.g) return false;
    if (x.g > 1 && (x.rep != y.rep || x.k != y.k)) return false;
  }
  return true;
}

// Extents of group rank r's part.
std::array<std::int64_t, max_dims> local_shape(const layout_desc& d, int r) {
  std::array<std::int64_t, max_dims> s{};
  d.local_shape_of(r, s.data());
  return s;
}

const char* buffer_name(int b) {
  static const char* const names[] = {"input", "output", "work0", "work1"};
  return names[b];
}

}  // namespace

template <class Real>
fft_engine<Real>::fft_engine(const char* call, const cairn::group& g, const layout_desc& in,
                             const layout_desc& out, fft_kind kind, const fft_options& opts)
    : call_(call),
      group_(g),
      ctx_(context_of(g, g, call)),
      group_rank_(g.rank()),
      world_rank_(caller_rank(g)),
      members_(g.members()),
      kind_(kind),
      in_(in),
      out_(out),
      transfer_(opts.transfer),
      steps_(opts.steps) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(in.ndim));
  for (int d = 0; d < in.ndim; ++d)
    shape[static_cast<std::size_t>(d)] = in.dims[static_cast<std::size_t>(d)].n;
  sched_ = plan_fft_schedule(shape, g.size(), kind, opts, call, world_rank_);
  for (const std::int64_t n : shape) total_elements_ *= n;
  const auto cshape = sched_.complex_shape();
  for (const fft_stage& st : sched_.stages)
    stage_complex_.push_back(fft_block_desc(call, world_rank_, g.size(), cshape, st.grid));
  if (kind == fft_kind::r2c)
    stage0_real_ = fft_block_desc(call, world_rank_, g.size(), shape, sched_.stages[0].grid);
  transfer_.steps = steps_ ? &steps_->transfer : nullptr;
  transfer_.on_slab = nullptr;
  check_chunks(call, world_rank_, transfer_.chunks);

  // Slabs whose output keeps the first batch's layout, on ranks that reach each other's memory:
  // the transforms along dimension 0 run straight in every rank's slab (decided alike on
  // every rank: the programs then take collectives in place of redistributions).
  const bool shares_columns =
      opts.shared_columns && g.size() > 1 && reaches_peer_parts(*ctx_) &&
      sched_.decomposition == fft_decomposition::slabs && sched_.stages.size() == 2 &&
      sched_.stages[1].dims == std::vector<int>{0} && same_placement(out, stage_complex_[0]);
  if (shares_columns) {
    build_shared_columns(true);
    build_shared_columns(false);
    part_addresses_.resize(2 * static_cast<std::size_t>(g.size()));
    if (!shares_address_space(*ctx_)) column_peers_ = ctx_;
  } else {
    build(true);
    build(false);
  }
  for (int i = 0; i < 2; ++i) work_[i] = fftw_buffer<Real>(work_bytes_[i]);
  const unsigned flags = rigor_flags(opts.rigor);
  for (auto* prog : {&forward_, &backward_})
    for (step& s : *prog)
      if (s.what == op::columns) {
        s.columns = shared_columns<Real>(
            call, world_rank_, s.src_desc, group_rank_, s.sign, flags, opts.column_tile,
            column_peers_ ? column_run_bytes_across : column_run_bytes_here);
      } else if (s.what == op::transform) {
        const auto is = local_shape(s.src_desc, group_rank_);
        const auto os = local_shape(s.dst_desc, group_rank_);
        const auto& dims = sched_.stages[static_cast<std::size_t>(s.stage)].dims;
        s.local =
            local_transform<Real>(call, world_rank_, "a batch", s.kind, s.sign, s.src_desc.ndim,
                                  is.data(), os.data(), dims, s.src == s.dst, flags);
        // One array may be a c2c plan's input and output (one layout): a batch planned out of
        // place cannot run on it (FFTW's plans keep their in-place-ness).
        if (s.src == buffer::in && s.dst == buffer::out && s.kind == local_kind::c2c &&
            same_placement(in_, out_))
          s.local_in_place =
              local_transform<Real>(call, world_rank_, "a batch in place", s.kind, s.sign,
                                    s.src_desc.ndim, is.data(), os.data(), dims, true, flags);
      }
}

template <class Real>
fft_engine<Real>::~fft_engine() = default;

template <class Real>
std::int64_t fft_engine<Real>::local_elements(const layout_desc& d) const {
  const auto s = local_shape(d, group_rank_);
  std::int64_t n = 1;
  for (int i = 0; i < d.ndim; ++i) n *= s[static_cast<std::size_t>(i)];
  return n;
}

template <class Real>
void fft_engine<Real>::emit(std::vector<step>& prog, step s) {
  if (s.dst == buffer::work0 || s.dst == buffer::work1) {
    auto& w = work_bytes_[s.dst == buffer::work0 ? 0 : 1];
    const std::size_t bytes =
        static_cast<std::size_t>(local_elements(s.dst_desc)) * elem_size(s.dst_real);
    if (bytes > w) w = bytes;
  }
  if (s.what == op::redistribute)
    s.plan = cached_plan(call_, world_rank_, elem_size(s.src_real), s.src_desc, members_,
                         s.dst_desc, members_, transfer_.chunks);
  prog.push_back(std::move(s));
}

// The program of one direction: the batches in forward (or reverse) order, each preceded by
// the redistribution to its layout where the data is elsewhere. The caller's input is never
// written; the last batch writes into the caller's output when its layout is the output's.
template <class Real>
void fft_engine<Real>::build(bool forward) {
  std::vector<step>& prog = forward ? forward_ : backward_;
  const bool r2c = kind_ == fft_kind::r2c;
  const layout_desc& final_desc = forward ? out_ : in_;
  const bool final_real = !forward && r2c;
  const auto other_work = [](buffer b) {
    return b == buffer::work0 ? buffer::work1 : buffer::work0;
  };
  cursor c{buffer::in, forward ? in_ : out_, forward && r2c};
  const int m = static_cast<int>(sched_.stages.size());
  for (int i = 0; i < m; ++i) {
    const int k = forward ? i : m - 1 - i;
    const bool last = i == m - 1;
    const bool changes_domain = r2c && k == 0;  // r2c forward, c2r backward
    const layout_desc& need =
        forward && changes_domain ? stage0_real_ : stage_complex_[static_cast<std::size_t>(k)];
    const bool need_real = forward && changes_domain;
    const layout_desc& after =
        !forward && changes_domain ? stage0_real_ : stage_complex_[static_cast<std::size_t>(k)];
    const bool after_real = !forward && changes_domain;
    const bool lands_in_output = last && same_placement(after, final_desc);
    if (!same_placement(c.desc, need)) {
      const buffer to = lands_in_output && !changes_domain ? buffer::out : other_work(c.buf);
      step s;
      s.what = op::redistribute;
      s.src = c.buf, s.dst = to, s.src_desc = c.desc, s.dst_desc = need;
      s.src_real = s.dst_real = need_real;
      emit(prog, std::move(s));
      c = {to, need, need_real};
    }
    if (!forward && changes_domain && c.buf == buffer::in) {
      // FFTW's c2r transforms overwrite their input: never the caller's.
      step s;
      s.what = op::copy;
      s.src = c.buf, s.dst = buffer::work0, s.src_desc = s.dst_desc = c.desc;
      s.bytes = static_cast<std::size_t>(local_elements(c.desc)) * elem_size(false);
      emit(prog, std::move(s));
      c.buf = buffer::work0;
    }
    const bool out_of_place =
        c.buf == buffer::in || changes_domain || (lands_in_output && c.buf != buffer::out);
    step s;
    s.what = op::transform;
    s.src = c.buf;
    s.dst = !out_of_place ? c.buf : lands_in_output ? buffer::out : other_work(c.buf);
    s.src_desc = c.desc, s.dst_desc = after;
    s.src_real = c.real, s.dst_real = after_real;
    s.stage = k;
    s.sign = forward ? FFTW_FORWARD : FFTW_BACKWARD;
    s.kind = !changes_domain ? local_kind::c2c : forward ? local_kind::r2c : local_kind::c2r;
    const buffer to = s.dst;
    emit(prog, std::move(s));
    c = {to, after, after_real};
  }
  if (c.buf != buffer::out) {
    step s;
    s.what = op::redistribute;
    s.src = c.buf, s.dst = buffer::out, s.src_desc = c.desc, s.dst_desc = final_desc;
    s.src_real = s.dst_real = final_real;
    emit(prog, std::move(s));
  }
}

// The programs where the transforms along dimension 0 run straight in every rank's slab
// (shared_columns.hpp). Forward: the first batch from the input (redistributed first if it is
// not in the batch's layout) into work0, then the columns from every rank's work0 into every
// rank's output. Backward: the columns from every rank's input into every rank's work0, then the
// first batch's inverse into the output (through work1 and a redistribution if the output's
// layout is another). The caller's input is only read, before any rank writes an output (the
// columns' collectives order them), so an output that is the input is right too.
template <class Real>
void fft_engine<Real>::build_shared_columns(bool forward) {
  std::vector<step>& prog = forward ? forward_ : backward_;
  const bool r2c = kind_ == fft_kind::r2c;
  const layout_desc& slabs = stage_complex_[0];
  const layout_desc& space = r2c ? stage0_real_ : slabs;  // the first batch's space side
  const int sign = forward ? FFTW_FORWARD : FFTW_BACKWARD;
  const auto redistribute = [&](buffer from, buffer to, const layout_desc& src,
                                const layout_desc& dst) {
    step s;
    s.what = op::redistribute;
    s.src = from, s.dst = to, s.src_desc = src, s.dst_desc = dst;
    s.src_real = s.dst_real = r2c;
    emit(prog, std::move(s));
  };
  const auto first_batch = [&](buffer from, buffer to) {
    step s;
    s.what = op::transform;
    s.src = from, s.dst = to;
    s.src_desc = forward ? space : slabs, s.dst_desc = forward ? slabs : space;
    s.src_real = forward && r2c, s.dst_real = !forward && r2c;
    s.stage = 0;
    s.sign = sign;
    s.kind = !r2c ? local_kind::c2c : forward ? local_kind::r2c : local_kind::c2r;
    emit(prog, std::move(s));
  };
  const auto columns = [&](buffer from, buffer to) {
    step s;
    s.what = op::columns;
    s.src = from, s.dst = to, s.src_desc = s.dst_desc = slabs;
    s.stage = 1;
    s.sign = sign;
    emit(prog, std::move(s));
  };
  if (forward) {
    buffer at = buffer::in;
    if (!same_placement(in_, space)) {
      redistribute(buffer::in, buffer::work1, in_, space);
      at = buffer::work1;
    }
    first_batch(at, buffer::work0);
    columns(buffer::work0, buffer::out);
  } else {
    columns(buffer::in, buffer::work0);
    if (same_placement(space, in_)) {
      first_batch(buffer::work0, buffer::out);
    } else {
      first_batch(buffer::work0, buffer::work1);
      redistribute(buffer::work1, buffer::out, space, in_);
    }
  }
}

// One op::columns step: every rank's parts are exchanged (which also waits until every rank
// wrote its `from` part), the share of columns is transformed, and a barrier keeps every part
// in place until all ranks are done with it.
template <class Real>
void fft_engine<Real>::run_columns(const step& s, const void* from, void* to) {
  const auto me = static_cast<std::size_t>(group_rank_);
  part_addresses_[2 * me] = reinterpret_cast<std::uintptr_t>(from);
  part_addresses_[2 * me + 1] = reinterpret_cast<std::uintptr_t>(to);
  group_.allgather(cairn::in_place, std::span<std::uintptr_t>(part_addresses_));
  s.columns.run(part_addresses_.data(), column_peers_, members_.data(), call_);
  group_.barrier();
}

template <class Real>
void fft_engine<Real>::run(const char* call, bool forward, const void* in, void* out,
                           fft_scale scale) {
  const std::vector<step>& prog = forward ? forward_ : backward_;
  const auto src_of = [&](buffer b) -> const void* {
    switch (b) {
      case buffer::in: return in;
      case buffer::out: return out;
      case buffer::work0: return work_[0].get();
      case buffer::work1: return work_[1].get();
    }
    return nullptr;
  };
  const auto dst_of = [&](buffer b) -> void* {
    return b == buffer::in ? nullptr : const_cast<void*>(src_of(b));
  };
  for (const step& s : prog) {
    const auto t0 = steps_ ? clock_type::now() : clock_type::time_point{};
    switch (s.what) {
      case op::redistribute:
        start_plan(*ctx_, call, s.plan, src_of(s.src), dst_of(s.dst), fft_tag_key, transfer_)
            .wait();
        if (steps_) steps_->redistribute_s += since(t0);
        break;
      case op::transform:
        (s.local_in_place && src_of(s.src) == dst_of(s.dst) ? s.local_in_place : s.local)
            .execute(src_of(s.src), dst_of(s.dst));
        if (steps_) steps_->local_fft_s += since(t0);
        break;
      case op::copy:
        if (s.bytes) std::memcpy(dst_of(s.dst), src_of(s.src), s.bytes);
        if (steps_) steps_->copy_s += since(t0);
        break;
      case op::columns:
        run_columns(s, src_of(s.src), dst_of(s.dst));
        if (steps_) steps_->columns_s += since(t0);
        break;
    }
  }
  if (scale != fft_scale::none) {
    const auto t0 = steps_ ? clock_type::now() : clock_type::time_point{};
    const double n = static_cast<double>(total_elements_);
    const Real f = static_cast<Real>(scale == fft_scale::full ? 1.0 / n : 1.0 / std::sqrt(n));
    const bool real = !forward && kind_ == fft_kind::r2c;
    const std::int64_t count = local_elements(forward ? out_ : in_) * (real ? 1 : 2);
    Real* p = static_cast<Real*>(out);
    for (std::int64_t i = 0; i < count; ++i) p[i] *= f;
    if (steps_) steps_->copy_s += since(t0);
  }
  if (steps_) ++steps_->transforms;
}

template <class Real>
std::ostream& fft_engine<Real>::print(std::ostream& os, const std::vector<step>& prog) const {
  for (const step& s : prog) {
    const auto from = buffer_name(static_cast<int>(s.src)),
               to = buffer_name(static_cast<int>(s.dst));
    switch (s.what) {
      case op::redistribute:
        os << "\n    redistribute " << from << " -> " << to << ": " << s.dst_desc << " ("
           << s.plan->recvs.size() << " peers in, " << s.plan->recv_elements() << " elements)";
        break;
      case op::transform: {
        static const char* const kinds[] = {"c2c", "r2c", "c2r"};
        os << "\n    " << kinds[static_cast<int>(s.kind)] << " dims {";
        const auto& dims = sched_.stages[static_cast<std::size_t>(s.stage)].dims;
        for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dims[i];
        os << "} " << from << " -> " << to << (s.local ? "" : " (empty part)");
        break;
      }
      case op::copy:
        os << "\n    copy " << from << " -> " << to << ": " << s.bytes << " bytes";
        break;
      case op::columns:
        os << "\n    c2c dims {0} " << from << " -> " << to
           << " in every rank's slab: " << s.columns.tiles() << " tiles of " << s.columns.tile()
           << " of " << s.columns.columns() << " columns";
        break;
    }
  }
  return os;
}

template <class Real>
std::ostream& fft_engine<Real>::print(std::ostream& os) const {
  os << sched_ << "\n  rank " << world_rank_ << " forward:";
  print(os, forward_);
  os << "\n  rank " << world_rank_ << " backward:";
  return print(os, backward_);
}

template class fft_engine<double>;
template class fft_engine<float>;

}  // namespace cairn::detail
