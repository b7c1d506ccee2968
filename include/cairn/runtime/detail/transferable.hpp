#pragma once
/// \file
/// Internal: what cairn moves as raw bytes (the concepts of the typed calls), and the checked
/// conversion of element counts to bytes.

#include <cstddef>
#include <cstdint>
#include <ranges>
#include <type_traits>

namespace cairn::detail {
/// Element types cairn moves as raw bytes.
template <class T>
concept transferable = std::is_trivially_copyable_v<T> && !std::is_const_v<T>;

/// A contiguous range of transferable elements (vector, array, span, string, ...).
template <class R>
concept contiguous_data = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    transferable<std::ranges::range_value_t<R>>;

/// A contiguous range whose elements may be written.
template <class R>
concept writable_data = contiguous_data<R> &&
    !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

/// A contiguous range a non-blocking call may read after it returned: an lvalue, a span or a
/// view (std::ranges::borrowed_range). A temporary container is not: it is destroyed at the
/// end of the statement, while the request still reads it.
template <class R>
concept lasting_input = contiguous_data<R> && std::ranges::borrowed_range<R>;

/// A range a non-blocking call may write after it returned (see lasting_input).
template <class R>
concept lasting_output = writable_data<R> && std::ranges::borrowed_range<R>;

/// Byte size of `count` elements of `elem` bytes; throws on negative or overflowing counts.
std::size_t checked_bytes(const char* call, int rank, std::int64_t count, std::size_t elem);
std::size_t checked_bytes(const char* call, int rank, std::size_t count, std::size_t elem);
}  // namespace cairn::detail
