#pragma once
/// \file
/// Internal: the buffers of a block collective as the library takes them, in place or not.

#include <ranges>
#include <type_traits>

#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/in_place.hpp"

namespace cairn::detail {

/// True for cairn::in_place_t (the in-place forms).
template <class T>
inline constexpr bool is_in_place = std::is_same_v<std::remove_cvref_t<T>, in_place_t>;

/// The element type of a block collective's buffers (the one buffer's, in place).
template <class In, class Out>
using block_elem_t = std::ranges::range_value_t<std::conditional_t<is_in_place<In>, Out, In>>;

/// The caller's buffers; in place (cairn::in_place as `in` or, for scatter, `out`) the one
/// buffer is both.
template <class In, class Out>
block_buffers buffers_of(In& in, Out& out) {
  if constexpr (is_in_place<In>) {
    return {std::ranges::data(out), std::ranges::size(out),        std::ranges::data(out),
            std::ranges::size(out), sizeof(block_elem_t<In, Out>), true};
  } else if constexpr (is_in_place<Out>) {
    return {std::ranges::data(in), std::ranges::size(in),         std::ranges::data(in),
            std::ranges::size(in), sizeof(block_elem_t<In, Out>), true};
  } else {
    return {std::ranges::data(in), std::ranges::size(in), std::ranges::data(out),
            std::ranges::size(out), sizeof(block_elem_t<In, Out>)};
  }
}

/// Whether input and output hold the same element type (always, in place).
template <class In, class Out>
inline constexpr bool same_elements = [] {
  if constexpr (is_in_place<In> || is_in_place<Out>)
    return true;
  else
    return std::is_same_v<std::ranges::range_value_t<In>, std::ranges::range_value_t<Out>>;
}();

}  // namespace cairn::detail
