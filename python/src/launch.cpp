// cairn.launch: runs a Python function on every rank of the threads or the MPI engine.
#include "launch.hpp"
#include "gil.hpp"
#include "rank_scope.hpp"

#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cairn/cairn.hpp"
#if CAIRN_PYTHON_HAVE_MPI
#include "cairn/runtime/mpi.hpp"
#endif

namespace cairn_python {
namespace {

std::optional<cairn::engine> engine_of(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  if (*name == "threads") return cairn::engine::threads;
  if (*name == "mpi") return cairn::engine::mpi;
  throw cairn::error("cairn.launch: engine must be 'threads' or 'mpi', not '" + *name + "'");
}

std::optional<cairn::progress_mode> progress_of(const std::optional<std::string>& name,
                                                const char* call) {
  if (!name) return std::nullopt;
  if (*name == "calls") return cairn::progress_mode::calls;
  if (*name == "peers") return cairn::progress_mode::peers;
  if (*name == "thread") return cairn::progress_mode::thread;
  throw cairn::error(std::string(call) + ": progress must be 'calls', 'peers' or 'thread', not '" +
                     *name + "'");
}

// What a rank's function raised first (the threads engine re-raises it in launch's caller).
struct first_failure {
  nb::object error;  // the exception object; touched only with the GIL held
  int rank = -1;
};

#if CAIRN_PYTHON_HAVE_MPI
// cairn.MPISession's core: the session, and the scope of the containers and channels made on
// this thread while it is open (closed first when it closes, as a rank's end closes them).
struct py_session {
  cairn::mpi_session session;
  rank_scope scope;

  py_session(MPI_Comm comm, int argc, char** argv, const cairn::launch_options& options)
      : session(comm, argc, argv, options) {
    scope.open();
  }
  void close() {
    if (!session.is_open()) return;
    scope.end_all();
    scope.shut();
    unlocked gil_free;  // waits for every process to close its own
    session.close();
  }
};
#endif

}  // namespace

void bind_launch(nb::module_& m, nb::handle aborted) {
  m.def(
      "launch",
      [aborted](nb::callable fn, std::optional<int> ranks, std::optional<std::string> engine,
                std::optional<int> nodes, std::optional<double> watchdog_s,
                std::optional<std::string> progress, std::optional<long> mpi_comm_f,
                std::vector<std::string> argv) {
        cairn::launch_options options;
        options.engine = engine_of(engine);
        options.ranks = ranks;
        options.nodes = nodes;
        options.watchdog_s = watchdog_s;
        options.progress = progress_of(progress, "cairn.launch");
        if (argv.empty()) argv.push_back("python");
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);

        first_failure failure;
        auto body = [&](cairn::world& w) {
          // Spinning for the GIL helps only where every rank has a core of its own.
          gil::spin.store(w.engine() != cairn::engine::threads ||
                          w.size() <= static_cast<int>(std::thread::hardware_concurrency()));
          locked python;
          rank_scope scope;  // what fn makes that ends with the rank (containers)
          const rank_scope::enter in_scope(scope);
          try {
            fn(w);
            scope.end_all();
          } catch (nb::python_error& e) {
            // A rank released because another failed ends as the run expects.
            if (e.matches(aborted)) throw cairn::detail::run_aborted{};
            const std::string text = e.what();
            if (!failure.error.is_valid()) {
              failure.error = nb::borrow(e.value());
              failure.rank = w.rank();
            }
            throw cairn::error(text);
          }
        };

        const void* comm = nullptr;
#if CAIRN_PYTHON_HAVE_MPI
        MPI_Comm given = MPI_COMM_NULL;
        if (mpi_comm_f) {
          given = MPI_Comm_f2c(static_cast<MPI_Fint>(*mpi_comm_f));
          comm = &given;
        }
#else
        if (mpi_comm_f)
          throw cairn::error("cairn.launch: comm= needs the MPI engine, which this build lacks");
#endif
        int rc = 0;
        {
          unlocked gil_free;
          rc = cairn::detail::launch_main(nullptr, static_cast<int>(argv.size()), args.data(),
                                          options, comm, body);
        }
        if (failure.error.is_valid()) {
          // The original exception, traceback and all, as if fn had raised it here.
          PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(failure.error.ptr())),
                          failure.error.ptr());
          throw nb::python_error();
        }
        if (rc != 0)
          throw cairn::error("cairn.launch: the run ended with exit code " + std::to_string(rc) +
                             " (the message above says why)");
      },
      nb::arg("fn"), nb::arg("ranks") = nb::none(), nb::arg("engine") = nb::none(),
      nb::arg("nodes") = nb::none(), nb::arg("watchdog_s") = nb::none(),
      nb::arg("progress") = nb::none(), nb::arg("mpi_comm_f") = nb::none(),
      nb::arg("argv") = std::vector<std::string>{});

#if CAIRN_PYTHON_HAVE_MPI
  // cairn.MPISession's core: a cairn::mpi_session on an mpi4py communicator (Fortran handle).
  nb::class_<py_session>(m, "_Session")
      .def(
          "__init__",
          [](py_session* self, long comm_f, std::optional<int> nodes,
             std::optional<double> watchdog_s, std::optional<std::string> progress,
             std::vector<std::string> argv) {
            cairn::launch_options options;
            options.nodes = nodes;
            options.watchdog_s = watchdog_s;
            options.progress = progress_of(progress, "cairn.MPISession");
            if (argv.empty()) argv.push_back("python");
            std::vector<char*> args;
            for (auto& a : argv) args.push_back(a.data());
            args.push_back(nullptr);
            const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_f));
            unlocked gil_free;  // collective over the communicator
            new (self) py_session(comm, static_cast<int>(argv.size()), args.data(), options);
          },
          nb::arg("comm_f"), nb::arg("nodes").none(), nb::arg("watchdog_s").none(),
          nb::arg("progress").none(), nb::arg("argv"))
      // A copy: it outlives the session and then refuses calls, as a world kept after launch.
      .def_prop_ro("world", [](py_session& s) { return s.session.world(); })
      .def_prop_ro("is_open", [](const py_session& s) { return s.session.is_open(); })
      .def("close", &py_session::close)
      .def("abort", [](py_session& s, const std::string& what) { s.session.abort(what); });
#endif

  m.def("detect_engine", [](std::vector<std::string> argv) {
    if (argv.empty()) argv.push_back("python");
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    return std::string(
        cairn::to_string(cairn::detect_engine(static_cast<int>(argv.size()), args.data())));
  });
  m.def("mpi_available", &cairn::mpi_available);
}

}  // namespace cairn_python
