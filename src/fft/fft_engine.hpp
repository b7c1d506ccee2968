#pragma once
// One rank's distributed FFT: the schedule turned into two programs (forward and backward) of
// steps over four buffers — the caller's input and output and two work buffers — each step a
// redistribution, a batch of local FFTW transforms, a copy, or (ranks sharing one address
// space, slabs) the transforms along dimension 0 straight in every rank's slab
// (shared_columns.hpp). Built once; running a program allocates nothing.

#include <iosfwd>
#include <memory>
#include <vector>

#include "cairn/array/plan.hpp"
#include "cairn/fft/fft.hpp"
#include "cairn/runtime/group.hpp"
#include "local_transform.hpp"
#include "shared_columns.hpp"

namespace cairn::detail {

class rank_context;

template <class Real>
class fft_engine {
 public:
  /// Plans the transform between `in` (space domain) and `out` (frequency domain) over `g`.
  fft_engine(const char* call, const cairn::group& g, const layout_desc& in, const layout_desc& out,
             fft_kind kind, const fft_options& opts);
  ~fft_engine();
  fft_engine(const fft_engine&) = delete;
  fft_engine& operator=(const fft_engine&) = delete;

  /// Runs the forward (space to frequency) or backward program from `in` into `out`.
  void run(const char* call, bool forward, const void* in, void* out, fft_scale scale);

  [[nodiscard]] const fft_schedule& schedule() const noexcept { return sched_; }
  std::ostream& print(std::ostream& os) const;

 private:
  enum class buffer : std::uint8_t { in, out, work0, work1 };
  enum class op : std::uint8_t { redistribute, transform, copy, columns };
  // Where the data is between steps: a buffer, its layout and whether it holds reals.
  struct cursor {
    buffer buf = buffer::in;
    layout_desc desc;
    bool real = false;
  };
  struct step {
    op what = op::copy;
    buffer src = buffer::in, dst = buffer::out;
    layout_desc src_desc, dst_desc;
    bool src_real = false, dst_real = false;
    std::shared_ptr<const redistribution_plan> plan;  // redistribute
    int stage = 0;                                    // transform: the schedule's batch
    int sign = 0;                                     // transform: FFTW_FORWARD or FFTW_BACKWARD
    local_kind kind = local_kind::c2c;                // transform
    local_transform<Real> local;                      // transform (empty: nothing local)
    local_transform<Real> local_in_place;             // transform: the same on one array
    shared_columns<Real> columns;                     // columns
    std::size_t bytes = 0;                            // copy
  };

  void build(bool forward);
  void build_shared_columns(bool forward);
  void run_columns(const step& s, const void* from, void* to);
  void emit(std::vector<step>& prog, step s);
  [[nodiscard]] std::int64_t local_elements(const layout_desc& d) const;
  [[nodiscard]] std::size_t elem_size(bool real) const noexcept {
    return real ? sizeof(Real) : 2 * sizeof(Real);
  }
  std::ostream& print(std::ostream& os, const std::vector<step>& prog) const;

  const char* call_;
  cairn::group group_;
  rank_context* ctx_ = nullptr;
  int group_rank_ = -1;
  int world_rank_ = -1;
  std::vector<int> members_;
  fft_kind kind_;
  fft_schedule sched_;
  layout_desc in_, out_;
  std::vector<layout_desc> stage_complex_;  // per batch, the complex shape on its grid
  layout_desc stage0_real_;                 // r2c: the first batch's grid in the real shape
  transfer_options transfer_;
  fft_steps* steps_ = nullptr;
  std::vector<step> forward_, backward_;
  std::size_t work_bytes_[2] = {0, 0};
  fftw_buffer<Real> work_[2];
  std::int64_t total_elements_ = 1;  // of the (real) shape, for scaling
  // op::columns: every rank's two parts (exchanged as addresses), by group rank.
  std::vector<std::uintptr_t> part_addresses_;
  rank_context* column_peers_ = nullptr;  // set where peers' parts are in other processes
};

}  // namespace cairn::detail
