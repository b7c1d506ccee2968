#pragma once
/// \file
/// Reduction operations for collectives: the predefined ones and user callables.

#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace cairn {

/// a + b
struct plus {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
/// a * b
struct multiplies {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a * b;
  }
};
/// The smaller of a and b.
struct min {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
};
/// The larger of a and b.
struct max {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
};
/// a && b
struct logical_and {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return static_cast<T>(a && b);
  }
};
/// a || b
struct logical_or {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return static_cast<T>(a || b);
  }
};
/// a != b as truth values
struct logical_xor {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return static_cast<T>(!a != !b);
  }
};
/// a & b
struct bit_and {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a & b;
  }
};
/// a | b
struct bit_or {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a | b;
  }
};
/// a ^ b
struct bit_xor {
  static constexpr bool commutative = true;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a ^ b;
  }
};

/// A value with the rank (or any index) it came from, for minloc/maxloc.
template <class T>
struct value_index {
  T value;
  int index;
  friend bool operator==(const value_index&, const value_index&) = default;
};
/// Smallest value; on ties the smallest index (MPI_MINLOC).
struct minloc {
  static constexpr bool commutative = true;
  template <class T>
  value_index<T> operator()(const value_index<T>& a, const value_index<T>& b) const {
    if (b.value < a.value || (!(a.value < b.value) && b.index < a.index)) return b;
    return a;
  }
};
/// Largest value; on ties the smallest index (MPI_MAXLOC).
struct maxloc {
  static constexpr bool commutative = true;
  template <class T>
  value_index<T> operator()(const value_index<T>& a, const value_index<T>& b) const {
    if (a.value < b.value || (!(b.value < a.value) && b.index < a.index)) return b;
    return a;
  }
};

/// A user operation: `f(a, b)` combines two elements; `commutative` says whether the order of
/// operands may change. Associativity is assumed (as in MPI). Operands are combined in rank
/// order when `commutative` is false.
template <class F>
struct user_op {
  F f;
  bool commutative = false;
  template <class T>
  T operator()(const T& a, const T& b) const {
    return f(a, b);
  }
};
/// Makes a user operation: `cairn::op([](auto a, auto b) { ... }, /*commutative=*/true)`.
template <class F>
user_op<F> op(F f, bool commutative) {
  return user_op<F>{std::move(f), commutative};
}

}  // namespace cairn
