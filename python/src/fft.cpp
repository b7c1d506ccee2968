// cairn.FFTPlan: cairn's distributed FFTs (cairn::fft_plan) of cairn.DArrays of float32,
// float64, complex64 and complex128, 2-D and 3-D, planned once and run many times with the GIL
// released.
#include "fft.hpp"

#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <memory>
#include <sstream>
#include <string>

#include "cairn/fft/fft.hpp"
#include "darray_impl.hpp"

namespace cairn_python {
namespace {

template <class E>
const char* dtype_name() {
  if constexpr (std::is_same_v<E, double>) return "float64";
  if constexpr (std::is_same_v<E, float>) return "float32";
  if constexpr (std::is_same_v<E, std::complex<double>>) return "complex128";
  return "complex64";
}

// `a` as a darray of E in N dimensions, or cairn::error naming `what` and what it holds.
template <class E, int N>
cairn::darray<E, N>& typed(darray_base& a, const char* call, int rank, const char* what) {
  auto* t = dynamic_cast<darray_impl<E, N>*>(&a);
  if (!t)
    refuse(call, rank,
           std::string(what) + " must be a " + std::to_string(N) + "-dimensional " +
               dtype_name<E>() + " array here, not " + std::to_string(a.ndim()) +
               "-dimensional of " + std::to_string(a.itemsize()) + "-byte elements (" +
               a.describe() + ")");
  return t->array();
}

// f(the space-domain array `a` typed by `kind`: complex<Real> for c2c, Real for r2c).
template <class Real, int N, class F>
decltype(auto) with_space(cairn::fft_kind kind, darray_base& a, const char* call, int rank,
                          const char* what, F&& f) {
  if (kind == cairn::fft_kind::c2c) return f(typed<std::complex<Real>, N>(a, call, rank, what));
  return f(typed<Real, N>(a, call, rank, what));
}

// One plan, whatever its precision and dimensions (fft_impl instantiates each).
class fft_base {
 public:
  virtual ~fft_base() = default;
  virtual void forward(darray_base& in, darray_base& out, cairn::fft_scale s, int rank) = 0;
  virtual void backward(darray_base& in, darray_base& out, cairn::fft_scale s, int rank) = 0;
  [[nodiscard]] virtual std::string schedule() const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

template <class Real, int N>
class fft_impl final : public fft_base {
  using complex = std::complex<Real>;

 public:
  fft_impl(const cairn::layout<N>& in, const cairn::layout<N>& out, cairn::fft_kind kind,
           const cairn::fft_options& opts)
      : plan_(in, out, kind, opts), kind_(kind) {}

  void forward(darray_base& in, darray_base& out, cairn::fft_scale s, int rank) override {
    auto& o = typed<complex, N>(out, "FFTPlan.forward", rank, "out");
    with_space<Real, N>(kind_, in, "FFTPlan.forward", rank, "in", [&](auto& i) {
      unlocked gil_free;
      plan_.forward(i, o, s);
    });
  }
  void backward(darray_base& in, darray_base& out, cairn::fft_scale s, int rank) override {
    auto& i = typed<complex, N>(in, "FFTPlan.backward", rank, "in");
    with_space<Real, N>(kind_, out, "FFTPlan.backward", rank, "out", [&](auto& o) {
      unlocked gil_free;
      plan_.backward(i, o, s);
    });
  }
  [[nodiscard]] std::string schedule() const override {
    std::ostringstream os;
    os << plan_.schedule();
    return os.str();
  }
  [[nodiscard]] std::string describe() const override {
    std::ostringstream os;
    os << plan_;
    return os.str();
  }

