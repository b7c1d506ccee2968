#pragma once
/// \file
/// Reduction operations for collectives: the predefined ones and user callables.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
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

namespace detail {
/// True when `Op::commutative` is a constant expression that is true (cairn's operations).
template <class Op>
consteval bool static_commutative() {
  if constexpr (requires { std::bool_constant<static_cast<bool>(Op::commutative)>{}; })
    return static_cast<bool>(Op::commutative);
  else
    return false;
}
}  // namespace detail

/// Whether the operation type `Op` is commutative, as a type: cairn's predefined operations
/// (their `commutative` member), the standard function objects std::plus, std::multiplies,
/// std::bit_and, std::bit_or, std::bit_xor, std::logical_and and std::logical_or (typed or
/// `<>`), and std::ranges::min and std::ranges::max. Specialize it for your own stateless
/// operations; an operation whose commutativity is known only at run time says so with a
/// `commutative` data member (cairn::op). The collectives read it to choose their algorithm
/// (the rings need it) and to decide whether operands may be combined out of rank order.
template <class Op>
struct is_commutative : std::bool_constant<detail::static_commutative<Op>()> {};
/// std::plus (a + b) is commutative.
template <class T>
struct is_commutative<std::plus<T>> : std::true_type {};
/// std::multiplies (a * b) is commutative.
template <class T>
struct is_commutative<std::multiplies<T>> : std::true_type {};
/// std::bit_and (a & b) is commutative.
template <class T>
struct is_commutative<std::bit_and<T>> : std::true_type {};
/// std::bit_or (a | b) is commutative.
template <class T>
struct is_commutative<std::bit_or<T>> : std::true_type {};
/// std::bit_xor (a ^ b) is commutative.
template <class T>
struct is_commutative<std::bit_xor<T>> : std::true_type {};
/// std::logical_and (a && b) is commutative.
template <class T>
struct is_commutative<std::logical_and<T>> : std::true_type {};
/// std::logical_or (a || b) is commutative.
template <class T>
struct is_commutative<std::logical_or<T>> : std::true_type {};
/// std::ranges::min is commutative.
template <>
struct is_commutative<std::remove_cv_t<decltype(std::ranges::min)>> : std::true_type {};
/// std::ranges::max is commutative.
template <>
struct is_commutative<std::remove_cv_t<decltype(std::ranges::max)>> : std::true_type {};
/// is_commutative<Op>::value (cv and references ignored).
template <class Op>
inline constexpr bool is_commutative_v = is_commutative<std::remove_cvref_t<Op>>::value;

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
