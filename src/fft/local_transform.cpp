// Planning and running one batch of local FFTW transforms (local_transform.hpp).

#include "local_transform.hpp"

#include <algorithm>
#include <mutex>
#include <new>

#include "cairn/runtime/detail/fail.hpp"

namespace cairn::detail {

namespace {

// FFTW's planner is one process-wide state; on the threads engine ranks plan at once. FFTW's
// own call makes it thread-safe (it locks inside the planner only; execution never locks).
template <class Real>
void planner_thread_safe_once() {
  static std::once_flag once;
  std::call_once(once, [] { fftw<Real>::make_planner_thread_safe(); });
}

}  // namespace

unsigned rigor_flags(fft_rigor r) {
  switch (r) {
    case fft_rigor::estimate: return FFTW_ESTIMATE;
    case fft_rigor::measure: return FFTW_MEASURE;
    case fft_rigor::patient: return FFTW_PATIENT;
  }
  return FFTW_ESTIMATE;
}

template <class Real>
local_transform<Real>::local_transform(const char* call, int rank, const char* what,
                                       local_kind kind, int sign, int ndim,
                                       const std::int64_t* in_shape, const std::int64_t* out_shape,
                                       const std::vector<int>& dims, bool in_place, unsigned flags)
    : kind_(kind) {
  std::int64_t in_count = 1, out_count = 1;
  for (int d = 0; d < ndim; ++d) {
    in_count *= in_shape[d];
    out_count *= out_shape[d];
  }
  if (in_count == 0 || out_count == 0) return;  // an empty part
  std::array<std::int64_t, max_dims> ist{}, ost{};
  for (std::int64_t d = ndim - 1, si = 1, so = 1; d >= 0; --d) {
    ist[static_cast<std::size_t>(d)] = si;
    ost[static_cast<std::size_t>(d)] = so;
    si *= in_shape[d];
    so *= out_shape[d];
  }
  std::vector<typename fftw<Real>::iodim> tdims, hdims;
  for (int d = 0; d < ndim; ++d) {
    const auto du = static_cast<std::size_t>(d);
    // The logical length of a transformed dimension is the real one (c2r writes it, r2c reads it).
    const std::int64_t len = kind == local_kind::c2r ? out_shape[d] : in_shape[d];
    typename fftw<Real>::iodim x{static_cast<std::ptrdiff_t>(len),
                                 static_cast<std::ptrdiff_t>(ist[du]),
                                 static_cast<std::ptrdiff_t>(ost[du])};
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      tdims.push_back(x);
    } else if (len > 1) {
      hdims.push_back(x);
    }
  }
  const std::size_t complex_bytes = 2 * sizeof(Real), real_bytes = sizeof(Real);
  const std::size_t in_bytes =
      static_cast<std::size_t>(in_count) * (kind == local_kind::r2c ? real_bytes : complex_bytes);
  const std::size_t out_bytes =
      static_cast<std::size_t>(out_count) * (kind == local_kind::c2r ? real_bytes : complex_bytes);
  planner_thread_safe_once<Real>();
  // Planning may write the arrays (measuring): scratch of the same size and alignment as the
  // buffers the plan will run on (every local part is aligned beyond FFTW's SIMD alignment).
  const fftw_buffer<Real> a(in_place ? std::max(in_bytes, out_bytes) : in_bytes);
  const fftw_buffer<Real> b(in_place ? 0 : out_bytes);
  void* const in = a.get();
  void* const out = in_place ? in : b.get();
  const int tr = static_cast<int>(tdims.size()), hr = static_cast<int>(hdims.size());
  switch (kind) {
    case local_kind::c2c:
      plan_ = fftw<Real>::dft(tr, tdims.data(), hr, hdims.data(), in, out, sign, flags);
      break;
    case local_kind::r2c:
      plan_ = fftw<Real>::r2c(tr, tdims.data(), hr, hdims.data(), in, out, flags);
      break;
    case local_kind::c2r:
      plan_ = fftw<Real>::c2r(tr, tdims.data(), hr, hdims.data(), in, out, flags);
      break;
  }
  if (!plan_) fail(call, rank, "FFTW found no plan for the local transforms of ", what);
}

template <class Real>
local_transform<Real>::~local_transform() {
  if (plan_) fftw<Real>::destroy(plan_);
}

template <class Real>
local_transform<Real>& local_transform<Real>::operator=(local_transform&& o) noexcept {
  if (this != &o) {
    if (plan_) fftw<Real>::destroy(plan_);
    plan_ = o.plan_;
    kind_ = o.kind_;
    o.plan_ = nullptr;
  }
  return *this;
}

template <class Real>
void local_transform<Real>::execute(const void* in, void* out) const {
  if (!plan_) return;
  switch (kind_) {
    case local_kind::c2c: fftw<Real>::execute_dft(plan_, in, out); break;
    case local_kind::r2c: fftw<Real>::execute_r2c(plan_, in, out); break;
    case local_kind::c2r: fftw<Real>::execute_c2r(plan_, in, out); break;
  }
}

template class local_transform<double>;
template class local_transform<float>;

}  // namespace cairn::detail