 private:
  cairn::fft_plan<Real, N> plan_;
  cairn::fft_kind kind_;
};

// The plan between `in` (space) and `out` (frequency) for arrays of Real in N dimensions.
template <class Real, int N>
std::unique_ptr<fft_base> make_n(darray_base& in, darray_base& out, cairn::fft_kind kind,
                                 const cairn::fft_options& opts, int rank) {
  const cairn::layout<N>& space =
      with_space<Real, N>(kind, in, "FFTPlan", rank, "in",
                          [](auto& a) -> const cairn::layout<N>& { return a.get_layout(); });
  const cairn::layout<N>& frequency =
      typed<std::complex<Real>, N>(out, "FFTPlan", rank, "out").get_layout();
  unlocked gil_free;  // every rank of the group plans (FFTW may measure)
  return std::make_unique<fft_impl<Real, N>>(space, frequency, kind, opts);
}

cairn::fft_scale scale_of(const std::string& s, const char* call, int rank) {
  if (s == "none") return cairn::fft_scale::none;
  if (s == "full") return cairn::fft_scale::full;
  if (s == "symmetric") return cairn::fft_scale::symmetric;
  refuse(call, rank, "scale must be 'none', 'full' or 'symmetric', not '" + s + "'");
}

cairn::fft_kind kind_of(const std::string& kind, const char* call, int rank) {
  if (kind == "c2c") return cairn::fft_kind::c2c;
  if (kind == "r2c") return cairn::fft_kind::r2c;
  refuse(call, rank, "kind must be 'c2c' or 'r2c', not '" + kind + "'");
}

// decomposition ("automatic", "slabs", "pencils"), rigor ("estimate", "measure", "patient"),
// pencil_grid (zeros: the most square one) as cairn's options.
cairn::fft_options options_of(const std::string& decomposition, const std::string& rigor,
                              std::array<int, 2> pencil_grid, const char* call, int rank) {
  cairn::fft_options o;
  if (decomposition == "slabs")
    o.decomposition = cairn::fft_decomposition::slabs;
  else if (decomposition == "pencils")
    o.decomposition = cairn::fft_decomposition::pencils;
  else if (decomposition != "automatic")
    refuse(call, rank,
           "decomposition must be 'automatic', 'slabs' or 'pencils', not '" + decomposition + "'");
  if (rigor == "estimate")
    o.rigor = cairn::fft_rigor::estimate;
  else if (rigor == "measure")
    o.rigor = cairn::fft_rigor::measure;
  else if (rigor == "patient")
    o.rigor = cairn::fft_rigor::patient;
  else
    refuse(call, rank, "rigor must be 'estimate', 'measure' or 'patient', not '" + rigor + "'");
  o.pencil_grid = pencil_grid;
  return o;
}

// The (space, frequency) arrays of an FFT of `shape` over `g` in the layouts its plan
// transforms without redistributing.
template <class Real, int N>
nb::tuple arrays_n(const cairn::group& g, const std::vector<std::int64_t>& shape,
                   cairn::fft_kind kind, const cairn::fft_options& o) {
  using complex = std::complex<Real>;
  std::array<std::int64_t, N> s{};
  for (std::size_t d = 0; d < N; ++d) s[d] = shape[d];
  const auto space = cairn::fft_space_layout<N>(g, s, kind, o);
  const auto frequency = cairn::fft_frequency_layout<N>(g, s, kind, o);
  py_darray a;
  if (kind == cairn::fft_kind::c2c)
    a.a = std::make_unique<darray_impl<complex, N>>(space);
  else
    a.a = std::make_unique<darray_impl<Real, N>>(space);
  py_darray b{std::make_unique<darray_impl<complex, N>>(frequency)};
  return nb::make_tuple(std::move(a), std::move(b));
}

// A plan as Python holds it, with the world rank its messages name.
struct py_fft {
  std::unique_ptr<fft_base> plan;
  int rank;
};

}  // namespace

void bind_fft(nb::module_& m) {
  nb::class_<py_fft>(m, "_FFTPlan")
      .def("forward",
           [](py_fft& p, py_darray& in, py_darray& out, const std::string& scale) {
             p.plan->forward(*in.a, *out.a, scale_of(scale, "FFTPlan.forward", p.rank), p.rank);
           })
      .def("backward",
           [](py_fft& p, py_darray& in, py_darray& out, const std::string& scale) {
             p.plan->backward(*in.a, *out.a, scale_of(scale, "FFTPlan.backward", p.rank), p.rank);
           })
      .def_prop_ro("schedule", [](const py_fft& p) { return p.plan->schedule(); })
      .def("describe", [](const py_fft& p) { return p.plan->describe(); });
  // kind "c2c" or "r2c"; decomposition "automatic", "slabs" or "pencils"; rigor "estimate",
  // "measure" or "patient"; pencil_grid: zeros for the most square one.
  m.def("_fft_plan", [](py_darray& in, py_darray& out, const std::string& kind,
                        const std::string& decomposition, const std::string& rigor,
                        std::array<int, 2> pencil_grid, int rank) {
    const char* call = "FFTPlan";
    const cairn::fft_kind k = kind_of(kind, call, rank);
    const cairn::fft_options o = options_of(decomposition, rigor, pencil_grid, call, rank);
    const int n = in.a->ndim();
    if ((n != 2 && n != 3) || out.a->ndim() != n)
      refuse(call, rank,
             "in and out have " + std::to_string(n) + " and " + std::to_string(out.a->ndim()) +
                 " dimensions: FFTs are 2-D or 3-D, both arrays alike");
    // The precision is the frequency array's: complex128 (double) or complex64 (float).
    const bool single = out.a->itemsize() == 8;
    std::unique_ptr<fft_base> plan;
    if (n == 2)
      plan = single ? make_n<float, 2>(*in.a, *out.a, k, o, rank)
                    : make_n<double, 2>(*in.a, *out.a, k, o, rank);
    else
      plan = single ? make_n<float, 3>(*in.a, *out.a, k, o, rank)
                    : make_n<double, 3>(*in.a, *out.a, k, o, rank);
    return py_fft{std::move(plan), rank};
  });
  m.def("_fft_arrays", [](const cairn::group& g, const std::vector<std::int64_t>& shape,
                          const std::string& kind, bool single, const std::string& decomposition,
                          std::array<int, 2> pencil_grid, int rank) {
    const char* call = "fft_arrays";
    const cairn::fft_kind k = kind_of(kind, call, rank);
    const cairn::fft_options o = options_of(decomposition, "estimate", pencil_grid, call, rank);
    if (shape.size() == 2)
      return single ? arrays_n<float, 2>(g, shape, k, o) : arrays_n<double, 2>(g, shape, k, o);
    if (shape.size() == 3)
      return single ? arrays_n<float, 3>(g, shape, k, o) : arrays_n<double, 3>(g, shape, k, o);
    refuse(call, rank, "shape has " + std::to_string(shape.size()) + " dimensions: 2 or 3");
  });
}

}  // namespace cairn_python
