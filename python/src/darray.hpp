#pragma once
// cairn.DArray: cairn's distributed arrays, their local parts as numpy arrays, and
// redistribution between any two layouts (within a group or between groups).
#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cairn/cairn.hpp"
#include "request.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// One rank's part of a distributed array of elements of `itemsize` bytes (the Python side
/// gives them their numpy type): the type the binding holds, whatever the rank count N and
/// element size (darray.cpp instantiates each).
class darray_base {
 public:
  virtual ~darray_base() = default;
  /// Dimensions.
  [[nodiscard]] virtual int ndim() const = 0;
  /// Bytes per element.
  [[nodiscard]] virtual std::size_t itemsize() const = 0;
  /// The global shape.
  [[nodiscard]] virtual std::vector<std::int64_t> shape() const = 0;
  /// This rank's local extents (zeros off the array's group).
  [[nodiscard]] virtual std::vector<std::int64_t> local_shape() const = 0;
  /// The local part's first byte (C order, local_shape).
  [[nodiscard]] virtual void* data() = 0;
  /// Bytes of the local part.
  [[nodiscard]] virtual std::size_t bytes() const = 0;
  /// The global indices of this rank's local positions along dimension d.
  [[nodiscard]] virtual std::vector<std::int64_t> global_indices(int d) const = 0;
  /// The layout, printed ("[8 x 6] (block, cyclic) on a 2 x 1 grid over 2 ranks").
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Starts moving this array into `dst` (same shape and element size); the GIL is released.
  virtual cairn::request redistribute_to(darray_base& dst, int rank) const = 0;
  /// Starts sending this array (laid out over this rank's task) to task `to` of `t`.
  virtual cairn::request task_send(cairn::tasks& t, int to, int tag) const = 0;
  /// Starts receiving into this array from task `from` of `t`.
  virtual cairn::request task_recv(cairn::tasks& t, int from, int tag) = 0;
};

/// What a numpy element type is, as far as cairn's arrays care: floating (float32, float64)
/// and complex (complex64, complex128) arrays are typed (an FFT takes them), others are bytes.
enum class element_kind { raw, real, complex };

/// A cairn.DArray's core (cairn/__init__.py's DArray gives it a numpy type).
struct py_darray {
  std::unique_ptr<darray_base> a;
};

/// One dimension's distribution as the Python side names it.
struct dim_spec {
  std::string kind;       ///< "block", "cyclic", "block_cyclic" or "replicated"
  std::int64_t size = 0;  ///< block size of block_cyclic
};

/// Makes this rank's part of an array over group `g` (every rank may hold one; non-members'
/// parts are empty) of elements of `itemsize` bytes of kind `kind`. Throws cairn::error naming
/// world rank `rank` for a bad shape, distribution or grid.
std::unique_ptr<darray_base> make_darray(const cairn::group& g,
                                         const std::vector<std::int64_t>& shape,
                                         const std::vector<dim_spec>& dists,
                                         const std::vector<int>& grid, std::size_t itemsize,
                                         element_kind kind, int rank);

}  // namespace cairn_python
