#pragma once
/// \file
/// HPF/MPI's pipelined 2-D FFT (section 3) as a library: two tasks (disjoint groups) stream
/// datasets through a forward transform: task A transforms the rows of each dataset and sends
/// it on, task B receives it and transforms the columns, so that A works on dataset i + 1 while
/// B works on dataset i. Link `cairn::fft`.

#include <complex>
#include <iosfwd>
#include <memory>

#include "cairn/fft/fft.hpp"

namespace cairn {

namespace detail {
template <class Real>
class two_task_engine;
}  // namespace detail

/// A 2-D forward FFT split between two tasks: `rows` (over task A's group; every rank holds
/// whole rows: grid extent 1 in dimension 1) holds the input, `cols` (over task B's disjoint
/// group; whole columns: grid extent 1 in dimension 0) receives the spectrum. c2c: both hold
/// std::complex<Real> of one shape; r2c: `rows` holds Real, `cols` the half spectrum (the last
/// dimension n/2 + 1). Every rank of either task makes the plan. Task A calls send() per
/// dataset, task B receive() per dataset, in the same order. A keeps at most two datasets in
/// flight (its rows are transformed into one of two work buffers, which is sent from in place).
template <class Real>
class fft_two_task {
  static_assert(std::is_same_v<Real, double> || std::is_same_v<Real, float>,
                "cairn::fft_two_task: Real is double or float");

 public:
  /// Complex element type.
  using complex = std::complex<Real>;

  /// Plans both halves. Collective over both tasks' ranks: one allgather compares what each
  /// passes (element type, kind, both layouts and groups, transfer options), and where any
  /// rank differs every rank throws cairn::error naming the first difference. Also throws on
  /// groups that overlap, a caller in neither, rows or columns that are not whole, or shapes
  /// that do not match `kind`.
  fft_two_task(const layout<2>& rows, const layout<2>& cols, fft_kind kind = fft_kind::c2c,
               const fft_options& opts = {});
  /// Waits for the datasets still in flight (task A).
  ~fft_two_task();
  /// Moves the plan (the moved-from plan refuses to run).
  fft_two_task(fft_two_task&&) noexcept;
  /// Moves the plan (the moved-from plan refuses to run).
  fft_two_task& operator=(fft_two_task&&) noexcept;
  fft_two_task(const fft_two_task&) = delete;
  fft_two_task& operator=(const fft_two_task&) = delete;

  /// Task A, c2c: transforms the rows of `in` (layout `rows`) and starts sending them to task
  /// B. `in` may be reused as soon as this returns.
  void send(const darray<complex, 2>& in);
  /// Task A, r2c: the same for real input.
  void send(const darray<Real, 2>& in);
  /// Task B: receives the next dataset and transforms its columns into `out` (layout `cols`).
  void receive(darray<complex, 2>& out);
  /// Task A: waits until every dataset sent has left this rank.
  void flush();

  /// The rows' layout (task A).
  [[nodiscard]] const layout<2>& rows_layout() const noexcept { return rows_; }
  /// The columns' layout (task B).
  [[nodiscard]] const layout<2>& cols_layout() const noexcept { return cols_; }
  /// This rank's part: its task, the transforms and the redistribution between the tasks.
  friend std::ostream& operator<<(std::ostream& os, const fft_two_task& p) { return p.print(os); }

 private:
  std::ostream& print(std::ostream& os) const;
  layout<2> rows_;
  layout<2> cols_;
  std::unique_ptr<detail::two_task_engine<Real>> engine_;
};

}  // namespace cairn
