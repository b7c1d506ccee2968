// fft_plan: checks of the caller's layouts and arrays, around one fft_engine per plan.

#include <ostream>
#include <sstream>
#include <string>

#include "cairn/fft/fft.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "fft_engine.hpp"

namespace cairn {

namespace {

template <class L>
std::string text(const L& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

const char* kind_name(fft_kind k) { return k == fft_kind::r2c ? "r2c" : "c2c"; }

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
  auto expect = in.shape();
  if (kind == fft_kind::r2c) expect[N - 1] = expect[N - 1] / 2 + 1;
  if (out.shape() != expect)
    detail::fail(call, me, "a ", kind_name(kind), " transform of ", text(in),
                 " needs an output of shape ", shape_text(expect), ", not ", text(out));
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

// Throws unless the plan exists, is of `kind` and `a` has the layout `want` of the plan.
template <class Engine, class A, int N>
void check_call(const char* call, const Engine* e, fft_kind kind, const A& a, const char* which,
                const layout<N>& want) {
  const int me = detail::caller_rank(a.get_layout().group());
  if (!e) detail::fail(call, me, "the plan was moved from");
  if (e->schedule().kind != kind)
    detail::fail(call, me, "a ", kind_name(kind), " transform on a ", kind_name(e->schedule().kind),
                 " plan");
  if (!(a.get_layout() == want))
    detail::fail(call, me, "the ", which, " has the layout ", text(a.get_layout()),
                 ", the plan's is ", text(want));
}

}  // namespace

template <class Real, int N>
void fft_plan<Real, N>::forward(const darray<complex, N>& in, darray<complex, N>& out,
                                fft_scale scale) {
  const char* call = "fft_plan::forward";
  check_call(call, engine_.get(), fft_kind::c2c, in, "input", in_);
  check_call(call, engine_.get(), fft_kind::c2c, out, "output", out_);
  engine_->run(call, true, in.data(), out.data(), scale);
}

template <class Real, int N>
void fft_plan<Real, N>::backward(const darray<complex, N>& in, darray<complex, N>& out,
                                 fft_scale scale) {
  const char* call = "fft_plan::backward";
  check_call(call, engine_.get(), fft_kind::c2c, in, "input", out_);
  check_call(call, engine_.get(), fft_kind::c2c, out, "output", in_);
  engine_->run(call, false, in.data(), out.data(), scale);
}

template <class Real, int N>
void fft_plan<Real, N>::forward(const darray<Real, N>& in, darray<complex, N>& out,
                                fft_scale scale) {
  const char* call = "fft_plan::forward";
  check_call(call, engine_.get(), fft_kind::r2c, in, "input", in_);
  check_call(call, engine_.get(), fft_kind::r2c, out, "output", out_);
  engine_->run(call, true, in.data(), out.data(), scale);
}

template <class Real, int N>
void fft_plan<Real, N>::backward(const darray<complex, N>& in, darray<Real, N>& out,
                                 fft_scale scale) {
  const char* call = "fft_plan::backward";
  check_call(call, engine_.get(), fft_kind::r2c, in, "input", out_);
  check_call(call, engine_.get(), fft_kind::r2c, out, "output", in_);
  engine_->run(call, false, in.data(), out.data(), scale);
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
