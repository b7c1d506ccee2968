#pragma once
// FFTW's double and single precision interfaces under one name (fftw_* and fftwf_*), and the
// planner made thread-safe by FFTW's own call before the first plan.

#include <fftw3.h>

#include <complex>
#include <cstddef>

namespace cairn::detail {

template <class Real>
struct fftw;

template <>
struct fftw<double> {
  using plan = fftw_plan;
  using iodim = fftw_iodim64;
  using cplx = fftw_complex;
  static void* malloc(std::size_t n) { return fftw_malloc(n); }
  static void free(void* p) { fftw_free(p); }
  static void make_planner_thread_safe() { fftw_make_planner_thread_safe(); }
  static plan dft(int r, const iodim* d, int hr, const iodim* h, void* in, void* out, int sign,
                  unsigned flags) {
    return fftw_plan_guru64_dft(r, d, hr, h, static_cast<cplx*>(in), static_cast<cplx*>(out), sign,
                                flags);
  }
  static plan r2c(int r, const iodim* d, int hr, const iodim* h, void* in, void* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_r2c(r, d, hr, h, static_cast<double*>(in), static_cast<cplx*>(out),
                                    flags);
  }
  static plan c2r(int r, const iodim* d, int hr, const iodim* h, void* in, void* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_c2r(r, d, hr, h, static_cast<cplx*>(in), static_cast<double*>(out),
                                    flags);
  }
  static void execute_dft(plan p, const void* in, void* out) {
    fftw_execute_dft(p, static_cast<cplx*>(const_cast<void*>(in)), static_cast<cplx*>(out));
  }
  static void execute_r2c(plan p, const void* in, void* out) {
    fftw_execute_dft_r2c(p, static_cast<double*>(const_cast<void*>(in)), static_cast<cplx*>(out));
  }
  static void execute_c2r(plan p, const void* in, void* out) {
    fftw_execute_dft_c2r(p, static_cast<cplx*>(const_cast<void*>(in)), static_cast<double*>(out));
  }
  static void destroy(plan p) { fftw_destroy_plan(p); }
};

template <>
struct fftw<float> {
  using plan = fftwf_plan;
  using iodim = fftwf_iodim64;
  using cplx = fftwf_complex;
  static void* malloc(std::size_t n) { return fftwf_malloc(n); }
  static void free(void* p) { fftwf_free(p); }
  static void make_planner_thread_safe() { fftwf_make_planner_thread_safe(); }
  static plan dft(int r, const iodim* d, int hr, const iodim* h, void* in, void* out, int sign,
                  unsigned flags) {
    return fftwf_plan_guru64_dft(r, d, hr, h, static_cast<cplx*>(in), static_cast<cplx*>(out), sign,
                                 flags);
  }
  static plan r2c(int r, const iodim* d, int hr, const iodim* h, void* in, void* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_r2c(r, d, hr, h, static_cast<float*>(in), static_cast<cplx*>(out),
                                     flags);
  }
  static plan c2r(int r, const iodim* d, int hr, const iodim* h, void* in, void* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_c2r(r, d, hr, h, static_cast<cplx*>(in), static_cast<float*>(out),
                                     flags);
  }
  static void execute_dft(plan p, const void* in, void* out) {
    fftwf_execute_dft(p, static_cast<cplx*>(const_cast<void*>(in)), static_cast<cplx*>(out));
  }
  static void execute_r2c(plan p, const void* in, void* out) {
    fftwf_execute_dft_r2c(p, static_cast<float*>(const_cast<void*>(in)), static_cast<cplx*>(out));
  }
  static void execute_c2r(plan p, const void* in, void* out) {
    fftwf_execute_dft_c2r(p, static_cast<cplx*>(const_cast<void*>(in)), static_cast<float*>(out));
  }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
};

}  // namespace cairn::detail
