#pragma once
// The per-rank recycling of running collectives' states (each pool lives in its rank's
// context, rank_context::layer): a state keeps its vectors' and scratch memory's capacity, so
// a repeated collective allocates nothing.

#include <string>
#include <utility>
#include <vector>

#include "transport/request_state.hpp"

namespace cairn::detail {

class rank_context;

/// Free states of type T, deleted with the pool (the rank context's end). T has a member
/// `exec_pool<T>* home`, set by take(), so that a state goes back to its rank's pool from code
/// that does not know the rank (finish_pooled).
template <class T>
class exec_pool {
 public:
  explicit exec_pool(rank_context&) {}
  exec_pool(const exec_pool&) = delete;
  exec_pool& operator=(const exec_pool&) = delete;
  ~exec_pool() {
    for (T* e : free_) delete e;
  }
  /// A recycled state, or a new one.
  T* take() {
    T* e = free_.empty() ? new T : free_.back();
    if (!free_.empty()) free_.pop_back();
    e->home = this;
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
