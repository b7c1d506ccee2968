// fft_two_task: task A's row transforms into two alternating work buffers, each sent on by a
// redistribution between the two groups; task B's receive and column transforms in place.

#include "cairn/fft/two_task.hpp"

#include <array>
#include <chrono>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cairn/array/detail/plan.hpp"
#include "cairn/array/detail/transfer.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/world.hpp"
#include "fft_checks.hpp"
#include "local_transform.hpp"

namespace cairn {

namespace detail {

namespace {

// The two tasks' redistributions: apart from other array transfers between the same groups.
constexpr std::uint64_t two_task_tag_key = 0xF7F7'0002;

// Every rank of both tasks plans the same pipeline: a rank whose layouts, kind or transfer
// options differ would wait in another redistribution forever. Compared over both tasks'
// ranks before the checks of the layouts, which then fail alike everywhere.
template <class Real>
void check_two_task_agreement(const char* call, int me, const layout<2>& rows,
                              const layout<2>& cols, fft_kind kind, const fft_options& opts) {
  std::vector<int> members = rows.group().members();
  const std::vector<int>& b = cols.group().members();
  members.insert(members.end(), b.begin(), b.end());
  const cairn::group both = rows.group().world().group(std::move(members));
  if (both.size() <= 1) return;
  plan_facts f;
  f.add("real element bytes", sizeof(Real));
  f.add("kind (0 c2c, 1 r2c)", static_cast<std::int64_t>(kind));
  f.add("task A's ranks", rows.group().size());
  f.add("task A's member hash", static_cast<std::int64_t>(rows.group().id()));
  f.add("task B's member hash", static_cast<std::int64_t>(cols.group().id()));
  f.add_layout("rows", rows.desc());
  f.add_layout("columns", cols.desc());
  f.add("rigor (0 estimate, 1 measure, 2 patient)", static_cast<std::int64_t>(opts.rigor));
  f.add_transfer(opts.transfer);
  f.check(call, me, both);
}

}  // namespace

template <class Real>
class two_task_engine {
 public:
  two_task_engine(const char* call, const layout<2>& rows, const layout<2>& cols, fft_kind kind,
                  const fft_options& opts)
      : kind_(kind), transfer_(opts.transfer) {
    const bool in_a = rows.group().rank() >= 0;
    me_ = in_a ? caller_rank(rows.group()) : caller_rank(cols.group());
    ctx_ = context_of(rows.group(), cols.group(), call);
    transfer_.steps = opts.steps ? &opts.steps->transfer : nullptr;
    transfer_.on_slab = nullptr;
    steps_ = opts.steps;
    check_chunks(call, me_, transfer_.chunks);
    // The rows in the complex shape (the half spectrum for r2c): what A sends.
    const auto cs = cols.shape();
    const layout_desc& rd = rows.desc();
    const std::array<dim_dist, 2> dists{rd.dims[0].d, rd.dims[1].d};
    const std::array<int, 2> grid{rd.dims[0].g, rd.dims[1].g};
    const layout_desc rows_complex =
        make_layout_desc(call, me_, rows.group().size(), 2, cs.data(), dists.data(), grid.data());
    plan_ = cached_plan(call, me_, 2 * sizeof(Real), rows_complex, rows.group().members(),
                        cols.desc(), cols.group().members(), transfer_.chunks);
    const unsigned flags = rigor_flags(opts.rigor);
    if (in_a) {
      sender_ = true;
      const auto in = rows.local_shape();
      auto out = in;
      out[1] = cs[1];
      rows_fft_ = local_transform<Real>(call, me_, "the rows",
                                        kind == fft_kind::r2c ? local_kind::r2c : local_kind::c2c,
                                        FFTW_FORWARD, 2, in.data(), out.data(), {1}, false, flags);
      work_bytes_ = static_cast<std::size_t>(out[0] * out[1]) * 2 * sizeof(Real);
      for (auto& w : work_) w = fftw_buffer<Real>(work_bytes_);
    } else {
      const auto s = cols.local_shape();
      cols_fft_ = local_transform<Real>(call, me_, "the columns", local_kind::c2c, FFTW_FORWARD, 2,
                                        s.data(), s.data(), {0}, true, flags);
    }
  }
  ~two_task_engine() {
    for (request& r : pending_) r = request();  // waited for: the buffers are still alive
  }
  two_task_engine(const two_task_engine&) = delete;
  two_task_engine& operator=(const two_task_engine&) = delete;

  void send(const char* call, const void* in) {
    if (!sender_) fail(call, me_, "this rank is in task B (the columns): it receives");
    const std::size_t k = next_ % 2;
    if (!pending_[k].complete()) pending_[k].wait();  // dataset next_ - 2 has left
    timed(&fft_steps::local_fft_s, [&] { rows_fft_.execute(in, work_[k].get()); });
    pending_[k] =
        start_plan(*ctx_, call, plan_, work_[k].get(), nullptr, two_task_tag_key, transfer_);
    ++next_;
    if (steps_) ++steps_->transforms;
  }

  void receive(const char* call, void* out) {
    if (sender_) fail(call, me_, "this rank is in task A (the rows): it sends");
    timed(&fft_steps::redistribute_s, [&] {
      start_plan(*ctx_, call, plan_, nullptr, out, two_task_tag_key, transfer_).wait();
    });
    timed(&fft_steps::local_fft_s, [&] { cols_fft_.execute(out, out); });
    if (steps_) ++steps_->transforms;
  }

