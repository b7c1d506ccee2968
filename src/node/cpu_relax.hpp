#pragma once
// A hint between two polls of a word another core writes.

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace cairn::detail {

/// Tells the core that it spins (PAUSE, YIELD): an SMT sibling gets the core's resources, and
/// leaving the loop when the word changes costs no pipeline flush.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace cairn::detail
