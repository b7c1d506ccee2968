// The extension module cairn._cairn: the C++ library's calls for cairn/__init__.py, which adds
// the object (pickled) forms and the Python-side conveniences.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "cairn/cairn.hpp"
#include "channel.hpp"
#include "collectives.hpp"
#include "containers.hpp"
#include "darray.hpp"
#include "fft.hpp"
#include "gil.hpp"
#include "halo.hpp"
#include "launch.hpp"
#include "p2p.hpp"
#include "rank_scope.hpp"
#include "reductions.hpp"
#include "request.hpp"
#if CAIRN_PYTHON_HAVE_MPI
#include "cairn/runtime/mpi.hpp"
#endif

namespace nb = nanobind;
using namespace cairn_python;

namespace cairn_python {

const char* to_string(op_kind k) noexcept {
  switch (k) {
    case op_kind::sum: return "SUM";
    case op_kind::prod: return "PROD";
    case op_kind::min: return "MIN";
    case op_kind::max: return "MAX";
    case op_kind::land: return "LAND";
    case op_kind::lor: return "LOR";
    case op_kind::lxor: return "LXOR";
    case op_kind::band: return "BAND";
    case op_kind::bor: return "BOR";
    case op_kind::bxor: return "BXOR";
  }
  return "?";
}

}  // namespace cairn_python

namespace {

// The generalized reduce's options as Python names them; refuses an unknown algorithm.
cairn::generalized_reduce_options reduce_options(const std::string& algorithm, bool load_balance,
                                                 bool direct_delivery, std::uint64_t stream,
                                                 cairn::reduce_balancer* balancer, int rank) {
  cairn::generalized_reduce_options o;
  if (algorithm == "butterfly")
    o.algorithm = cairn::generalized_reduce_algorithm::butterfly;
  else if (algorithm == "shared_memory")
    o.algorithm = cairn::generalized_reduce_algorithm::shared_memory;
  else if (algorithm == "shared_memory_staged")
    o.algorithm = cairn::generalized_reduce_algorithm::shared_memory_staged;
  else if (algorithm == "hierarchical")
    o.algorithm = cairn::generalized_reduce_algorithm::hierarchical;
  else if (algorithm != "automatic")
    refuse("reduce", rank,
           "algorithm must be 'automatic', 'butterfly', 'shared_memory', "
           "'shared_memory_staged' or 'hierarchical', not '" +
               algorithm + "'");
  o.load_balance = load_balance;
  o.direct_delivery = direct_delivery;
  o.stream = stream;
  o.balancer = balancer;
  return o;
}

// Starts the generalized reduce (Aspen §3.3) on buffers: `in` from every participant, the
// reduction in `out` on every receiver; None where a rank has no part. The request holds both.
py_request ireduce_generalized(cairn::world& w, std::vector<int> participants,
                               std::vector<int> receivers, nb::handle send, nb::handle recv,
                               op_kind k, const std::string& algorithm, bool load_balance,
                               bool direct_delivery, std::uint64_t stream,
                               cairn::reduce_balancer* balancer) {
  const int rank = w.rank();
  buffer in, out;
  if (!send.is_none()) in = buffer(send.ptr(), false, "reduce", rank, "x");
  if (!recv.is_none()) out = buffer(recv.ptr(), true, "reduce", rank, "out");
  if (!send.is_none() && !recv.is_none() && (in.type() != out.type() || in.bytes() != out.bytes()))
    refuse("reduce", rank,
           "x holds " + in.describe() + " and out " + out.describe() + ": they must match");
  const auto o = reduce_options(algorithm, load_balance, direct_delivery, stream, balancer, rank);
  const element type = send.is_none() ? out.type() : in.type();
  cairn::request req;
  with_operation(k, type, "reduce", rank, [&]<class T, class Op>(T, Op op) {
    unlocked gil_free;
    req = w.ireduce(participants, receivers, in.as<const T>(), out.as<T>(), op, o);
  });
  std::vector<buffer> held;
  held.push_back(std::move(in));
  held.push_back(std::move(out));
  return {std::move(req), std::move(held)};
}

// A channel as Python holds it: the rank's end, its world (errors name the world rank) and,
// for a channel on a group, the group (its phases and agreements run there). It ends with the
// function of the rank that made it, as a container does (rank_scope).
class py_channel : public ends_with_scope<py_channel> {
 public:
  py_channel(cairn::world w, std::optional<cairn::group> g, std::unique_ptr<channel_base> c)
      : w_(std::move(w)), g_(std::move(g)), c_(std::move(c)) {}
  ~py_channel() { close(); }

