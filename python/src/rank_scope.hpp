#pragma once
// What a rank of cairn.launch (or an open cairn.MPISession) made that ends with it, as a C++
// rank function's locals end with it: a container or channel still open when the rank's
// function returns (or the session closes) is closed then, inside the run, so that calls it
// never sent fail the run (rather than being reported after launch returned, when a Python
// object outlived it). Touched only with the GIL held, on the thread that opened the scope.
#include <utility>
#include <vector>

namespace cairn_python {

class rank_scope {
 public:
  /// The innermost scope open on this thread (null outside any).
  static rank_scope* current() noexcept {
    const auto& open = opened();
    return open.empty() ? nullptr : open.back();
  }
  /// Makes this the current scope on this thread (until shut(); scopes nest).
  void open() { opened().push_back(this); }
  /// Takes this scope off this thread, wherever it is among the open ones.
  void shut() noexcept { std::erase(opened(), this); }
  /// Opens a scope for the life of the guard.
  class enter {
   public:
    explicit enter(rank_scope& s) : s_(s) { s_.open(); }
    ~enter() { s_.shut(); }
    enter(const enter&) = delete;
    enter& operator=(const enter&) = delete;

   private:
    rank_scope& s_;
  };

  rank_scope() = default;
  /// What is still registered (the rank's function raised) is left to Python, detached.
  ~rank_scope() {
    shut();
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
  static std::vector<rank_scope*>& opened() noexcept {
    thread_local std::vector<rank_scope*> scopes;
    return scopes;
  }
  struct entry {
    void* owner;
    void (*end)(void*);
    void (*detach)(void*);
  };
  std::vector<entry> entries_;
};

/// The base of what ends with the rank function (or session) that made it: registered with the
/// scope current at construction, whose end calls Derived::close(). Derived::close() calls
/// leave_scope() first, so that closing earlier takes it off the scope.
template <class Derived>
class ends_with_scope {
 public:
  ends_with_scope(const ends_with_scope&) = delete;
  ends_with_scope& operator=(const ends_with_scope&) = delete;

 protected:
  ends_with_scope() : scope_(rank_scope::current()) {
    if (scope_)
      scope_->add(
          this,
          [](void* self) { static_cast<Derived*>(static_cast<ends_with_scope*>(self))->close(); },
          [](void* self) { static_cast<ends_with_scope*>(self)->scope_ = nullptr; });
  }
  ~ends_with_scope() = default;
  /// Takes this off its scope (closed before the scope's end).
  void leave_scope() noexcept {
    if (scope_) std::exchange(scope_, nullptr)->forget(this);
  }

 private:
  rank_scope* scope_;  // null: made outside any scope, or the scope is gone
};

}  // namespace cairn_python
