#pragma once
/// \file
/// `cairn::flow::task`: the coroutine a flow module's `run` returns. Several module instances
/// share one rank's thread: each runs until it waits (`co_await ctx.dequeue(q)`,
/// `co_await ctx.yield()`), and the rank's scheduler resumes it once it can go on. A helper
/// coroutine of `run` that dequeues returns a task too and is awaited (`co_await helper(ctx)`).

#include <coroutine>
#include <exception>
#include <utility>

namespace cairn::flow {

/// A module's `run` (or a helper of it): a coroutine that starts suspended. Awaiting a task
/// runs it to its end and rethrows what it threw. Move-only; destroying it destroys the frame.
class [[nodiscard]] task {
 public:
  /// The coroutine's promise (internal to the coroutine machinery).
  struct promise_type {
    std::exception_ptr error;              ///< what the body threw
    std::coroutine_handle<> continuation;  ///< the task awaiting this one, if any
    /// The task object the coroutine returns.
    task get_return_object() noexcept {
      return task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    /// Starts suspended: the scheduler (or an awaiting task) resumes it.
    std::suspend_always initial_suspend() noexcept { return {}; }
    /// At its end, resumes the awaiting task (symmetric transfer) or returns to the scheduler.
    struct final_awaiter {
      /// Always suspends (the frame stays until the task object is destroyed).
      bool await_ready() noexcept { return false; }
      /// Transfers to the awaiting task, or back to the scheduler.
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        const std::coroutine_handle<> c = h.promise().continuation;
        return c ? c : std::noop_coroutine();
      }
      /// Nothing to resume with.
      void await_resume() noexcept {}
    };
    /// See final_awaiter.
    final_awaiter final_suspend() noexcept { return {}; }
    /// Nothing to return.
    void return_void() noexcept {}
    /// Keeps the exception for whoever awaits or schedules the task.
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };

  /// Takes over `o`'s coroutine.
  task(task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  /// Destroys this task's coroutine and takes over `o`'s.
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ~task() {
    if (h_) h_.destroy();
  }

  /// Awaiting: never ready before it ran.
  bool await_ready() const noexcept { return !h_ || h_.done(); }
  /// Runs the task now; the awaiting coroutine resumes when it ends.
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    h_.promise().continuation = awaiting;
    return h_;
  }
  /// Rethrows what the task threw.
  void await_resume() const {
    if (h_ && h_.promise().error) std::rethrow_exception(h_.promise().error);
  }

  /// The coroutine (for the scheduler).
  [[nodiscard]] std::coroutine_handle<promise_type> handle() const noexcept { return h_; }

 private:
  explicit task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  std::coroutine_handle<promise_type> h_;
};

}  // namespace cairn::flow
