#pragma once
/// \file
/// Internal: the functions async calls may name. A call travels as the index of its function
/// in this registry, never as a pointer: every process of a run holds the same registry, made
/// at static initialization from the function types the program instantiates (one entry per
/// function type and argument types), and sorted by the types' names on first use, so an
/// index means the same function in every process.

#include <cstddef>
#include <cstdint>
#include <span>

namespace cairn::msg::detail {

/// Calls the registered function on `target` with the arguments packed in `args`; `rank`
/// names the caller's rank in errors.
using call_thunk = void (*)(void* target, std::span<const std::byte> args, int rank);

/// The process's registry of async functions.
class call_registry {
 public:
  /// The registry (made on first use).
  static call_registry& get();
  /// Registers `name` (a unique type name) at static initialization; returns nothing useful
  /// (the index is known only once every function is registered: see index_of).
  int add(const char* name, call_thunk thunk);
  /// The index of `name`: sorts the registry on the first call (thread-safe).
  std::uint32_t index_of(const char* name);
  /// The function at `index`, or nullptr if there is none.
  [[nodiscard]] call_thunk thunk(std::uint32_t index) const noexcept;
  /// A hash of every registered name in order: equal on every rank of a run that runs one
  /// program.
  std::uint64_t fingerprint();
  /// Number of registered functions.
  [[nodiscard]] std::size_t size() const noexcept;

 private:
  call_registry();
  void freeze();
  struct state;
  state* s_ = nullptr;
};

}  // namespace cairn::msg::detail
