#pragma once
// The predefined reduction operations of the Python API (cairn.SUM, ...) and their dispatch to
// cairn's operations by element type.
#include <complex>
#include <string>
#include <type_traits>

#include "buffer.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/runtime/error.hpp"

namespace cairn_python {

/// cairn.SUM, cairn.PROD, ...: the operations a buffer reduction takes (as MPI's predefined
/// ones).
enum class op_kind { sum, prod, min, max, land, lor, lxor, band, bor, bxor };

/// "SUM", "PROD", ...
const char* to_string(op_kind k) noexcept;

template <class T>
inline constexpr bool is_complex_v = false;
template <class T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

/// Calls `f(T{}, Op{})` with the C++ element type of `e` and cairn's operation for `k`; throws
/// cairn::error naming `call` and `rank` where the operation is not defined on the type (as
/// MPI: no MIN on complex numbers, no bitwise operation on floats, only logical ones and
/// MIN/MAX on bool).
template <class F>
void with_operation(op_kind k, element e, const char* call, int rank, F&& f) {
  bool done = false;
  with_element(e, [&]<class T>() {
    constexpr bool integer = std::is_integral_v<T>;
    constexpr bool complex = is_complex_v<T>;
    const bool boolean = e == element::boolean;
    switch (k) {
      case op_kind::sum:
        if (!boolean) f(T{}, cairn::plus{}), done = true;
        break;
      case op_kind::prod:
        if (!boolean) f(T{}, cairn::multiplies{}), done = true;
        break;
      case op_kind::min:
        if constexpr (!complex) f(T{}, cairn::min{}), done = true;
        break;
      case op_kind::max:
        if constexpr (!complex) f(T{}, cairn::max{}), done = true;
        break;
      case op_kind::land:
        if constexpr (integer) f(T{}, cairn::logical_and{}), done = true;
        break;
      case op_kind::lor:
        if constexpr (integer) f(T{}, cairn::logical_or{}), done = true;
        break;
      case op_kind::lxor:
        if constexpr (integer) f(T{}, cairn::logical_xor{}), done = true;
        break;
      case op_kind::band:
        if constexpr (integer) f(T{}, cairn::bit_and{}), done = true;
        break;
      case op_kind::bor:
        if constexpr (integer) f(T{}, cairn::bit_or{}), done = true;
        break;
      case op_kind::bxor:
        if constexpr (integer) f(T{}, cairn::bit_xor{}), done = true;
        break;
    }
  });
  if (!done)
    throw cairn::error(std::string("cairn.") + call + ": rank " + std::to_string(rank) + ": " +
                       to_string(k) + " is not defined on " + to_string(e) + " elements");
}

}  // namespace cairn_python
