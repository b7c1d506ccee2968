// fft_plan: checks of the caller's layouts and arrays, around one fft_engine per plan.

#include <ostream>
#include <string>

#include "cairn/fft/fft.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "fft_checks.hpp"
#include "fft_engine.hpp"

namespace cairn {

namespace {

using detail::fft_kind_name;
using detail::fft_text;

template <std::size_t N>
std::string shape_text(const std::array<std::int64_t, N>& s) {
  std::string t = "[";
  for (std::size_t d = 0; d < N; ++d) t += (d ? " x " : "") + std::to_string(s[d]);
  return t + "]";
}

}  // namespace

template <class Real, int N>
fft_plan<Real, N>::fft_plan(const layout<N>& in, const layout<N>& out, fft_kind kind,
                            const fft_options& opts)
    : in_(in), out_(out) {
  const char* call = "fft_plan";
  const int me = detail::caller_rank(in.group());
  if (in.group().rank() < 0)
    detail::fail(call, detail::caller_rank(out.group()),
                 "this rank is not in the input layout's group");
  if (in.group().members() != out.group().members())
    detail::fail(call, me, "the input and output layouts are over different groups (",
                 in.group().size(), " and ", out.group().size(), " ranks)");
  detail::check_fft_agreement(call, me, in.group(), sizeof(Real), kind, in.desc(), out.desc(),
                              opts);
  auto expect = in.shape();
  if (kind == fft_kind::r2c) expect[N - 1] = expect[N - 1] / 2 + 1;
  if (out.shape() != expect)
    detail::fail(call, me, "a ", fft_kind_name(kind), " transform of ", fft_text(in),
                 " needs an output of shape ", shape_text(expect), ", not ", fft_text(out));
  engine_ = std::make_unique<detail::fft_engine<Real>>(call, in.group(), in.desc(), out.desc(),
                                                       kind, opts);
}

template <class Real, int N>
fft_plan<Real, N>::~fft_plan() = default;
template <class Real, int N>
fft_plan<Real, N>::fft_plan(fft_plan&&) noexcept = default;
template <class Real, int N>
fft_plan<Real, N>& fft_plan<Real, N>::operator=(fft_plan&&) noexcept = default;

namespace {

// Checks both arrays against the plan (kind, layouts), then runs one direction.
template <class Engine, class In, class Out, int N>
void checked_run(const char* call, Engine* e, fft_kind kind, bool forward, const In& in,
                 const layout<N>& in_layout, Out& out, const layout<N>& out_layout,
                 fft_scale scale) {
  const fft_kind* plan_kind = e ? &e->schedule().kind : nullptr;
  detail::check_fft_array(call, plan_kind, kind, "transform", in, "input", in_layout);
  detail::check_fft_array(call, plan_kind, kind, "transform", out, "output", out_layout);
  e->run(call, forward, in.data(), out.data(), scale);
}

}  // namespace

template <class Real, int N>
void fft_plan<Real, N>::forward(const darray<complex, N>& in, darray<complex, N>& out,
                                fft_scale scale) {
  checked_run("fft_plan::forward", engine_.get(), fft_kind::c2c, true, in, in_, out, out_, scale);
}

template <class Real, int N>
void fft_plan<Real, N>::backward(const darray<complex, N>& in, darray<complex, N>& out,
                                 fft_scale scale) {
  checked_run("fft_plan::backward", engine_.get(), fft_kind::c2c, false, in, out_, out, in_, scale);
}

template <class Real, int N>
void fft_plan<Real, N>::forward(const darray<Real, N>& in, darray<complex, N>& out,
                                fft_scale scale) {
  checked_run("fft_plan::forward", engine_.get(), fft_kind::r2c, true, in, in_, out, out_, scale);
}

template <class Real, int N>
void fft_plan<Real, N>::backward(const darray<complex, N>& in, darray<Real, N>& out,
                                 fft_scale scale) {
  checked_run("fft_plan::backward", engine_.get(), fft_kind::r2c, false, in, out_, out, in_, scale);
}

template <class Real, int N>
const fft_schedule& fft_plan<Real, N>::schedule() const noexcept {
  return engine_->schedule();
}

template <class Real, int N>
std::ostream& fft_plan<Real, N>::print(std::ostream& os) const {
  if (!engine_) return os << "fft plan (moved from)";
  return engine_->print(os);
}

namespace {

// The layout of batch `which` (0: first, -1: last) of the schedule, in the real (space) or
// complex shape.
template <int N>
layout<N> stage_layout(const char* call, const group& g, const std::array<std::int64_t, N>& shape,
                       fft_kind kind, const fft_options& opts, bool first) {
  const fft_schedule s = plan_fft_schedule(std::vector<std::int64_t>(shape.begin(), shape.end()),
                                           g.size(), kind, opts, call, detail::caller_rank(g));
  const fft_stage& st = first ? s.stages.front() : s.stages.back();
  std::array<int, N> grid{};
  std::array<dim_dist, N> dists{};
  auto sh = shape;
  if (!first && kind == fft_kind::r2c) sh[N - 1] = sh[N - 1] / 2 + 1;
  for (int d = 0; d < N; ++d) {
    grid[static_cast<std::size_t>(d)] = st.grid[static_cast<std::size_t>(d)];
    dists[static_cast<std::size_t>(d)] = dist::block;
  }
  return layout<N>(g, sh, dists, grid);
}

}  // namespace

template <int N>
layout<N> fft_space_layout(const group& g, const std::array<std::int64_t, N>& shape, fft_kind kind,
                           const fft_options& opts) {
  return stage_layout<N>("fft_space_layout", g, shape, kind, opts, true);
}

template <int N>
layout<N> fft_frequency_layout(const group& g, const std::array<std::int64_t, N>& shape,
                               fft_kind kind, const fft_options& opts) {
  return stage_layout<N>("fft_frequency_layout", g, shape, kind, opts, false);
}

template class fft_plan<double, 2>;
template class fft_plan<double, 3>;
template class fft_plan<float, 2>;
template class fft_plan<float, 3>;
template layout<2> fft_space_layout<2>(const group&, const std::array<std::int64_t, 2>&, fft_kind,
                                       const fft_options&);
template layout<3> fft_space_layout<3>(const group&, const std::array<std::int64_t, 3>&, fft_kind,
                                       const fft_options&);
template layout<2> fft_frequency_layout<2>(const group&, const std::array<std::int64_t, 2>&,
                                           fft_kind, const fft_options&);
template layout<3> fft_frequency_layout<3>(const group&, const std::array<std::int64_t, 3>&,
                                           fft_kind, const fft_options&);

}  // namespace cairn
