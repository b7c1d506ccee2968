#pragma once
// numpy arrays made from C++ vectors without a copy.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <vector>

namespace cairn_python {

namespace nb = nanobind;

/// A one-dimensional numpy array owning `v`'s storage (no copy).
template <class E>
nb::object numpy_of(std::vector<E>&& v) {
  auto* heap = new std::vector<E>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<E>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, E, nb::ndim<1>>(heap->data(), {heap->size()}, owner));
}

}  // namespace cairn_python
