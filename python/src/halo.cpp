// cairn.GhostedArray: cairn's ghosted_darray (a BLOCK-distributed array whose local part is
// padded by ghost cells) with its padded part as a numpy view, and its halo exchanges: one-off
// (blocking or a request) and planned once (cairn::halo_exchange), all with the GIL released.
#include "halo.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cairn/array/halo.hpp"
#include "darray_impl.hpp"

namespace cairn_python {
namespace {

// One rank's ghosted array, whatever its element size and dimensions (ghosted_impl
// instantiates each).
class ghosted_base {
 public:
  virtual ~ghosted_base() = default;
  [[nodiscard]] virtual int ndim() const = 0;
  [[nodiscard]] virtual std::vector<std::int64_t> shape() const = 0;
  [[nodiscard]] virtual std::vector<std::int64_t> padded_shape() const = 0;
  [[nodiscard]] virtual std::vector<int> ghosts() const = 0;
  [[nodiscard]] virtual void* data() = 0;
  [[nodiscard]] virtual std::size_t bytes() const = 0;
  [[nodiscard]] virtual std::vector<std::int64_t> global_indices(int d) const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
  [[nodiscard]] virtual std::string plan(bool corners) const = 0;
  virtual cairn::request start(bool corners) = 0;
  virtual std::unique_ptr<cairn::halo_exchange> persistent(bool corners) = 0;
};

template <std::size_t K, int N>
class ghosted_impl final : public ghosted_base {
 public:
  ghosted_impl(const cairn::layout<N>& l, const std::array<int, N>& ghosts,
               const std::array<bool, N>& periodic)
      : a_(l, ghosts, periodic) {}

  [[nodiscard]] int ndim() const override { return N; }
  [[nodiscard]] std::vector<std::int64_t> shape() const override {
    const auto s = a_.get_layout().shape();
    return {s.begin(), s.end()};
  }
  [[nodiscard]] std::vector<std::int64_t> padded_shape() const override {
    const auto& s = a_.padded_shape();
    return {s.begin(), s.end()};
  }
  [[nodiscard]] std::vector<int> ghosts() const override {
    return {a_.ghosts().begin(), a_.ghosts().end()};
  }
  [[nodiscard]] void* data() override { return a_.data(); }
  [[nodiscard]] std::size_t bytes() const override { return a_.padded_size() * K; }
  [[nodiscard]] std::vector<std::int64_t> global_indices(int d) const override {
    return global_indices_of(a_.get_layout(), a_.interior_shape(), d);
  }
  [[nodiscard]] std::string describe() const override { return text_of(a_.get_layout()); }
  [[nodiscard]] std::string plan(bool corners) const override {
    std::ostringstream s;
    s << *cairn::plan_halo(a_, cairn::halo_options{.corners = corners}, "plan_halo");
    return s.str();
  }
  cairn::request start(bool corners) override {
    unlocked gil_free;
    return cairn::exchange_halos(a_, corners);
  }
  std::unique_ptr<cairn::halo_exchange> persistent(bool corners) override {
    unlocked gil_free;
    return std::make_unique<cairn::halo_exchange>(a_, cairn::halo_options{.corners = corners});
  }

