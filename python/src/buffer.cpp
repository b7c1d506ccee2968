#include "buffer.hpp"

#include <algorithm>
#include <cstring>

#include "cairn/runtime/error.hpp"

#if CAIRN_PYTHON_HAVE_NUMPY
// The numpy C API's table is this file's alone (no other file of the module includes numpy).
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL cairn_python_numpy_api
#include <numpy/arrayobject.h>
#endif

namespace cairn_python {
namespace {

// The element type of a struct format of one item ("d", "<i4" is not a struct format; numpy
// exports "d", "l", "Zd", "?", ...), sized by `itemsize`: the integer codes differ between
// platforms, their sizes do not.
element element_of(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return itemsize == 1 ? element::uint8 : element::other;  // bytes
  if (*format == '@' || *format == '=' || *format == '<') ++format;  // native little-endian
  const bool complex = *format == 'Z';
  if (complex) ++format;
  if (format[0] == '\0' || format[1] != '\0') return element::other;
  const char c = *format;
  if (complex) {
    if (c == 'f' && itemsize == 8) return element::complex64;
    if (c == 'd' && itemsize == 16) return element::complex128;
    return element::other;
  }
  if (c == 'f' && itemsize == 4) return element::float32;
  if (c == 'd' && itemsize == 8) return element::float64;
  if (c == '?' && itemsize == 1) return element::boolean;
  const bool is_signed = c == 'b' || c == 'h' || c == 'i' || c == 'l' || c == 'q' || c == 'n';
  const bool is_unsigned =
      c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q' || c == 'N' || c == 'c';
  if (!is_signed && !is_unsigned) return element::other;
  switch (itemsize) {
    case 1: return is_signed ? element::int8 : element::uint8;
    case 2: return is_signed ? element::int16 : element::uint16;
    case 4: return is_signed ? element::int32 : element::uint32;
    case 8: return is_signed ? element::int64 : element::uint64;
    default: return element::other;
  }
}

#if CAIRN_PYTHON_HAVE_NUMPY
// numpy.ndarray once numpy's C API is loaded; null before the first array arrives (numpy is
// imported then) and if loading it failed (`numpy_failed`). Read and written with the GIL held.
PyTypeObject* ndarray_type = nullptr;
bool numpy_failed = false;

PyTypeObject* ndarray_of(PyObject* obj) noexcept {
  if (ndarray_type == nullptr && !numpy_failed &&
      std::strcmp(Py_TYPE(obj)->tp_name, "numpy.ndarray") == 0) {
    if (_import_array() == 0) {
      ndarray_type = &PyArray_Type;
    } else {
      PyErr_Clear();
      numpy_failed = true;
    }
  }
  return ndarray_type;
}

// The struct format of one native item that numpy exports for dtype kind `kind` with items of
// `itemsize` bytes, for element_of to read (it sizes the integer codes by itemsize); null for a
// kind other than bool, integers, floats and complex.
const char* numpy_format(char kind, Py_ssize_t itemsize) {
  switch (kind) {
    case 'b': return "?";
    case 'i': return "q";
    case 'u': return "Q";
    case 'f': return itemsize == 4 ? "f" : itemsize == 8 ? "d" : "g";
    case 'c': return itemsize == 8 ? "Zf" : itemsize == 16 ? "Zd" : "Zg";
    default: return nullptr;
  }
}
#endif

// The pending Python exception's text, cleared.
std::string taken_error() {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* value = PyErr_GetRaisedException();
#else
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  Py_XDECREF(type);
  Py_XDECREF(trace);
#endif
  std::string text = "no reason given";
  if (PyObject* s = value ? PyObject_Str(value) : nullptr) {
    if (const char* c = PyUnicode_AsUTF8(s)) text = c;
    Py_DECREF(s);
  }
  Py_XDECREF(value);
  PyErr_Clear();  // of PyObject_Str or PyUnicode_AsUTF8, if they failed
  return text;
}

// True if `obj` exports a buffer with `flags` (released at once).
bool exports(PyObject* obj, int flags) {
  Py_buffer probe;
  if (PyObject_GetBuffer(obj, &probe, flags) != 0) {
    PyErr_Clear();
    return false;
  }
  PyBuffer_Release(&probe);
  return true;
}

[[noreturn]] void refuse(const char* call, int rank, const char* what, const std::string& why) {
  throw cairn::error(std::string("cairn.") + call + ": rank " + std::to_string(rank) + ": " + what +
                     " " + why);
}

}  // namespace

const char* to_string(element e) noexcept {
  switch (e) {
    case element::int8: return "int8";
    case element::uint8: return "uint8";
    case element::int16: return "int16";
    case element::uint16: return "uint16";
    case element::int32: return "int32";
    case element::uint32: return "uint32";
    case element::int64: return "int64";
    case element::uint64: return "uint64";
    case element::float32: return "float32";
    case element::float64: return "float64";
    case element::complex64: return "complex64";
    case element::complex128: return "complex128";
    case element::boolean: return "bool";
    case element::other: return "other";
  }
  return "?";
}

bool buffer::from_numpy([[maybe_unused]] PyObject* obj, [[maybe_unused]] bool writable) noexcept {
#if CAIRN_PYTHON_HAVE_NUMPY
  if (Py_TYPE(obj) != ndarray_of(obj)) return false;
  auto* a = reinterpret_cast<PyArrayObject*>(obj);
  const PyArray_Descr* dtype = PyArray_DESCR(a);
  const Py_ssize_t itemsize = std::max<Py_ssize_t>(1, PyArray_ITEMSIZE(a));
  // Numbers and bool only: other dtypes (strings, records, objects, and datetimes, which numpy
  // does not export) keep the buffer protocol's answers.
  const char* format = numpy_format(dtype->kind, itemsize);
  if (format == nullptr) return false;
  if (!PyArray_IS_C_CONTIGUOUS(a) || (writable && !PyArray_ISWRITEABLE(a))) return false;
  view_ = Py_buffer{};
  view_.buf = PyArray_DATA(a);
  view_.obj = obj;
  Py_INCREF(obj);  // as an export's reference: the array stays alive and cannot be resized
  view_.len = PyArray_NBYTES(a);
  view_.itemsize = itemsize;
  view_.readonly = !PyArray_ISWRITEABLE(a);
  // Byte-swapped items are exported as ">d" and so on, which element_of does not reduce.
  type_ = dtype->byteorder == '>' ? element::other : element_of(format, itemsize);
  array_ = true;
  return true;
#else
  return false;
#endif
}

buffer::buffer(PyObject* obj, bool writable, const char* call, int rank, const char* what) {
  if (from_numpy(obj, writable)) return;
  if (!PyObject_CheckBuffer(obj))
    refuse(call, rank, what,
           std::string("is a ") + Py_TYPE(obj)->tp_name +
               ", which exports no buffer (a numpy array, bytes, bytearray or memoryview does)");
  const int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, &view_, flags) != 0) {
    const std::string why = taken_error();
    // Tell read-only from non-contiguous from no export at all: ask again for less.
    const bool contiguous = exports(obj, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS);
    if (!contiguous && !exports(obj, PyBUF_FORMAT | PyBUF_STRIDES))
      refuse(call, rank, what,
             std::string("is a ") + Py_TYPE(obj)->tp_name + " that exports no buffer: " + why);
    refuse(call, rank, what,
           contiguous && writable ? "is read-only, and this call writes to it"
                                  : "is not C-contiguous (copy it with numpy.ascontiguousarray)");
  }
  held_ = true;
  if (view_.itemsize <= 0) view_.itemsize = 1;
  type_ = element_of(view_.format, view_.itemsize);
}

buffer& buffer::operator=(buffer&& other) noexcept {
  if (this != &other) {
    release();
    view_ = other.view_;
    held_ = std::exchange(other.held_, false);
    array_ = std::exchange(other.array_, false);
    type_ = other.type_;
  }
  return *this;
}

void buffer::release() noexcept {
  if (held_) PyBuffer_Release(&view_);
  if (array_) Py_DECREF(view_.obj);
  held_ = array_ = false;
}

std::string buffer::describe() const {
  return std::string(to_string(type_)) + "[" + std::to_string(count()) + "]";
}

}  // namespace cairn_python
