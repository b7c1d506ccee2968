#pragma once
// Buffers of Python objects (the buffer protocol: numpy arrays, bytes, bytearray, memoryview)
// as typed spans for cairn's buffer calls, without copies.
#include <Python.h>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace cairn_python {

/// The element types a reduction can combine, read from a buffer's struct format.
enum class element {
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float32,
  float64,
  complex64,
  complex128,
  boolean,
  other,  ///< any other format: moved as bytes, never reduced
};

/// Name of an element type as numpy spells it ("float64", "int32", ...).
const char* to_string(element e) noexcept;

/// A view of a Python object's memory (PyObject_GetBuffer), released when destroyed. Holding it
/// keeps the exporter alive and, for numpy arrays, stops them from being resized. Create and
/// destroy only while holding the GIL.
class buffer {
 public:
  buffer() = default;
  /// The C-contiguous memory of `obj` (writable when `writable`); throws cairn::error naming
  /// `call`, `rank` and `what` ("sendbuf", ...) when `obj` exports none, or not contiguous, or
  /// read-only where writing is asked for.
  buffer(PyObject* obj, bool writable, const char* call, int rank, const char* what);
  buffer(buffer&& other) noexcept
      : view_(other.view_),
        held_(std::exchange(other.held_, false)),
        array_(std::exchange(other.array_, false)),
        type_(other.type_) {}
  buffer& operator=(buffer&& other) noexcept;
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { release(); }

  /// Releases the view now (with the GIL held).
  void release() noexcept;
  /// First byte.
  [[nodiscard]] void* data() const noexcept { return view_.buf; }
  /// Size in bytes.
  [[nodiscard]] std::size_t bytes() const noexcept { return static_cast<std::size_t>(view_.len); }
  /// Bytes per element.
  [[nodiscard]] std::size_t itemsize() const noexcept {
    return static_cast<std::size_t>(view_.itemsize);
  }
  /// Number of elements.
  [[nodiscard]] std::size_t count() const noexcept { return bytes() / itemsize(); }
  /// The element type.
  [[nodiscard]] element type() const noexcept { return type_; }
  /// "float64[1024]": for error messages.
  [[nodiscard]] std::string describe() const;
  /// The elements as a span of T (the caller has checked the type).
  template <class T>
  [[nodiscard]] std::span<T> as() const noexcept {
    return {static_cast<T*>(view_.buf), bytes() / sizeof(T)};
  }

 private:
  // Fills the view from a numpy array's own fields, without PyObject_GetBuffer (numpy builds,
  // compares and frees a format string and shape in each export: about 100 ns a call, twice per
  // message on the threads engine's critical path); false if `obj` is not an exact, contiguous
  // numpy array (writable when asked), which the buffer protocol then handles as any other.
  bool from_numpy(PyObject* obj, bool writable) noexcept;

  Py_buffer view_{};
  bool held_ = false;   ///< view_ came from PyObject_GetBuffer
  bool array_ = false;  ///< view_ came from from_numpy: view_.obj holds a reference
  element type_ = element::other;
};

/// Calls `f.template operator()<T>()` with the C++ type of `e` (bool as std::uint8_t); returns
/// false for element::other.
template <class F>
bool with_element(element e, F&& f) {
  switch (e) {
    case element::int8: f.template operator()<std::int8_t>(); return true;
    case element::uint8: f.template operator()<std::uint8_t>(); return true;
    case element::int16: f.template operator()<std::int16_t>(); return true;
    case element::uint16: f.template operator()<std::uint16_t>(); return true;
    case element::int32: f.template operator()<std::int32_t>(); return true;
    case element::uint32: f.template operator()<std::uint32_t>(); return true;
    case element::int64: f.template operator()<std::int64_t>(); return true;
    case element::uint64: f.template operator()<std::uint64_t>(); return true;
    case element::float32: f.template operator()<float>(); return true;
    case element::float64: f.template operator()<double>(); return true;
    case element::complex64: f.template operator()<std::complex<float>>(); return true;
    case element::complex128: f.template operator()<std::complex<double>>(); return true;
    case element::boolean: f.template operator()<std::uint8_t>(); return true;
    case element::other: return false;
  }
  return false;
}

/// The buffer of `obj` as buffer(obj, ...) makes it, or none where `obj` is None.
inline std::optional<buffer> buffer_or_none(PyObject* obj, bool writable, const char* call,
                                            int rank, const char* what) {
  if (obj == Py_None) return std::nullopt;
  return std::optional<buffer>(std::in_place, obj, writable, call, rank, what);
}

}  // namespace cairn_python
