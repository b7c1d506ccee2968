#pragma once
// The collectives of cairn.World and cairn.Group: buffer forms (Allreduce, Bcast, ...) on
// anything exporting a buffer, and the byte-level forms the object methods of cairn/__init__.py
// pickle through.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "cairn/cairn.hpp"
#include "reductions.hpp"
#include "request.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// cairn.IN_PLACE: passed as the send buffer, the receive buffer is both input and output.
struct in_place_tag {};

/// The world rank of this rank of `c` (a world or a group), for messages.
inline int world_rank_of(const cairn::world& w) { return w.rank(); }
inline int world_rank_of(const cairn::group& g) {
  return g.rank() < 0 ? -1 : g.world_rank(g.rank());
}

/// Throws cairn::error for `call` on `rank`: `why`.
[[noreturn]] inline void refuse(const char* call, int rank, const std::string& why) {
  throw cairn::error(std::string("cairn.") + call + ": rank " + std::to_string(rank) + ": " + why);
}

/// A Python number as one operand of the object allreduce's fast path: every rank contributes
/// one, and a rank with anything else than an int that fits 64 bits or a float makes the whole
/// reduction take the pickled path, on every rank alike.
struct number {
  /// What the operand holds.
  enum kind_t : std::int64_t { integer = 0, real = 1, object = 2, overflow = 3 };
  std::int64_t kind = object;  ///< the largest kind wins: int op float is a float
  std::int64_t i = 0;          ///< the value, for integer
  double f = 0;                ///< the value, for real
};

/// The operation of the fast path: Python's semantics for SUM, PROD, MIN and MAX on ints and
/// floats; an int result beyond 64 bits marks overflow (the pickled path takes over).
struct number_op {
  static constexpr bool commutative = true;  ///< all four are
  op_kind k = op_kind::sum;                  ///< which operation
  number operator()(const number& a, const number& b) const;
};

/// Binds the collectives to `cls`, the Python class of C (cairn::world or cairn::group).
template <class C>
void bind_collectives(nb::class_<C>& cls);

}  // namespace cairn_python
