#pragma once
// The per-thread recycling of running collectives' states (a rank is one thread): a state
// keeps its vectors' and scratch memory's capacity, so a repeated collective allocates nothing.

#include <string>
#include <utility>
#include <vector>

#include "transport/request_state.hpp"

namespace cairn::detail {

/// Free states of type T, deleted with the pool (the thread's end).
template <class T>
class exec_pool {
 public:
  exec_pool() = default;
  exec_pool(const exec_pool&) = delete;
  exec_pool& operator=(const exec_pool&) = delete;
  ~exec_pool() {
    for (T* e : free_) delete e;
  }
  /// A recycled state, or a new one.
  T* take() {
    if (free_.empty()) return new T;
    T* e = free_.back();
    free_.pop_back();
    return e;
  }
  /// Returns a state the caller has reset.
  void give(T* e) { free_.push_back(e); }

 private:
  std::vector<T*> free_;
};

/// Ends the state of type T behind a finished request (coll_finish and its board forms): moves
/// its error (if any) into `error`, hands the state to `recycle`; true if it succeeded.
template <class T, class Recycle>
bool finish_pooled(request_state* s, std::string& error, Recycle recycle) {
  T* e = static_cast<T*>(s->engine_ptr);
  const bool failed = !e->error.empty();
  if (failed) {
    error = std::move(e->error);
    e->error.clear();
  }
  recycle(e);
  s->engine_ptr = nullptr;
  return !failed;
}

}  // namespace cairn::detail
