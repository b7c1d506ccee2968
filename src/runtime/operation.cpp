// Operations under a request (cairn/runtime/operation.hpp): the runtime's own layer, which
// steps every running operation of the rank on each test, wait and progress.

#include "cairn/runtime/operation.hpp"

#include <algorithm>
#include <exception>
#include <vector>

#include "runtime/rank_context.hpp"

namespace cairn {
namespace detail {
namespace {

// One running operation, behind request_state::engine_ptr.
struct running_operation {
  std::unique_ptr<operation> op;
  std::exception_ptr error;
};

running_operation* entry_of(const request_state* s) {
  return static_cast<running_operation*>(s->engine_ptr);
}

// The rank's running operations (a layer state, made on first use).
struct operation_rank {
  explicit operation_rank(rank_context& c);

  rank_context& ctx;
  int layer = 0;
  std::vector<request_state*> running;
  std::vector<request_state*> scratch;
  bool stepping = false;  // advance() of an operation is on the stack: no re-entry

  void remove(request_state* s) {
    running.erase(std::remove(running.begin(), running.end(), s), running.end());
  }

  // Steps every running operation once (a snapshot: steps may start or end operations).
  bool step_all() {
    if (stepping) return true;
    stepping = true;
    scratch.assign(running.begin(), running.end());
    for (request_state* s : scratch) {
      running_operation& e = *entry_of(s);
      bool done = false;
      try {
        done = e.op->advance();
      } catch (...) {
        e.error = std::current_exception();
        done = true;
      }
      if (!done) continue;
      remove(s);
      s->done.store(1, std::memory_order_release);
      ctx.note_progress();
    }
    stepping = false;
    return !running.empty();
  }
};

constexpr layer_hooks operation_hooks{
    [](void* state) { return static_cast<operation_rank*>(state)->step_all(); },
    false,  // advance() is user code: the rank's own thread only
    nullptr,
    [](const void* state, std::ostream& os) {
      const auto& r = *static_cast<const operation_rank*>(state);
      if (!r.running.empty()) os << "  " << r.running.size() << " operation(s) running\n";
    },
    nullptr};

operation_rank::operation_rank(rank_context& c) : ctx(c) {
  layer = ctx.add_layer(this, operation_hooks);
}

std::exception_ptr finish_operation(rank_context& ctx, request_state* s) {
  std::unique_ptr<running_operation> e(entry_of(s));
  s->engine_ptr = nullptr;
  ctx.layer<operation_rank>().remove(s);
  return e->error;
}
void cancel_operation(rank_context& ctx, request_state* s) {
  ctx.layer<operation_rank>().remove(s);
  std::unique_ptr<running_operation> e(entry_of(s));
  s->engine_ptr = nullptr;
}
std::string describe_operation(const request_state* s) { return entry_of(s)->op->describe(); }
constexpr layer_operation_ops operation_ops{&finish_operation, &cancel_operation,
                                            &describe_operation};

}  // namespace
}  // namespace detail

request start_operation(world& w, const char* call, std::unique_ptr<operation> op) {
  return detail::start_operation(w.context(call), call, std::move(op));
}

request detail::start_operation(detail::rank_context& ctx, const char* call,
                                std::unique_ptr<operation> op) {
  ctx.check_alive(call);
  detail::rank_entry guard(ctx);  // helpers stay out while the pending list changes
  auto& ranks = ctx.layer<detail::operation_rank>();
  detail::request_state* s = ctx.acquire(detail::request_state::kind::layer, call, -1, 0,
                                         detail::msg_context::user, nullptr, 0);
  s->ops = &detail::operation_ops;
  s->engine_ptr = new detail::running_operation{std::move(op), nullptr};
  ranks.running.push_back(s);
  ctx.mark_busy(ranks.layer);
  // The first step, after those started before take theirs: operations that could take the
  // same message (receives sized by a probe) match in the order they were started.
  ranks.step_all();
  return request(&ctx, s);
}

}  // namespace cairn
