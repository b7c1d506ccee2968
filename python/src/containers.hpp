#pragma once
// cairn.CountingSet, cairn.Set, cairn.DisjointSet and cairn.Map: cairn's distributed containers
// with int64 or str keys, operated on by batches of keys (numpy arrays, lists of str).
#include <nanobind/nanobind.h>

#include "cairn/runtime/group.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// Binds the containers' classes (_CountingSet_int, ..., _Map_str_float) and their factories
/// (World._counting_set_int, ..., and the same on Group) to module `m`, whose World and Group
/// classes are `world` and `group`.
void bind_containers(nb::module_& m, nb::class_<cairn::world>& world,
                     nb::class_<cairn::group>& group);

}  // namespace cairn_python