  void send_many(nb::handle keys, nb::handle values) {
    const int rank = w_.rank();
    buffer k(keys.ptr(), false, "Channel.send_many", rank, "keys");
    const auto v = buffer_or_none(values.ptr(), false, "Channel.send_many", rank, "values");
    live("send_many").send_many(rank, k, v ? &*v : nullptr);
  }
  void flush() { live("flush").flush(); }
  // Every rank: until no item is in flight and every arrival went to the handler, also those
  // the handler's own sends made (rounds of world::quiesce, delivery and an agreement).
  void quiesce() {
    channel_base& c = live("quiesce");
    for (;;) {
      {
        unlocked gil_free;
        if (g_)
          g_->quiesce();
        else
          w_.quiesce();
      }
      const std::uint64_t before = c.sent();
      c.deliver();
      const int more = c.sent() != before ? 1 : 0;
      int again = 0;
      {
        unlocked gil_free;
        again = g_ ? g_->allreduce(more, cairn::max{}) : w_.allreduce(more, cairn::max{});
      }
      if (again == 0) return;
    }
  }
  [[nodiscard]] std::uint64_t local_size() {
    return live("local_size").local_size(g_ ? g_->rank() : w_.rank());
  }
  // The channel's end: a channel with items still buffered ends the run (cairn's rule).
  void close() {
    leave_scope();
    if (!c_) return;
    nb::object handler = c_->release_handler();
    unlocked gil_free;
    c_.reset();
  }

 private:
  channel_base& live(const char* call) {
    if (!c_) refuse((std::string("Channel.") + call).c_str(), w_.rank(), "the channel is closed");
    return *c_;
  }
  cairn::world w_;
  std::optional<cairn::group> g_;
  std::unique_ptr<channel_base> c_;
};

// A channel on `on` (the world, or the group `g`): made with the GIL released, since making it
// is collective and the other ranks (threads of this process) may need the GIL to get there;
// then given its handler.
template <class Ranks>
std::unique_ptr<py_channel> new_channel(const Ranks& on, std::uint64_t n, nb::object handler,
                                        item_value value, combining c, op_kind op, route_kind route,
                                        std::size_t batch, std::size_t buffer_items) {
  std::unique_ptr<channel_base> ch;
  {
    unlocked gil_free;
    ch = make_channel(on, n, value, c, op, route, batch, buffer_items);
  }
  ch->set_handler(std::move(handler));
  return std::make_unique<py_channel>(cairn::msg::detail::world_of(on),
                                      cairn::msg::detail::group_of(on), std::move(ch));
}

#if CAIRN_PYTHON_HAVE_MPI
long fortran_handle(MPI_Comm c) { return static_cast<long>(MPI_Comm_c2f(c)); }
#endif

}  // namespace

NB_MODULE(_cairn, m) {
  m.doc() = "cairn's C++ library (see the cairn package for the documented API)";

  nb::exception<cairn::error>(m, "Error");
  // Raised in the ranks that another rank's failure releases: a BaseException, so that
  // `except Exception` in user code does not hold the run up.
  // Never freed: the translator may run until the interpreter is gone.
  static PyObject* aborted =
      PyErr_NewException("cairn._cairn.RunAborted", PyExc_BaseException, nullptr);
  m.attr("RunAborted") = nb::borrow(aborted);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const cairn::detail::run_aborted& e) {
      PyErr_SetString(aborted, e.what());
    }
  });

  nb::enum_<op_kind>(m, "Op", "A predefined reduction operation (as MPI's)")
      .value("SUM", op_kind::sum)
      .value("PROD", op_kind::prod)
      .value("MIN", op_kind::min)
      .value("MAX", op_kind::max)
      .value("LAND", op_kind::land)
      .value("LOR", op_kind::lor)
      .value("LXOR", op_kind::lxor)
      .value("BAND", op_kind::band)
      .value("BOR", op_kind::bor)
      .value("BXOR", op_kind::bxor);
  nb::class_<in_place_tag>(m, "InPlace", "The type of cairn.IN_PLACE");
  m.attr("IN_PLACE") = in_place_tag{};
  m.attr("ANY_SOURCE") = cairn::any_source;
  m.attr("ANY_TAG") = cairn::any_tag;

  nb::class_<cairn::status>(m, "Status", "What a completed receive matched")
      .def_ro("source", &cairn::status::source)
      .def_ro("tag", &cairn::status::tag)
      .def_ro("nbytes", &cairn::status::bytes)
      .def("__repr__", [](const cairn::status& s) {
        return "Status(source=" + std::to_string(s.source) + ", tag=" + std::to_string(s.tag) +
               ", nbytes=" + std::to_string(s.bytes) + ")";
      });

  nb::class_<py_request>(m, "Request", "A non-blocking call in flight")
      .def("wait", &py_request::wait)
      .def("test", &py_request::test)
      .def_prop_ro("status", &py_request::status);
  nb::class_<py_persistent>(m, "PersistentRequest",
                            "A collective or a send or receive set up once and started many times")
      .def("start", &py_persistent::start)
      .def("wait", &py_persistent::wait)
      .def("test", &py_persistent::test)
      .def_prop_ro("active", &py_persistent::active)
      .def_prop_ro("plan", &py_persistent::plan)
      .def_prop_ro("status", &py_persistent::status);

  nb::class_<cairn::group> group(m, "Group", "A set of ranks of the world, in order");
  group.def_prop_ro("rank", &cairn::group::rank)
      .def_prop_ro("size", &cairn::group::size)
      .def_prop_ro("members", &cairn::group::members)
      .def("world_rank", &cairn::group::world_rank)
      .def_prop_ro("_world_rank_here", [](const cairn::group& g) { return g.world().rank(); })
      // Collective over the members: until every item and call of the group's containers is
      // delivered.
      .def("quiesce", [](cairn::group& g) {
        unlocked gil_free;
        g.quiesce();
      });
