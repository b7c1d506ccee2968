#pragma once
// What a rank of cairn.launch made that ends with the rank, as a C++ rank function's locals end
// with it: a container still open when the rank's function returns is closed then, inside the
// run, so that calls it never sent fail the run (rather than being reported after launch
// returned, when a Python object outlived it). Touched only with the GIL held.
#include <algorithm>
#include <utility>
#include <vector>

namespace cairn_python {

class rank_scope {
 public:
  /// The scope of the rank running on this thread (null outside a rank's function).
  static rank_scope*& current() noexcept {
    thread_local rank_scope* scope = nullptr;
    return scope;
  }
  /// Makes `this` the current scope for the life of the guard.
  class enter {
   public:
    explicit enter(rank_scope& s) noexcept : saved_(std::exchange(current(), &s)) {}
    ~enter() { current() = saved_; }
    enter(const enter&) = delete;
    enter& operator=(const enter&) = delete;

   private:
    rank_scope* saved_;
  };

  rank_scope() = default;
  /// What is still registered (the rank's function raised) is left to Python, detached.
  ~rank_scope() {
    for (const entry& e : entries_) e.detach(e.owner);
  }
  rank_scope(const rank_scope&) = delete;
  rank_scope& operator=(const rank_scope&) = delete;

  /// Ends `owner` with `end(owner)` when the rank's function returns, unless forgotten first;
  /// `detach(owner)` tells it the scope is gone (the function raised).
  void add(void* owner, void (*end)(void*), void (*detach)(void*)) {
    entries_.push_back({owner, end, detach});
  }
  /// `owner` ended by itself.
  void forget(void* owner) {
    std::erase_if(entries_, [owner](const entry& e) { return e.owner == owner; });
  }
  /// Ends every owner still registered, the last made first.
  void end_all() {
    while (!entries_.empty()) {
      const entry e = entries_.back();
      entries_.pop_back();
      e.end(e.owner);
    }
  }

 private:
  struct entry {
    void* owner;
    void (*end)(void*);
    void (*detach)(void*);
  };
  std::vector<entry> entries_;
};

}  // namespace cairn_python