 private:
  cairn::ghosted_darray<blob<K>, N> a_;
};

template <int N>
std::unique_ptr<ghosted_base> make_n(const cairn::group& g, const std::vector<std::int64_t>& shape,
                                     const std::vector<int>& ghosts,
                                     const std::vector<bool>& periodic,
                                     const std::vector<int>& grid, std::size_t itemsize, int rank) {
  typename cairn::layout<N>::index s{};
  std::array<cairn::dim_dist, N> d{};
  std::array<int, N> gr{}, gh{};
  std::array<bool, N> per{};
  for (std::size_t i = 0; i < N; ++i) {
    s[i] = shape[i];
    d[i] = cairn::dist::block;
    gr[i] = grid.empty() ? 0 : grid[i];
    gh[i] = ghosts[i];
    per[i] = periodic[i];
  }
  const cairn::layout<N> l(g, s, d, gr);
  switch (itemsize) {
    case 1: return std::make_unique<ghosted_impl<1, N>>(l, gh, per);
    case 2: return std::make_unique<ghosted_impl<2, N>>(l, gh, per);
    case 4: return std::make_unique<ghosted_impl<4, N>>(l, gh, per);
    case 8: return std::make_unique<ghosted_impl<8, N>>(l, gh, per);
    case 16: return std::make_unique<ghosted_impl<16, N>>(l, gh, per);
    default:
      refuse("ghosted_darray", rank,
             "elements of " + std::to_string(itemsize) + " bytes: 1, 2, 4, 8 or 16");
  }
}

struct py_ghosted {
  std::unique_ptr<ghosted_base> a;
};

// A planned exchange as Python holds it: destroyed (which waits for a started exchange) with
// the GIL released, so that the other ranks' threads go on.
struct py_halo {
  std::unique_ptr<cairn::halo_exchange> h;
  explicit py_halo(std::unique_ptr<cairn::halo_exchange> x) : h(std::move(x)) {}
  py_halo(const py_halo&) = delete;
  py_halo& operator=(const py_halo&) = delete;
  ~py_halo() {
    unlocked gil_free;
    h.reset();
  }
};

}  // namespace

void bind_halo(nb::module_& m) {
  nb::class_<py_halo>(m, "_HaloExchange")
      .def("start",
           [](py_halo& p) {
             unlocked gil_free;
             p.h->start();
           })
      .def("test",
           [](py_halo& p) {
             unlocked gil_free;
             return p.h->test();
           })
      .def("wait",
           [](py_halo& p) {
             unlocked gil_free;
             p.h->wait();
           })
      .def_prop_ro("plan", [](const py_halo& p) {
        std::ostringstream s;
        if (p.h->plan()) s << *p.h->plan();
        return s.str();
      });
  nb::class_<py_ghosted>(m, "_GhostedArray")
      .def_prop_ro("ndim", [](const py_ghosted& g) { return g.a->ndim(); })
      .def_prop_ro("shape", [](const py_ghosted& g) { return g.a->shape(); })
      .def_prop_ro("padded_shape", [](const py_ghosted& g) { return g.a->padded_shape(); })
      .def_prop_ro("ghosts", [](const py_ghosted& g) { return g.a->ghosts(); })
      .def("global_indices", [](const py_ghosted& g, int d) { return g.a->global_indices(d); })
      .def("describe", [](const py_ghosted& g) { return g.a->describe(); })
      .def("plan", [](const py_ghosted& g, bool corners) { return g.a->plan(corners); })
      // The padded part's bytes, a view kept alive by the array (no copy).
      .def("padded_bytes",
           [](nb::handle self) {
             auto& g = nb::cast<py_ghosted&>(self);
             return nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(
                 static_cast<std::uint8_t*>(g.a->data()), {g.a->bytes()}, self);
           })
      // A request holding the array until the exchange completes.
      .def("_start",
           [](nb::handle self, bool corners) {
             auto& g = nb::cast<py_ghosted&>(self);
             return py_request(g.a->start(corners), nb::make_tuple(self));
           })
      .def("_persistent", [](py_ghosted& g, bool corners) {
        return std::make_unique<py_halo>(g.a->persistent(corners));
      });
  // Every ghosted dimension is BLOCK (the one distribution halos are defined on).
  m.def("_ghosted_darray", [](const cairn::group& g, const std::vector<std::int64_t>& shape,
                              const std::vector<int>& ghosts, const std::vector<bool>& periodic,
                              const std::vector<int>& grid, std::size_t itemsize, int rank) {
    const std::size_t n = shape.size();
    if (n < 1 || n > 3)
      refuse("ghosted_darray", rank, "shape has " + std::to_string(n) + " dimensions: 1 to 3");
    if (ghosts.size() != n || periodic.size() != n || (!grid.empty() && grid.size() != n))
      refuse("ghosted_darray", rank,
             "shape has " + std::to_string(n) + " dimensions, ghosts " +
                 std::to_string(ghosts.size()) + ", periodic " + std::to_string(periodic.size()) +
                 " and grid " + std::to_string(grid.size()) + ": give one per dimension");
    switch (n) {
      case 1: return py_ghosted{make_n<1>(g, shape, ghosts, periodic, grid, itemsize, rank)};
      case 2: return py_ghosted{make_n<2>(g, shape, ghosts, periodic, grid, itemsize, rank)};
      default: return py_ghosted{make_n<3>(g, shape, ghosts, periodic, grid, itemsize, rank)};
    }
  });
}

}  // namespace cairn_python
