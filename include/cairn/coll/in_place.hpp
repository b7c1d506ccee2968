#pragma once
/// \file
/// The in-place tag of the collectives (MPI_IN_PLACE): passed where the input would be, it
/// says that the input already sits in the output buffer (see cairn/coll/collectives.hpp).

namespace cairn {

/// The type of cairn::in_place.
struct in_place_t {
  explicit in_place_t() = default;
};

/// Passed where a collective's input would be: `w.allgather(cairn::in_place, out)`,
/// `w.reduce(cairn::in_place, buf, root, op)`, `w.scatter(in, cairn::in_place, root)`.
inline constexpr in_place_t in_place{};

}  // namespace cairn
