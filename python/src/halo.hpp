#pragma once
// cairn.GhostedArray's core: ghosted arrays and their halo exchanges.
#include <nanobind/nanobind.h>

namespace cairn_python {

namespace nb = nanobind;

/// Binds _GhostedArray, _HaloExchange and _ghosted_darray to module `m`.
void bind_halo(nb::module_& m);

}  // namespace cairn_python
