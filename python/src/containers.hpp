#pragma once
// cairn.CountingSet, cairn.Set, cairn.DisjointSet and cairn.Map: cairn's distributed containers
// with int64 or str keys, operated on by batches of keys (numpy arrays, lists of str).
#include <nanobind/nanobind.h>

#include "cairn/runtime/world.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// Binds the containers' classes (_CountingSet_int, ..., _Map_str_float) and World._container
/// factories to module `m`, whose World class is `world`.
void bind_containers(nb::module_& m, nb::class_<cairn::world>& world);

}  // namespace cairn_python