#if CAIRN_PYTHON_HAVE_MPI
  group.def("_mpi_comm_f", [](const cairn::group& g) {
    unlocked gil_free;  // collective over the members
    return fortran_handle(cairn::mpi_comm(g));
  });
#endif
  bind_collectives(group);

  nb::class_<cairn::world> world(m, "World", "One rank's view of the run");
  world.def_prop_ro("rank", &cairn::world::rank)
      .def_prop_ro("_world_rank_here", &cairn::world::rank)  // as on Group: errors name it
      .def_prop_ro("size", &cairn::world::size)
      .def_prop_ro("engine",
                   [](const cairn::world& w) { return std::string(cairn::to_string(w.engine())); })
      .def_prop_ro("node", &cairn::world::node)
      .def_prop_ro("node_count", &cairn::world::node_count)
      .def_prop_ro("local_rank", &cairn::world::local_rank)
      .def_prop_ro("ranks_on_node", &cairn::world::ranks_on_node)
      .def_prop_ro("args", &cairn::world::args)
      .def("group",
           [](const cairn::world& w, std::vector<int> members) { return w.group(members); })
      .def("progress",
           [](cairn::world& w) {
             unlocked gil_free;
             w.progress();
           })
      // Collective: until every item and call of the world's channels and containers is
      // delivered (channels with Python handlers hand theirs over in their own quiesce()).
      .def("quiesce", [](cairn::world& w) {
        unlocked gil_free;
        w.quiesce();
      });
  world.def("_ireduce_generalized", &ireduce_generalized, nb::arg("participants"),
            nb::arg("receivers"), nb::arg("x").none(), nb::arg("out").none(), nb::arg("op"),
            nb::arg("algorithm"), nb::arg("load_balance"), nb::arg("direct_delivery"),
            nb::arg("stream"), nb::arg("balancer").none());
  nb::class_<cairn::reduce_balancer>(
      m, "ReduceBalancer",
      "The message counts of a series of generalized reduces, for load balancing across them")
      .def(nb::init<>())
      .def("incoming", &cairn::reduce_balancer::incoming, nb::arg("rank"))
      .def("outgoing", &cairn::reduce_balancer::outgoing, nb::arg("rank"))
      .def(
          "record",
          [](cairn::reduce_balancer& b, std::vector<int> participants, std::vector<int> receivers,
             bool direct_delivery) { b.record(participants, receivers, direct_delivery); },
          nb::arg("participants"), nb::arg("receivers"), nb::arg("direct_delivery") = true)
      .def("clear", &cairn::reduce_balancer::clear);
#if CAIRN_PYTHON_HAVE_MPI
  world.def("_mpi_comm_f",
            [](const cairn::world& w) { return fortran_handle(cairn::mpi_comm(w)); });
