#pragma once
// What the FFT layer's calls check of the caller's arrays, and the names its messages use.

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cairn/array/detail/layout_desc.hpp"
#include "cairn/fft/fft.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/group.hpp"

namespace cairn::detail {

/// "c2c" or "r2c".
inline const char* fft_kind_name(fft_kind k) { return k == fft_kind::r2c ? "r2c" : "c2c"; }

/// What `os << x` prints (layouts and shapes in error messages).
template <class T>
std::string fft_text(const T& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

/// Throws cairn::error (naming `call` and the caller's rank) unless the plan is there (not moved
/// from), the call's kind `asked` is the plan's (`noun` names what is transformed; a null `noun`
/// checks no kind) and `a` (named `which`) has the plan's layout `want`.
template <class A, int N>
void check_fft_array(const char* call, const fft_kind* plan_kind, fft_kind asked, const char* noun,
                     const A& a, const char* which, const layout<N>& want) {
  const int me = caller_rank(a.get_layout().group());
  if (!plan_kind) fail(call, me, "the plan was moved from");
  if (noun && *plan_kind != asked)
    fail(call, me, "a ", fft_kind_name(asked), " ", noun, " on a ", fft_kind_name(*plan_kind),
         " plan");
  if (!(a.get_layout() == want))
    fail(call, me, "the ", which, " has the layout ", fft_text(a.get_layout()), ", the plan's is ",
         fft_text(want));
}

/// The numbers that decide a plan's steps, each with the name an error message gives it.
/// Every rank of the plan must hold the same: a rank that planned another transform would take
/// other steps and wait for the others forever.
class plan_facts {
 public:
  /// Adds one fact.
  void add(std::string name, std::int64_t value) {
    values_.push_back(value);
    names_.push_back(std::move(name));
  }
  /// Adds a layout's dimensions (extent, grid extent, block, replicated), `which` naming it.
  /// Always three dimensions (a 2-D layout's third is zeros), so that ranks that disagree on
  /// the dimensions still exchange as many facts.
  void add_layout(const std::string& which, const layout_desc& d);
  /// Adds the transfer options that shape the steps (chunks, direct).
  void add_transfer(const transfer_options& t);
  /// Throws cairn::error on every rank of `g` (naming `call` and world rank `me`) unless every
  /// rank holds the same facts, naming the first that differs from group rank 0: one allgather
  /// (none on one rank).
  void check(const char* call, int me, cairn::group g) const;

 private:
  std::vector<std::int64_t> values_;
  std::vector<std::string> names_;
};

/// fft_plan's facts checked across `g` (plan_facts::check): the element size, kind, both
/// layouts and the options that shape the steps.
void check_fft_agreement(const char* call, int me, const cairn::group& g, std::size_t element_bytes,
                         fft_kind kind, const layout_desc& in, const layout_desc& out,
                         const fft_options& opts);

}  // namespace cairn::detail
