#pragma once
// flag_scope: a bool raised for the length of a scope and given back its old value when the
// scope ends, also by an exception (the re-entrancy guards of polls, drains and steps).

namespace cairn::detail {

/// Sets `flag` until the scope ends, then restores the value it had.
class flag_scope {
 public:
  explicit flag_scope(bool& flag) noexcept : flag_(flag), was_(flag) { flag_ = true; }
  ~flag_scope() { flag_ = was_; }
  flag_scope(const flag_scope&) = delete;
  flag_scope& operator=(const flag_scope&) = delete;

 private:
  bool& flag_;
  bool was_;
};

}  // namespace cairn::detail
