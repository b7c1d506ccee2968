#pragma once
// cairn.CountingSet, cairn.Set, cairn.DisjointSet, cairn.Map, cairn.Array and cairn.Bag: cairn's
// distributed containers, operated on by batches of keys (numpy arrays, lists of str).
#include <nanobind/nanobind.h>

#include "cairn/runtime/group.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// Binds the containers' classes (_CountingSet_int, ..., _Map_str_float, and the same with
/// "_grid" appended for the grid route) and their factories (World._counting_set_int, ...,
/// _counting_set_int_grid, ..., and the same on Group) to module `m`, whose World and Group
/// classes are `world` and `group`.
void bind_containers(nb::module_& m, nb::class_<cairn::world>& world,
                     nb::class_<cairn::group>& group);

}  // namespace cairn_python
