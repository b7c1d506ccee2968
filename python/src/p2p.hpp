#pragma once
#include <nanobind/nanobind.h>

#include "cairn/cairn.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// Binds the point-to-point calls to cairn.World.
void bind_p2p(nb::class_<cairn::world>& cls);

}  // namespace cairn_python
