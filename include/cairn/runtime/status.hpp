#pragma once
/// \file
/// Wildcards and the status of a completed point-to-point operation.

#include <cstddef>

namespace cairn {

/// Wildcard source for receives and probes (matches a message from any rank).
inline constexpr int any_source = -1;
/// Wildcard tag for receives and probes (matches any tag).
inline constexpr int any_tag = -1;

/// What a completed receive (or a probe) saw: who sent it, with which tag, and how many bytes.
struct status {
  int source = -1;        ///< sender rank (for a send: the destination)
  int tag = -1;           ///< tag of the message
  std::size_t bytes = 0;  ///< payload size in bytes

  /// Number of whole elements of type T in the message.
  template <class T>
  [[nodiscard]] std::size_t count() const noexcept {
    return bytes / sizeof(T);
  }
};

}  // namespace cairn
