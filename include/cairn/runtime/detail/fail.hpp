#pragma once
/// \file
/// Internal: how cairn raises cairn::error (detail::fail) and the exception that releases
/// ranks after another rank failed. The message is built without iostreams (<charconv> and
/// std::string), printing every part as `std::ostream <<` would with default flags.

#include <charconv>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "cairn/runtime/error.hpp"

namespace cairn {
namespace detail {

/// Appends text.
inline void append_part(std::string& s, std::string_view v) { s.append(v); }
/// Appends a C string.
inline void append_part(std::string& s, const char* v) { s.append(v); }
/// The character types: iostreams print them as characters.
template <class T>
concept char_like =
    std::is_same_v<T, char> || std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char>;
/// The integer types iostreams print in decimal.
template <class T>
concept decimal_integer = std::is_integral_v<T> && !std::is_same_v<T, bool> && !char_like<T>;

/// Appends a character.
template <char_like T>
void append_part(std::string& s, T c) {
  s.push_back(static_cast<char>(c));
}
/// Appends a truth value as 1 or 0 (iostreams without boolalpha).
inline void append_part(std::string& s, bool b) { s.push_back(b ? '1' : '0'); }
/// Appends an integer in decimal.
template <decimal_integer T>
void append_part(std::string& s, T v) {
  char buf[48];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}
/// Pointers other than C strings are not message parts (they would print as 1).
template <class T>
requires(!char_like<std::remove_cv_t<T>>) void append_part(std::string& s, T* p) = delete;
/// Appends a floating-point number as iostreams' default (%g, 6 significant digits).
template <class T>
requires std::is_floating_point_v<T>
void append_part(std::string& s, T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  s.append(buf, r.ptr);
}
/// Appends an unscoped enumerator as its value (as iostreams do).
template <class T>
requires std::is_enum_v<T> && std::is_convertible_v<T, std::underlying_type_t<T>>
void append_part(std::string& s, T v) { append_part(s, static_cast<std::underlying_type_t<T>>(v)); }

/// Builds "cairn::<call>: rank R: <parts...>" and throws it as cairn::error.
template <class... Parts>
[[noreturn]] void fail(const char* call, int rank, Parts&&... parts) {
  std::string s = "cairn::";
  s += call;
  s += ": rank ";
  append_part(s, rank);
  s += ": ";
  (append_part(s, std::forward<Parts>(parts)), ...);
  throw error(s);
}

/// Thrown inside ranks that are released because another rank failed; never seen by launch's
/// caller. Deliberately not a cairn::error, so `catch (cairn::error&)` in user code does not
/// swallow the end of the run.
struct run_aborted {
  const char* what() const noexcept { return "cairn: run aborted by another rank"; }
};

}  // namespace detail
}  // namespace cairn
