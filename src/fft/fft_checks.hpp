#pragma once
// What the FFT layer's calls check of the caller's arrays, and the names its messages use.

#include <sstream>
#include <string>

#include "cairn/fft/fft.hpp"
#include "cairn/runtime/detail/fail.hpp"

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

}  // namespace cairn::detail
