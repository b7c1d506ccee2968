#pragma once
// One batch of local FFTW transforms: some dimensions of one rank's row-major part, the other
// dimensions looped over (FFTW's guru interface: one plan, one call per batch). Move-only; owns
// its FFTW plan.

#include <array>
#include <cstdint>
#include <vector>

#include "cairn/fft/fft.hpp"
#include "fftw_traits.hpp"

namespace cairn::detail {

/// What a batch computes: complex to complex, real to half spectrum, or back.
enum class local_kind : std::uint8_t { c2c, r2c, c2r };

/// FFTW's planner flags for a rigor.
unsigned rigor_flags(fft_rigor r);

template <class Real>
class local_transform {
 public:
  /// Nothing to transform (an empty part).
  local_transform() = default;
  /// Plans the transforms of dimensions `dims` from a part of extents `in_shape` (reals for
  /// r2c) into one of `out_shape` (reals for c2r), in place or not. FFTW's planner is made
  /// thread-safe first. A part with an empty extent gets no plan. Throws cairn::error (naming
  /// `call`, `rank` and `what`) where FFTW finds none.
  local_transform(const char* call, int rank, const char* what, local_kind kind, int sign, int ndim,
                  const std::int64_t* in_shape, const std::int64_t* out_shape,
                  const std::vector<int>& dims, bool in_place, unsigned flags);
  ~local_transform();
  local_transform(local_transform&& o) noexcept : plan_(o.plan_), kind_(o.kind_) {
    o.plan_ = nullptr;
  }
  local_transform& operator=(local_transform&& o) noexcept;
  local_transform(const local_transform&) = delete;
  local_transform& operator=(const local_transform&) = delete;

  /// Runs the batch from `in` to `out` (the same pointer where planned in place); arrays of the
  /// planned extents, aligned like every darray local part.
  void execute(const void* in, void* out) const;
  /// True when there is something to transform.
  explicit operator bool() const noexcept { return plan_ != nullptr; }
  [[nodiscard]] local_kind kind() const noexcept { return kind_; }

 private:
  typename fftw<Real>::plan plan_ = nullptr;
  local_kind kind_ = local_kind::c2c;
};

}  // namespace cairn::detail
