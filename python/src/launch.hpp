#pragma once
#include <nanobind/nanobind.h>

namespace cairn_python {

namespace nb = nanobind;

/// Binds cairn.launch (the `_cairn.launch` that cairn/__init__.py wraps), detect_engine and
/// mpi_available. `aborted` is the Python type a released rank's cairn calls raise.
void bind_launch(nb::module_& m, nb::handle aborted);

}  // namespace cairn_python