#endif
  nb::enum_<item_value>(m, "_ItemValue")
      .value("none", item_value::none)
      .value("int64", item_value::int64)
      .value("float64", item_value::float64);
  nb::enum_<combining>(m, "_Combining")
      .value("none", combining::none)
      .value("dedup", combining::dedup)
      .value("merge", combining::merge);
  nb::enum_<route_kind>(m, "_Route")
      .value("direct", route_kind::direct)
      .value("grid", route_kind::grid);
  nb::class_<py_channel>(m, "Channel", "Aggregated messages of (key, value) items")
      .def("send_many", &py_channel::send_many, nb::arg("keys"),
           nb::arg("values").none() = nb::none())
      .def("flush", &py_channel::flush)
      .def("quiesce", &py_channel::quiesce)
      .def_prop_ro("local_size", &py_channel::local_size)
      .def("close", &py_channel::close);
  world.def("_channel", [](const cairn::world& w, std::uint64_t n, nb::object handler,
                           item_value value, combining c, op_kind op, route_kind route,
                           std::size_t batch, std::size_t buffer_items) {
    return new_channel(w, n, std::move(handler), value, c, op, route, batch, buffer_items);
  });
  group.def("_channel", [](const cairn::group& g, std::uint64_t n, nb::object handler,
                           item_value value, combining c, op_kind op, route_kind route,
                           std::size_t batch, std::size_t buffer_items) {
    return new_channel(g, n, std::move(handler), value, c, op, route, batch, buffer_items);
  });
  bind_containers(m, world, group);
  nb::class_<py_darray>(m, "_DArray")
      .def_prop_ro("ndim", [](const py_darray& d) { return d.a->ndim(); })
      .def_prop_ro("itemsize", [](const py_darray& d) { return d.a->itemsize(); })
      .def_prop_ro("shape", [](const py_darray& d) { return d.a->shape(); })
      .def_prop_ro("local_shape", [](const py_darray& d) { return d.a->local_shape(); })
      .def("global_indices", [](const py_darray& d, int dim) { return d.a->global_indices(dim); })
      .def("describe", [](const py_darray& d) { return d.a->describe(); })
      // The local part's bytes, a view kept alive by the array (no copy).
      .def("local_bytes", [](nb::handle self) {
        auto& d = nb::cast<py_darray&>(self);
        return nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(
            static_cast<std::uint8_t*>(d.a->data()), {d.a->bytes()}, self);
      });
  // `kind`: numpy's dtype.kind ('f' and 'c' make typed arrays).
  m.def("_darray",
        [](const cairn::group& g, const std::vector<std::int64_t>& shape,
           const std::vector<std::pair<std::string, std::int64_t>>& dists,
           const std::vector<int>& grid, std::size_t itemsize, const std::string& kind, int rank) {
          std::vector<dim_spec> d;
          for (const auto& [dist, size] : dists) d.push_back({dist, size});
          const element_kind k = kind == "f"   ? element_kind::real
                                 : kind == "c" ? element_kind::complex
                                               : element_kind::raw;
          return py_darray{make_darray(g, shape, d, grid, itemsize, k, rank)};
        });
#if CAIRN_PYTHON_HAVE_FFT
  bind_fft(m);
#endif
  bind_halo(m);
  m.def("_iredistribute", [](nb::handle src, nb::handle dst, int rank) {
    auto& s = nb::cast<py_darray&>(src);
    auto& d = nb::cast<py_darray&>(dst);
    cairn::request req = s.a->redistribute_to(*d.a, rank);
    return py_request(std::move(req), nb::make_tuple(src, dst));
  });
  nb::class_<cairn::tasks>(m, "Tasks", "The world split into tasks, each a group of ranks")
      .def(nb::init<const cairn::world&, const std::vector<int>&>(), nb::arg("world"),
           nb::arg("sizes"))
      .def_static(
          "by_color",
          [](cairn::world& w, int color) {
            unlocked gil_free;
            return cairn::tasks::by_color(w, color);
          },
          nb::arg("world"), nb::arg("color"))
      .def_prop_ro("count", &cairn::tasks::count)
      .def_prop_ro("task", &cairn::tasks::task)
      .def("task_of", &cairn::tasks::task_of)
      .def("group", &cairn::tasks::group)
      .def_prop_ro("my_group", &cairn::tasks::my_group)
      .def("_isend",
           [](cairn::tasks& t, nb::handle a, int to, int tag) {
             auto& d = nb::cast<py_darray&>(a);
             return py_request(d.a->task_send(t, to, tag), nb::make_tuple(a));
           })
      .def("_irecv", [](cairn::tasks& t, nb::handle a, int from, int tag) {
        auto& d = nb::cast<py_darray&>(a);
        return py_request(d.a->task_recv(t, from, tag), nb::make_tuple(a));
      });
  bind_p2p(world);
  bind_collectives(world);

  bind_launch(m, nb::handle(aborted));
}
