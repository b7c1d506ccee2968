#pragma once
// Asks for cache lines in a writable state ahead of the stores that need them.

namespace cairn::detail {

/// Starts fetching the line holding `p` for writing; no effect on the program's meaning.
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  // PREFETCHW: GCC's __builtin_prefetch(p, 1) emits it only when the target enables PRFCHW,
  // else a read prefetch, which leaves the line shared. CPUs without it treat it as a no-op.
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

}  // namespace cairn::detail
