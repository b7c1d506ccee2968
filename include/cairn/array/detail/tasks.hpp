#pragma once
/// \file
/// Internal: preparing and starting a transfer between tasks.

#include <cstddef>
#include <memory>
#include <vector>

#include "cairn/array/detail/layout_desc.hpp"
#include "cairn/array/transfer.hpp"
#include "cairn/runtime/world.hpp"

namespace cairn {

namespace detail {

/// What a task transfer needs beyond the array's type: the caller's side of it.
struct task_transfer_args {
  const char* call = "";
  world w;
  std::vector<int> my_members;    ///< the caller's task
  std::vector<int> peer_members;  ///< the other task
  int my_task = 0;
  int peer_task = 0;
  bool sending = false;
  int tag = 0;
  layout_desc desc;  ///< the caller's array layout
  std::size_t elem_size = 0;
  void* data = nullptr;  ///< local part (const for senders)
  transfer_options opts;
};

/// Checks the arguments and prepares a transfer (nothing is sent until start).
std::unique_ptr<array_exec> prepare_task_transfer(task_transfer_args a);
/// Starts a prepared transfer and wraps it as a request.
request start_prepared(std::unique_ptr<array_exec> e);

}  // namespace detail

}  // namespace cairn
