#pragma once
// Releasing and retaking the GIL around cairn calls, fast enough for ranks that ping-pong.
//
// On the threads engine every rank is a thread of one interpreter, and a message's latency
// includes the receiving rank retaking the GIL. CPython's own wait for the GIL sleeps on a
// condition variable: a wake-up costs the receiver about 15 us here, 25x an MPI message. So a
// thread that leaves cairn first spins (briefly) until no thread holds the GIL, as far as these
// bindings know, and only then takes it, which then succeeds at once.
#include <Python.h>

#include <atomic>

namespace cairn_python {

namespace gil {

/// Threads holding the GIL, as counted where these bindings release and take it: 1 while
/// Python code runs, 0 while every thread is in cairn. A hint only: a release elsewhere (numpy,
/// time.sleep) leaves it at 1, and then a spin just runs out.
inline std::atomic<int> holders{1};
/// Whether to spin at all: not when ranks outnumber the cores (the holder may need the core).
inline std::atomic<bool> spin{true};

/// Counts this thread in as a holder, first waiting (a bounded spin, some microseconds) until
/// the count says the GIL is free and this thread is the one to take it: of two ranks leaving
/// a collective together, one takes the GIL at once and the other keeps spinning, rather than
/// both asking for it and one going to sleep.
inline void claim() noexcept {
  if (spin.load(std::memory_order_relaxed))
    for (int i = 0; i < 4096; ++i) {
      int none = 0;
      if (holders.compare_exchange_weak(none, 1, std::memory_order_acquire)) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
  holders.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace gil

/// Holds the GIL for its scope on a thread that may have no Python state yet (a rank thread of
/// the threads engine), taken as `unlocked` retakes it.
class locked {
 public:
  locked() noexcept {
    gil::claim();
    state_ = PyGILState_Ensure();
  }
  ~locked() {
    gil::holders.fetch_sub(1, std::memory_order_release);
    PyGILState_Release(state_);
  }
  locked(const locked&) = delete;
  locked& operator=(const locked&) = delete;

 private:
  PyGILState_STATE state_;
};

/// Releases the GIL for its scope (cairn waits or copies meanwhile) and retakes it as above.
class unlocked {
 public:
  unlocked() noexcept : state_(PyEval_SaveThread()) {
    gil::holders.fetch_sub(1, std::memory_order_release);
  }
  ~unlocked() {
    gil::claim();
    PyEval_RestoreThread(state_);
  }
  unlocked(const unlocked&) = delete;
  unlocked& operator=(const unlocked&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace cairn_python