  void flush() {
    for (request& r : pending_)
      if (!r.complete()) r.wait();
  }

  [[nodiscard]] const fft_kind& kind() const noexcept { return kind_; }
  [[nodiscard]] bool sender() const noexcept { return sender_; }
  [[nodiscard]] int rank() const noexcept { return me_; }

  std::ostream& print(std::ostream& os) const {
    os << "fft two tasks " << fft_kind_name(kind_) << ", rank " << me_
       << (sender_ ? " in task A: rows transformed, then sent: "
                   : " in task B: received, then "
                     "columns transformed: ")
       << (sender_ ? plan_->sends.size() : plan_->recvs.size()) << " peers, "
       << (sender_ ? plan_->send_elements() : plan_->recv_elements()) << " elements";
    return os;
  }

 private:
  template <class F>
  void timed(double fft_steps::*field, F&& f) {
    if (!steps_) return f();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    steps_->*field += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  fft_kind kind_;
  transfer_options transfer_;
  fft_steps* steps_ = nullptr;
  rank_context* ctx_ = nullptr;
  int me_ = -1;
  bool sender_ = false;
  std::shared_ptr<const redistribution_plan> plan_;
  local_transform<Real> rows_fft_, cols_fft_;
  std::size_t work_bytes_ = 0;
  std::array<fftw_buffer<Real>, 2> work_;
  std::array<request, 2> pending_;
  std::uint64_t next_ = 0;
};

}  // namespace detail

template <class Real>
fft_two_task<Real>::fft_two_task(const layout<2>& rows, const layout<2>& cols, fft_kind kind,
                                 const fft_options& opts)
    : rows_(rows), cols_(cols) {
  const char* call = "fft_two_task";
  const bool in_a = rows.group().rank() >= 0, in_b = cols.group().rank() >= 0;
  const int me = in_a   ? detail::caller_rank(rows.group())
                 : in_b ? detail::caller_rank(cols.group())
                        : -1;
  if (!in_a && !in_b) detail::fail(call, me, "this rank is in neither task");
  for (const int a : rows.group().members())
    for (const int b : cols.group().members())
      if (a == b)
        detail::fail(call, me, "world rank ", a, " is in both tasks (the groups must be disjoint)");
  detail::check_two_task_agreement<Real>(call, me, rows, cols, kind, opts);
  if (rows.grid()[1] != 1)
    detail::fail(call, me, "task A's layout ", detail::fft_text(rows),
                 " splits the rows (its grid must be 1 in dimension 1)");
  if (cols.grid()[0] != 1)
    detail::fail(call, me, "task B's layout ", detail::fft_text(cols),
                 " splits the columns (its grid must be 1 in dimension 0)");
  auto expect = rows.shape();
  if (kind == fft_kind::r2c) expect[1] = expect[1] / 2 + 1;
  if (cols.shape() != expect)
    detail::fail(call, me, "a ", detail::fft_kind_name(kind), " transform of ",
                 detail::fft_text(rows), " needs columns of shape [", expect[0], " x ", expect[1],
                 "], not ", detail::fft_text(cols));
  for (const auto n : rows.shape())
    if (n < 1) detail::fail(call, me, "extent ", n, " (an FFT needs at least one element)");
  engine_ = std::make_unique<detail::two_task_engine<Real>>(call, rows, cols, kind, opts);
}

template <class Real>
fft_two_task<Real>::~fft_two_task() = default;
template <class Real>
fft_two_task<Real>::fft_two_task(fft_two_task&&) noexcept = default;
template <class Real>
fft_two_task<Real>& fft_two_task<Real>::operator=(fft_two_task&&) noexcept = default;

template <class Real>
void fft_two_task<Real>::send(const darray<complex, 2>& in) {
  const char* call = "fft_two_task::send";
  detail::check_fft_array(call, engine_ ? &engine_->kind() : nullptr, fft_kind::c2c, "dataset", in,
                          "array", rows_);
  engine_->send(call, in.data());
}

template <class Real>
void fft_two_task<Real>::send(const darray<Real, 2>& in) {
  const char* call = "fft_two_task::send";
  detail::check_fft_array(call, engine_ ? &engine_->kind() : nullptr, fft_kind::r2c, "dataset", in,
                          "array", rows_);
  engine_->send(call, in.data());
}

template <class Real>
void fft_two_task<Real>::receive(darray<complex, 2>& out) {
  const char* call = "fft_two_task::receive";
  // The spectrum is complex whatever the kind: no kind to check.
  detail::check_fft_array(call, engine_ ? &engine_->kind() : nullptr, fft_kind::c2c, nullptr, out,
                          "array", cols_);
  engine_->receive(call, out.data());
}

template <class Real>
void fft_two_task<Real>::flush() {
  if (engine_) engine_->flush();
}

template <class Real>
std::ostream& fft_two_task<Real>::print(std::ostream& os) const {
  if (!engine_) return os << "fft two tasks (moved from)";
  return engine_->print(os);
}

template class fft_two_task<double>;
template class fft_two_task<float>;

}  // namespace cairn
