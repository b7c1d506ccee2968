#pragma once
// One batch of local FFTW transforms: some dimensions of one rank's row-major part, the other
// dimensions looped over (FFTW's guru interface: one plan, one call per batch). Move-only; owns
// its FFTW plan.

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "cairn/fft/fft.hpp"
#include "fftw_traits.hpp"

namespace cairn::detail {

/// What a batch computes: complex to complex, real to half spectrum, or back.
enum class local_kind : std::uint8_t { c2c, r2c, c2r };

/// Memory of FFTW's alignment (fftw_malloc), at least one byte; freed with the object.
template <class Real>
class fftw_buffer {
 public:
  fftw_buffer() = default;
  /// `bytes` bytes, uninitialized; throws std::bad_alloc.
  explicit fftw_buffer(std::size_t bytes) : p_(fftw<Real>::malloc(bytes ? bytes : 1)) {
    if (!p_) throw std::bad_alloc();
  }
  ~fftw_buffer() {
    if (p_) fftw<Real>::free(p_);
  }
  fftw_buffer(fftw_buffer&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  fftw_buffer& operator=(fftw_buffer&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  fftw_buffer(const fftw_buffer&) = delete;
  fftw_buffer& operator=(const fftw_buffer&) = delete;
  [[nodiscard]] void* get() const noexcept { return p_; }

 private:
  void* p_ = nullptr;
};

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
