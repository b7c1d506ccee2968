#pragma once
/// \file
/// Wildcards, the null peer and the status of a completed point-to-point operation.

#include <cstddef>

namespace cairn {

/// Wildcard source for receives and probes (matches a message from any rank).
inline constexpr int any_source = -1;
/// Wildcard tag for receives and probes (matches any tag).
inline constexpr int any_tag = -1;
/// The null peer (MPI_PROC_NULL): a send to it completes at once and sends nothing; a receive or
/// probe from it completes at once with source proc_null, tag any_tag and 0 bytes, writing
/// nothing. Accepted wherever a point-to-point call takes a destination or a source, so that the
/// ends of a non-periodic chain need no special case.
inline constexpr int proc_null = -2;

/// What a completed receive (or a probe) saw: who sent it, with which tag, and how many bytes.
struct status {
  int source = -1;        ///< sender rank (for a send: the destination); proc_null from it
  int tag = -1;           ///< tag of the message
  std::size_t bytes = 0;  ///< payload size in bytes

  /// Number of whole elements of type T in the message.
  template <class T>
  [[nodiscard]] std::size_t count() const noexcept {
    return bytes / sizeof(T);
  }
};

}  // namespace cairn
